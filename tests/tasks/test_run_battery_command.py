"""`manage.py run_battery CLUSTER --sync --json` against lab clusters, through real HTTP."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from dashboard.domain.models import Run
from tests.labtools import lab_clusters, profile

pytestmark = pytest.mark.django_db(transaction=True)


def run_battery(name: str, battery: str = "all") -> tuple[dict, int]:
    out = io.StringIO()
    try:
        call_command("run_battery", name, "--battery", battery, "--sync", "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return json.loads(out.getvalue()), code


def test_it_prints_one_contract_object_and_exits_0_when_the_run_finished():
    with lab_clusters(profile(name="json-calico", dataplane={"via_service": False})):
        data, code = run_battery("json-calico")
    assert code == 0 and data["status"] == "finished"
    assert set(data) >= {"run", "status", "results"}
    assert (
        data["results"]["pod-to-service"]["outcome"] == "failed"
    )  # the run finished; the test failed
    assert "never answered" in data["results"]["pod-to-service"]["reason"]
    assert "i/o timeout" in data["results"]["pod-to-service"]["reason"]  # netexec's own words
    assert all({"outcome", "reason"} <= set(v) for v in data["results"].values())
    assert Run.objects.get(pk=data["run"]).state == "finished"


def test_the_basic_battery_adds_tcp_and_udp_conformance_checks_reported_separately():
    with lab_clusters(profile(name="json-basic")):
        data, _ = run_battery("json-basic", "basic")
    assert set(data["results"]) == {
        "declare-sctp-ports",
        "hostport-kubenet",
        "service-iptables-rules",
        "netpol-sctp-blocks-tcp-udp",
    }
    assert {k: v["outcome"] for k, v in data["conformance"].items()} == {
        "conformance-tcp-pod-to-service": "passed",
        "conformance-udp-pod-to-service": "passed",
    }


def test_a_cluster_that_stays_unreachable_ends_the_run_in_error_with_the_cause():
    with lab_clusters(profile(name="json-gone")) as (_server, _):
        pass  # the lab is stopped: nothing listens there any more
    data, code = run_battery("json-gone", "basic")
    assert code == 1 and data["status"] == "error"
    assert "unreachable" in data["error"]
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}
