"""POST /api/v1/agent-runs/: strict validation, the vendor's plugin only, nothing stored on refusal."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import timedelta

import pytest
from django.utils.timezone import now

from dashboard.domain.catalog import ALL_KEYS, BASIC_KEYS
from dashboard.domain.models import Cluster, Run, TestResult
from tests.conftest import auth

URL = "/api/v1/agent-runs/"
KEY = "calico-prod-agent-key-0123456789abcdef"
OTHER_KEY = "cilium-agent-key-0123456789abcdef-xyz"
_SEQ = itertools.count(1)


def facts(n: int, nodes=("node-a", "node-b", "node-c")) -> dict:
    """The facts a battery records, for the n-th run of a cluster (resourceVersions grow)."""
    return {
        "nodes": {name: f"boot-{name}-1" for name in nodes},
        "resource_version": str(1000 * n),
        "objects": [
            {
                "kind": "Namespace",
                "name": f"sctp-{n}",
                "uid": str(uuid.uuid4()),
                "resource_version": str(1000 * n + 1),
            }
        ],
    }


def payload(**changes):
    # Each payload is a later run of its cluster: runs never overlap, facts move forward.
    n = next(_SEQ)
    finished = now() - timedelta(hours=30) + timedelta(minutes=5 * (n % 300))
    body = {
        "cluster": "calico-prod",
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.35.4",
        "proxier": "iptables",
        "battery": "basic",
        "started": (finished - timedelta(minutes=3)).isoformat(),
        "finished": finished.isoformat(),
        "fingerprint": {
            "emulated": False,
            "proxier_detected": "iptables",
            "cni_detected": "calico",
            "node_count": 3,
            "node_access": True,
            "node_names": ["node-a", "node-b", "node-c"],
            "facts": facts(n),
        },
        "results": {
            key: {
                "outcome": "passed",
                "reason": "ok",
                "evidence": "pod p running",
                "duration": 1.5,
                "reached": True,
            }
            for key in BASIC_KEYS
        },
        "errors": [],
        "agent_version": "1",
    }
    body.update(changes)
    return body


def post(api, token, body, key=KEY):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return api.post(
        URL, data=data, content_type="application/json", HTTP_X_AGENT_KEY=key, **auth(token)
    )


def _nothing_stored():
    assert (
        Cluster.objects.count() == 0
        and Run.objects.count() == 0
        and TestResult.objects.count() == 0
    )


def test_a_valid_run_registers_the_cluster_unapproved_and_stores_the_run(api, vendor_token):
    body = payload()
    answer = post(api, vendor_token, body)
    assert answer.status_code == 201, answer.content
    data = answer.json()
    assert (data["cluster"], data["cluster_approved"], data["emulated"], data["state"]) == (
        "calico-prod",
        False,
        False,
        "finished",
    )
    run = Run.objects.get(pk=data["run"])
    assert run.trigger == "agent" and run.battery == "basic" and run.cluster.approved is False
    assert run.proxier_detected == "iptables" and run.basic_ok is not None
    assert TestResult.objects.filter(run=run).count() == len(BASIC_KEYS)
    assert run.finished.isoformat()[:19] == body["finished"][:19]  # when the agent's run ended


def test_an_emulated_fingerprint_marks_the_run_and_the_cluster(api, vendor_token):
    body = payload(fingerprint={"emulated": True, "proxier_detected": None, "facts": facts(0)})
    assert post(api, vendor_token, body).status_code == 201
    run = Run.objects.get()
    assert run.emulated and run.cluster.emulated and run.proxier_detected == ""


def test_tests_the_run_never_reached_are_stored_not_run_and_the_run_is_an_error(api, vendor_token):
    results = payload()["results"]
    results["hostport-kubenet"] = {
        "outcome": "error",
        "reason": "not run: missing RBAC permission: create pods (403 Forbidden)",
        "reached": False,
    }
    assert post(api, vendor_token, payload(results=results)).status_code == 201
    run = Run.objects.get()
    assert run.state == "error" and "create pods" in run.error
    assert TestResult.objects.get(run=run, test_key="hostport-kubenet").outcome == "not_run"


@pytest.mark.parametrize(
    "change,status,words",
    [
        ({"surprise": 1}, 400, "unknown field 'surprise'"),
        ({"cluster": "Not A Label"}, 400, "DNS label"),
        ({"battery": "everything"}, 400, "battery must be"),
        ({"proxier": "userspace"}, 400, "proxier must be"),
        ({"fingerprint": {"emulated": "yes"}}, 400, "fingerprint.emulated"),
        ({"fingerprint": {"proxier_detected": "bpf"}}, 400, "proxier_detected"),
        ({"fingerprint": {"blob": "x" * 70_000}}, 400, "fingerprint is larger"),
        ({"results": {}}, 400, "has no outcome"),
        ({"started": "yesterday"}, 400, "ISO 8601"),
        ({"finished": (now() + timedelta(hours=1)).isoformat()}, 400, "in the future"),
        (
            {
                "finished": (now() - timedelta(days=3)).isoformat(),
                "started": (now() - timedelta(days=3, minutes=5)).isoformat(),
            },
            400,
            "more than 2 days ago",
        ),
        ({"plugin": "nonesuch"}, 400, "unknown plugin"),
        ({"plugin": "cilium"}, 403, "plugin 'cilium'"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error_and_stores_nothing(
    api, vendor_token, change, status, words
):
    answer = post(api, vendor_token, payload(**change))
    assert answer.status_code == status, answer.content
    assert words in answer.json()["error"]
    _nothing_stored()


@pytest.mark.parametrize(
    "key,field,value,words",
    [
        ("pod-to-pod", None, None, "'pod-to-pod' is not a test of the basic battery"),
        ("declare-sctp-ports", "outcome", "green", "outcome must be one of"),
        ("declare-sctp-ports", "reason", "", "reason must not be empty"),
        ("declare-sctp-ports", "evidence", "x" * 100_001, "evidence is longer"),
        ("declare-sctp-ports", "duration", -1, "duration must be"),
        ("declare-sctp-ports", "colour", "red", "unknown field 'colour'"),
    ],
)
def test_each_result_is_checked_against_the_catalog_and_the_vocabulary(
    api, vendor_token, key, field, value, words
):
    results = payload()["results"]
    if field is None:
        results[key] = {"outcome": "passed", "reason": "ok"}
    else:
        results[key][field] = value
    answer = post(api, vendor_token, payload(results=results))
    assert answer.status_code == 400 and words in answer.json()["error"], answer.content
    _nothing_stored()


def test_the_all_battery_accepts_every_catalog_key(api, vendor_token):
    results = {k: {"outcome": "skipped", "reason": "no load balancer"} for k in ALL_KEYS}
    assert post(api, vendor_token, payload(battery="all", results=results)).status_code == 201


def test_tokens_and_bodies(api, vendor_token, maintainer_token, settings):
    assert api.post(URL, data="{}", content_type="application/json").status_code == 401
    assert post(api, maintainer_token, payload()).status_code == 403  # a vendor's claim only
    assert post(api, vendor_token, b"not json").status_code == 400
    assert post(api, vendor_token, b"[1]").status_code == 400
    settings.AGENT_RUN_MAX_BYTES = 300
    assert post(api, vendor_token, payload()).status_code == 413
    _nothing_stored()


def test_another_vendors_cluster_or_a_disabled_one_is_refused(
    api, vendor_token, other_vendor_token
):
    assert post(api, vendor_token, payload()).status_code == 201
    results = {k: {"outcome": "passed", "reason": "ok"} for k in BASIC_KEYS}
    answer = post(api, other_vendor_token, payload(plugin="cilium", results=results), key=OTHER_KEY)
    assert answer.status_code == 403 and "someone else" in answer.json()["error"]
    Cluster.objects.update(enabled=False)
    answer = post(api, vendor_token, payload())
    assert answer.status_code == 409 and "disabled" in answer.json()["error"]
    assert Run.objects.count() == 1


def _assess(run, criterion):
    from dashboard.domain.policy import Policy, plugin_facts, run_item

    rows = list(TestResult.objects.filter(run=run).values_list("test_key", "outcome", "reason"))
    item = run_item(
        run, {k: o for k, o, _ in rows}, {k: r for k, _, r in rows}, plugin_facts(run.plugin)
    )
    return Policy(now()).assess(item, criterion)


def test_an_agent_run_counts_only_once_a_maintainer_approves_its_cluster_and_verifies_it(
    api, vendor_token, maintainer
):
    from dashboard.domain.trust import approve_cluster, verify_agent_run

    results = {k: {"outcome": "passed", "reason": "ok"} for k in ALL_KEYS}
    results["pod-to-loadbalancer"] = {"outcome": "skipped", "reason": "no load balancer"}
    assert post(api, vendor_token, payload(battery="all", results=results)).status_code == 201
    run = Run.objects.select_related("cluster", "plugin").get()
    pending = _assess(run, "two-out-of-tree-plugins")
    assert not pending.counts and "not approved by a maintainer" in pending.why
    approve_cluster(run.cluster, maintainer)
    run = Run.objects.select_related("cluster", "plugin").get()
    unverified = _assess(run, "two-out-of-tree-plugins")
    assert not unverified.counts and "self-reported" in unverified.why
    verify_agent_run(run, maintainer)
    run = Run.objects.select_related("cluster", "plugin").get()
    assert _assess(run, "two-out-of-tree-plugins").counts


def test_an_emulated_agent_run_never_counts_even_approved(api, vendor_token, maintainer):
    from dashboard.domain.trust import approve_cluster

    body = payload(fingerprint={"emulated": True, "facts": facts(0)})
    assert post(api, vendor_token, body).status_code == 201
    run = Run.objects.select_related("cluster", "plugin").get()
    approve_cluster(run.cluster, maintainer)
    run = Run.objects.select_related("cluster", "plugin").get()
    verdict = _assess(run, "tests-written")
    assert not verdict.counts and "emulated" in verdict.why


def test_a_basic_only_cluster_refuses_a_connectivity_run(api, vendor_token, maintainer):
    from dashboard.domain.trust import set_basic_only

    assert post(api, vendor_token, payload()).status_code == 201
    set_basic_only(Cluster.objects.get(), True, maintainer)
    results = {k: {"outcome": "passed", "reason": "ok"} for k in ALL_KEYS}
    answer = post(api, vendor_token, payload(battery="all", results=results))
    assert answer.status_code == 409 and "basic" in answer.json()["error"]
    assert Run.objects.count() == 1


def test_the_openapi_schema_describes_the_endpoint(api):
    paths = api.get("/api/v1/schema/").json()["paths"]
    post = paths["/api/v1/agent-runs/"]["post"]
    assert "201" in post["responses"] and "400" in post["responses"] and "413" in post["responses"]
    assert "application/json" in post["requestBody"]["content"]


def test_the_extra_checks_accepted_are_the_batterys_own():
    from dashboard.domain.agent_runs import EXTRAS_OF
    from kernel.battery.registry import EXTRAS_OF as BATTERY_EXTRAS

    assert EXTRAS_OF == BATTERY_EXTRAS
