"""The in-cluster agent against the lab (service host/port, token and CA files emulated),
posting to a live dashboard: the run is stored as pending agent evidence of an unapproved,
vendor-owned cluster."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dashboard.domain.models import AuditEvent, Cluster, Run, TestResult
from kernel import agent
from lab.incluster import InClusterEndpoint
from lab.server import LabServer
from tests.battery_specs import FAST, profile
from tests.rbac_roles import ROLE_FILE

LAB_TIMEOUTS = json.dumps(dataclasses.asdict(FAST))
KEY = "k" * 16 + "agent-key-of-calico-prod"


def _argv(url, endpoint, battery="basic", cluster="calico-prod", plugin="calico"):
    return [
        "--dashboard",
        url,
        "--cluster",
        cluster,
        "--plugin",
        plugin,
        "--plugin-version",
        "3.28.0",
        "--proxier",
        "iptables",
        "--battery",
        battery,
        "--load-balancer",
        "true",
        "--timeouts",
        LAB_TIMEOUTS,
        "--service-account-dir",
        str(endpoint.sa_dir),
    ]


@pytest.fixture
def in_cluster():
    """A lab cluster under the shipped role, reached as from a pod inside it."""
    server = LabServer([profile(rbac=str(ROLE_FILE))]).start()
    with InClusterEndpoint(server, "lab") as endpoint:
        yield endpoint
    server.stop()


@pytest.mark.django_db(transaction=True)
def test_the_agent_posts_an_all_run_that_shows_as_pending_agent_evidence(
    live_server, vendor_token, in_cluster, capsys
):
    environ = {**in_cluster.environ(), "SCTP_DASHBOARD_TOKEN": vendor_token, "SCTP_AGENT_KEY": KEY}
    code = agent.main(_argv(live_server.url, in_cluster, battery="all"), environ=environ)
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads(out.out.strip().splitlines()[-1])
    run = Run.objects.select_related("cluster__owner").get(pk=summary["run"])
    assert run.trigger == Run.Trigger.AGENT and run.state == Run.State.FINISHED
    cluster = run.cluster
    assert (cluster.name, cluster.owner.name, cluster.approved) == (
        "calico-prod",
        "Calico vendor",
        False,
    )
    assert cluster.kubeconfig == ""  # the dashboard holds no credential for it
    results = dict(TestResult.objects.filter(run=run).values_list("test_key", "outcome"))
    assert results == summary["results"]
    assert results["pod-to-pod"] == "passed" and results["declare-sctp-ports"] == "passed"
    assert TestResult.objects.get(run=run, test_key="pod-to-pod").evidence  # evidence text kept
    # the default lab profile: a control plane and two workers (tests/labtools.py)
    assert run.fingerprint["node_count"] == 3 and run.fingerprint["proxier_detected"] == "iptables"
    # the lab's GET /version carries "emulated": true: the run and the cluster are marked
    assert run.fingerprint["emulated"] is True and run.emulated and cluster.emulated
    # the facts the battery records, checked by the dashboard across the cluster's runs
    facts = run.fingerprint["facts"]
    assert set(facts["nodes"]) == set(run.fingerprint["node_names"]) and all(
        facts["nodes"].values()
    )
    assert facts["resource_version"] and facts["objects"]
    assert all(o["uid"] and o["resource_version"] for o in facts["objects"])
    assert cluster.mode == "agent" and cluster.agent_key_digest
    assert run.qualifying  # the outcomes qualify; the policy does not count it (unapproved)
    from django.utils.timezone import now

    from dashboard.domain.policy import Policy, plugin_facts, run_item

    rows = list(TestResult.objects.filter(run=run).values_list("test_key", "outcome", "reason"))
    item = run_item(
        run, {k: o for k, o, _ in rows}, {k: r for k, _, r in rows}, plugin_facts(run.plugin)
    )
    verdict = Policy(now()).assess(item, "two-out-of-tree-plugins")
    assert not verdict.counts and "not approved by a maintainer" in verdict.why
    import urllib.request

    with urllib.request.urlopen(live_server.url + f"/runs/{run.pk}/", timeout=10) as answer:
        page = answer.read().decode()
    assert 'data-trust="self-reported"' in page
    assert "approves cluster calico-prod and verifies this run" in page
    assert "posted by the in-cluster agent" in page
    # the readiness API lists it as evidence that does not count, and says why
    with urllib.request.urlopen(live_server.url + "/api/v1/readiness/", timeout=30) as answer:
        readiness = json.loads(answer.read())
    listed = [
        e
        for t in readiness["transitions"]
        for c in t["criteria"]
        for e in c["evidence"]
        if e["kind"] == "run" and e["id"] == run.pk
    ]
    assert listed, "the agent's run is not shown as evidence"
    assert all(
        e["counts"] is False and e["emulated"] and e["trust"] == "self-reported" for e in listed
    )
    assert all(
        "not approved by a maintainer" in e["why"] and "emulated" in e["why"] for e in listed
    )
    assert AuditEvent.objects.filter(action="run.agent").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_second_run_lands_on_the_same_cluster_and_another_vendor_is_refused(
    live_server, vendor_token, other_vendor_token, in_cluster, capsys
):
    environ = {**in_cluster.environ(), "SCTP_DASHBOARD_TOKEN": vendor_token, "SCTP_AGENT_KEY": KEY}
    assert agent.main(_argv(live_server.url, in_cluster), environ=environ) == 0
    assert agent.main(_argv(live_server.url, in_cluster), environ=environ) == 0
    assert Cluster.objects.count() == 1 and Run.objects.filter(trigger="agent").count() == 2
    capsys.readouterr()
    # the Cilium vendor may not post for calico, nor onto Calico's cluster
    other = {
        **in_cluster.environ(),
        "SCTP_DASHBOARD_TOKEN": other_vendor_token,
        "SCTP_AGENT_KEY": KEY,
    }
    assert agent.main(_argv(live_server.url, in_cluster), environ=other) == 1
    assert "HTTP 403" in capsys.readouterr().err
    assert agent.main(_argv(live_server.url, in_cluster, plugin="cilium"), environ=other) == 1
    assert "registered by someone else" in capsys.readouterr().err
    assert Run.objects.count() == 2


def test_outside_a_cluster_or_without_a_token_it_says_what_is_missing(tmp_path, capsys):
    argv = [
        "--dashboard",
        "http://127.0.0.1:9",
        "--cluster",
        "c",
        "--plugin",
        "calico",
        "--service-account-dir",
        str(tmp_path),
    ]
    assert agent.main(argv, environ={"SCTP_DASHBOARD_TOKEN": "t"}) == 2
    assert "no agent key" in capsys.readouterr().err
    assert agent.main(argv, environ={"SCTP_DASHBOARD_TOKEN": "t", "SCTP_AGENT_KEY": KEY}) == 2
    assert "not inside a cluster" in capsys.readouterr().err
    assert agent.main(argv, environ={}) == 2
    assert "SCTP_DASHBOARD_TOKEN" in capsys.readouterr().err
    token = tmp_path / "vendor-token"
    token.write_text("secret\n")
    assert agent.main([*argv, "--token-file", str(token), "--battery", "nope"], environ={}) == 2
    assert "--battery" in capsys.readouterr().err


def test_the_payload_stays_within_what_the_dashboard_accepts():
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from dashboard.domain.agent_runs import MAX_EVIDENCE, MAX_REASON
    from kernel.battery.base import TestOutcome

    report = SimpleNamespace(
        results={"declare-sctp-ports": TestOutcome("error", "r" * 5000, evidence="e" * 300_000)},
        fingerprint={"emulated": False},
        errors=["x" * 9000] * 80,
    )
    args = agent.parser().parse_args(["--cluster", "c", "--plugin", "calico", "--battery", "basic"])
    now = datetime.now(UTC)
    body = agent.payload(args, report, now, now)
    result = body["results"]["declare-sctp-ports"]
    assert len(result["reason"]) == MAX_REASON and len(result["evidence"]) == MAX_EVIDENCE
    assert len(body["errors"]) == 50 and all(len(e) <= MAX_REASON for e in body["errors"])


@pytest.mark.django_db
def test_the_dashboard_refuses_to_run_a_cluster_it_only_knows_from_its_agent():
    from dashboard.domain import heads
    from dashboard.domain.models import Cluster, Run
    from dashboard.domain.runs import RunRequestError, request_run
    from tests import factories

    cluster = factories.cluster("agent-only")  # no kubeconfig
    factories.run(cluster)
    Run.objects.filter(cluster=cluster).update(trigger=Run.Trigger.AGENT)
    heads.refresh(clusters=[cluster.pk])
    Cluster.objects.filter(pk=cluster.pk).update(mode=Cluster.Mode.AGENT)
    with pytest.raises(RunRequestError) as refused:
        request_run(Cluster.objects.get(pk=cluster.pk), "basic")
    assert refused.value.status == 409 and "in-cluster agent" in refused.value.message
