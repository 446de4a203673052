"""/healthz, /readyz and /metrics as a kubelet and Prometheus reach them; JSON logs."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest
from django.db import OperationalError, connections

from dashboard.logjson import JsonFormatter
from tests import factories
from tests.conftest import auth
from tests.domain.ingest.builders import junit_v2

SCTP_BASIC = (
    "[sig-network] Services should allow creating a basic SCTP service with pod and "
    "endpoints [LinuxOnly] [Serial]"
)


def sample(text: str, name: str, **labels: str) -> float:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = re.escape(f"{name}{{{inner}}}" if inner else name) + r" (\S+)$"
    found = re.search(pattern, text, re.M)
    assert found, f"{name} {labels} not in /metrics"
    return float(found.group(1))


@pytest.fixture
def production(settings):
    """What a pod sees: a strict ALLOWED_HOSTS and the HTTPS redirect."""
    settings.ALLOWED_HOSTS = ["sctp.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    settings.CELERY_BROKER_URL = "filesystem://"


def test_probes_answer_on_the_pod_ip_over_plain_http(api, production, db):
    assert api.get("/healthz", HTTP_HOST="10.244.1.7:8000").status_code == 200
    answer = api.get("/readyz", HTTP_HOST="10.244.1.7:8000")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"ready": True, "database": "ok", "broker": "ok"}
    assert api.get("/", HTTP_HOST="10.244.1.7:8000").status_code == 400  # pages still checked


def test_readyz_is_503_when_the_broker_is_down_and_does_not_show_its_url(api, settings, db):
    settings.CELERY_BROKER_URL = "redis://:s3cret@127.0.0.1:1/0"
    answer = api.get("/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["ready"] is False and body["database"] == "ok"
    assert (
        body["broker"].startswith("broker unreachable") and "s3cret" not in answer.content.decode()
    )


def test_readyz_is_503_when_the_database_fails(api, production, db, monkeypatch):
    def broken(*args, **kwargs):
        raise OperationalError("could not connect to server")

    with monkeypatch.context() as patched:  # undone before the test database is torn down
        patched.setattr(connections["default"], "cursor", broken)
        answer = api.get("/readyz")
    assert answer.status_code == 503 and "OperationalError" in answer.json()["database"]


def test_metrics_count_runs_outcomes_queue_wait_ingest_and_criteria(api, vendor_token, db):
    cluster = factories.cluster("calico-a")
    factories.run(cluster)  # finished, waited 60 s, every test passed
    factories.run(cluster, state="error", outcomes={"pod-to-pod": "error"})
    good = junit_v2([(SCTP_BASIC, "passed")])
    upload = api.post(
        "/api/v1/submissions/",
        {
            "file": io.BytesIO(good),
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": "1.31.2",
            "proxier": "iptables",
        },
        **auth(vendor_token),
    )
    assert upload.status_code == 201, upload.content
    refused = api.post(
        "/api/v1/submissions/",
        {
            "file": io.BytesIO(b"<nope/>"),
            "plugin": "calico",
            "plugin_version": "3.28.0",
            "kubernetes_version": "1.31.2",
            "proxier": "iptables",
        },
        **auth(vendor_token),
    )
    assert refused.status_code in (400, 422)

    answer = api.get("/metrics", HTTP_HOST="10.0.0.9")
    assert answer.status_code == 200 and answer["Content-Type"].startswith(
        "text/plain; version=0.0.4"
    )
    text = answer.content.decode()
    assert all(line.startswith(("# ", "sctp_dashboard_")) for line in text.strip().splitlines())
    assert sample(text, "sctp_dashboard_runs", state="finished") == 1
    assert sample(text, "sctp_dashboard_runs", state="error") == 1
    assert sample(text, "sctp_dashboard_runs", state="queued") == 0
    assert (
        sample(text, "sctp_dashboard_test_results_total", test="pod-to-pod", outcome="passed") == 1
    )
    assert (
        sample(text, "sctp_dashboard_test_results_total", test="pod-to-pod", outcome="error") == 1
    )
    assert sample(text, "sctp_dashboard_run_queue_wait_seconds_count") == 2
    assert sample(text, "sctp_dashboard_run_queue_wait_seconds_sum") == 120
    assert sample(text, "sctp_dashboard_run_queue_wait_seconds_bucket", le="30") == 0
    assert sample(text, "sctp_dashboard_run_queue_wait_seconds_bucket", le="60") == 2
    assert sample(text, "sctp_dashboard_submissions", status="pending_review") == 1
    assert sample(text, "sctp_dashboard_submission_bytes_sum") == len(good)
    assert sample(text, "sctp_dashboard_ingest_seconds_count", result="accepted") == 1
    assert sample(text, "sctp_dashboard_ingest_seconds_count", result="refused") == 1
    assert sample(text, "sctp_dashboard_ingest_seconds_bucket", result="accepted", le="+Inf") == 1
    statuses = {
        c: sum(
            sample(text, "sctp_dashboard_criterion_status", criterion=c, status=s)
            for s in ("met", "unmet", "at_risk", "stale")
        )
        for c in (
            "tests-written",
            "periodic-basic-passing",
            "two-out-of-tree-plugins",
            "iptables-and-ipvs",
        )
    }
    assert statuses == dict.fromkeys(statuses, 1)  # exactly one status per criterion


def test_json_logs_carry_one_object_a_line_with_extra_fields():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("tests.jsonlog")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("run %s failed", 7, extra={"run_id": 7, "cluster": "calico-a"})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("crashed")
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "run 7 failed" and first["level"] == "WARNING"
    assert (
        first["run_id"] == 7 and first["cluster"] == "calico-a" and first["time"].endswith("+00:00")
    )
    assert "ValueError: boom" in second["exc_info"]


def test_log_format_json_configures_the_console_handler(monkeypatch):
    import subprocess
    import sys

    code = "import django, logging; django.setup(); logging.getLogger('probe').warning('hello')"
    env = {
        "LOG_FORMAT": "json",
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    line = done.stderr.strip().splitlines()[-1]
    assert json.loads(line)["message"] == "hello", done.stderr
