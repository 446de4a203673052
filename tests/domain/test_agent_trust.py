"""Self-reported agent runs are a trust class of their own (issue 22, finding 1).

Two vendors posting all-passed agent runs with two proxiers, even on approved clusters, must
not make the readiness verdict or the badge say so; a maintainer's verification of each run
does. A cluster is tested by the workers or reports through its agent, never both; the agent
is known by its per-cluster key; its runs carry facts checked across runs; replays are refused.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils.timezone import now

from dashboard.domain.catalog import ALL_KEYS
from dashboard.domain.models import ApiToken, AuditEvent, Cluster, Run, TestResult
from dashboard.domain.readiness import evaluate
from dashboard.domain.trust import approve_cluster
from tests import factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db

URL = "/api/v1/agent-runs/"
CALICO_KEY = "calico-agent-key-" + "a" * 32
CILIUM_KEY = "cilium-agent-key-" + "b" * 32


def all_passed(
    cluster: str,
    plugin: str,
    proxier: str,
    *,
    n: int = 1,
    nodes: dict[str, str] | None = None,
    rv: int | None = None,
    uids: list[str] | None = None,
    minutes_ago: int | None = None,
) -> dict:
    """An all-passed `all` run, the n-th of its cluster (later runs: later times, higher rvs)."""
    finished = now() - timedelta(minutes=minutes_ago if minutes_ago is not None else 300 - 10 * n)
    results = {k: {"outcome": "passed", "reason": "ok", "duration": 2.0} for k in ALL_KEYS}
    results["pod-to-loadbalancer"] = {"outcome": "skipped", "reason": "no SCTP load balancer"}
    nodes = nodes or {"node-a": "boot-a-1", "node-b": "boot-b-1"}
    base = rv if rv is not None else 1000 * n
    return {
        "cluster": cluster,
        "plugin": plugin,
        "plugin_version": "1.0.0",
        "kubernetes_version": "1.34.1",
        "proxier": proxier,
        "battery": "all",
        "started": (finished - timedelta(minutes=4)).isoformat(),
        "finished": finished.isoformat(),
        "fingerprint": {
            "emulated": False,
            "proxier_detected": proxier,
            "cni_detected": plugin,
            "node_access": True,
            "sctp_module_before": {"node-a": False},
            "node_names": sorted(nodes),
            "facts": {
                "nodes": nodes,
                "resource_version": str(base),
                "objects": [
                    {"kind": "Pod", "name": f"p{i}", "uid": uid, "resource_version": str(base + i)}
                    for i, uid in enumerate(uids or [str(uuid.uuid4()), str(uuid.uuid4())], 1)
                ],
            },
        },
        "results": results,
        "errors": [],
        "agent_version": "1",
    }


def post(client, token: str, body: dict | str, key: str = CALICO_KEY):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(
        URL, data=data, content_type="application/json", HTTP_X_AGENT_KEY=key, **auth(token)
    )


def criteria() -> dict[str, dict]:
    out = {}
    for transition in evaluate()["transitions"]:
        for c in transition["criteria"]:
            out[c["key"]] = c
    return out


@pytest.fixture
def two_vendors(db):
    _, calico = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Calico vendor", ("calico",))
    )
    _, cilium = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Cilium vendor", ("cilium",))
    )
    return calico, cilium


def test_two_vendors_all_passed_agent_runs_meet_no_criterion_and_no_badge_until_verified(
    client, two_vendors, maintainer, maintainer_token
):
    calico, cilium = two_vendors
    assert post(client, calico, all_passed("calico-prod", "calico", "iptables")).status_code == 201
    answer = post(client, cilium, all_passed("cilium-prod", "cilium", "ipvs"), key=CILIUM_KEY)
    assert answer.status_code == 201, answer.content
    # Even with both clusters approved (the agent's key approved with them) ...
    for cluster in Cluster.objects.all():
        approve_cluster(cluster, maintainer)
    verdicts = criteria()
    for key in ("two-out-of-tree-plugins", "iptables-and-ipvs", "tests-written"):
        assert verdicts[key]["status"] != "met", (key, verdicts[key]["detail"])
    evidence = [e for e in verdicts["two-out-of-tree-plugins"]["evidence"] if e["kind"] == "run"]
    assert evidence and all(
        e["trust"] == "self-reported" and not e["counts"] and "self-reported" in e["why"]
        for e in evidence
    )
    assert all("self-reported" in e["label"] for e in evidence)
    badge = client.get("/badge/calico.svg").content.decode()
    assert "passing" not in badge and "self-reported, unverified" in badge
    readiness = client.get("/api/v1/readiness/").json()
    assert "self-reported" in json.dumps(readiness)

    # A maintainer verifies each run (audited): now they count, shown as self-reported.
    for run in Run.objects.all():
        answer = client.post(f"/api/v1/runs/{run.pk}/verify", **auth(maintainer_token))
        assert answer.status_code == 200, answer.content
    assert AuditEvent.objects.filter(action="run.verify").count() == 2
    verdicts = criteria()
    assert verdicts["two-out-of-tree-plugins"]["status"] == "met"
    assert verdicts["iptables-and-ipvs"]["status"] == "met"
    badge = client.get("/badge/calico.svg").content.decode()
    assert "connectivity passing (self-reported)" in badge


def test_a_vendor_cannot_verify_its_own_agent_run(client, two_vendors):
    calico, _ = two_vendors
    run_id = post(client, calico, all_passed("calico-prod", "calico", "iptables")).json()["run"]
    assert client.post(f"/api/v1/runs/{run_id}/verify", **auth(calico)).status_code == 403
    assert Run.objects.get(pk=run_id).agent_verified_at is None


def test_a_worker_tested_cluster_takes_no_agent_runs(client, two_vendors, maintainer):
    calico, _ = two_vendors
    cluster = factories.cluster("calico-prod", owner=factories.vendor("Calico vendor"))
    cluster.kubeconfig = "apiVersion: v1"
    cluster.save()
    answer = post(client, calico, all_passed("calico-prod", "calico", "iptables"))
    assert answer.status_code == 409, answer.content
    assert "tested by the dashboard's workers" in answer.json()["error"]
    assert not Run.objects.exists()


def test_the_mode_is_shown_and_only_a_maintainer_changes_it_audited(
    client, two_vendors, maintainer, maintainer_token
):
    calico, _ = two_vendors
    assert post(client, calico, all_passed("calico-prod", "calico", "iptables")).status_code == 201
    cluster = Cluster.objects.get()
    assert cluster.mode == "agent"
    listed = {c["name"]: c for c in client.get("/api/v1/clusters/").json()}
    assert listed["calico-prod"]["mode"] == "agent"
    page = client.get("/clusters/calico-prod/").content.decode()
    assert "self-reported by its in-cluster agent" in page
    # the vendor cannot turn it into a worker-tested cluster by registering a kubeconfig
    answer = client.post(
        "/api/v1/clusters/",
        {"name": "calico-prod", "plugin": "calico", "proxier": "iptables", "kubeconfig": "x"},
        **auth(calico),
    )
    assert answer.status_code == 409
    # nor by editing it with a kubeconfig
    from dashboard.domain.clusters import ClusterError, check_edit

    form = {"plugin": "calico", "proxier": "iptables", "plugin_version": "1.0.0"}
    with pytest.raises(ClusterError, match="only a maintainer"):
        check_edit(
            cluster,
            data=form,
            kubeconfig="apiVersion: v1",
            allowed_plugin_ids={cluster.plugin_id},
            check_reachable=False,
        )
    # nor through the mode call
    body = {"mode": "worker", "reason": "r"}
    assert (
        client.post(
            "/api/v1/clusters/calico-prod/mode",
            data=body,
            content_type="application/json",
            **auth(calico),
        ).status_code
        == 403
    )
    # a maintainer can, with a reason; without a kubeconfig the workers cannot test it
    answer = client.post(
        "/api/v1/clusters/calico-prod/mode",
        data=body,
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert answer.status_code == 409 and "no kubeconfig" in answer.json()["error"]
    approve_cluster(cluster, maintainer)
    Cluster.objects.filter(pk=cluster.pk).update(kubeconfig="apiVersion: v1")
    answer = client.post(
        "/api/v1/clusters/calico-prod/mode",
        data=body,
        content_type="application/json",
        **auth(maintainer_token),
    )
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"name": "calico-prod", "mode": "worker", "approved": False}
    assert AuditEvent.objects.filter(action="cluster.mode", target="cluster calico-prod").exists()
    answer = post(client, calico, all_passed("calico-prod", "calico", "iptables", n=2))
    assert answer.status_code == 409


def test_the_agent_is_known_by_its_key_of_which_only_a_hash_is_kept(
    client, two_vendors, maintainer
):
    calico, _ = two_vendors
    assert (
        post(client, calico, all_passed("calico-prod", "calico", "iptables"), key="").status_code
        == 401
    )
    assert post(client, calico, all_passed("calico-prod", "calico", "iptables")).status_code == 201
    cluster = Cluster.objects.get()
    assert cluster.agent_key_digest == hashlib.sha256(CALICO_KEY.encode()).hexdigest()
    assert CALICO_KEY not in json.dumps(list(AuditEvent.objects.values("detail")))
    # the vendor's token with another key is not this cluster's agent
    other_key = "someone-elses-key-" + "c" * 32
    answer = post(
        client, calico, all_passed("calico-prod", "calico", "iptables", n=2), key=other_key
    )
    assert answer.status_code == 403 and "agent key" in answer.json()["error"]
    # a maintainer forgets the key (audited): the next agent registers its own, unapproved
    approve_cluster(cluster, maintainer)
    staff = Client()
    staff.force_login(maintainer)
    assert (
        staff.post("/clusters/calico-prod/agent-key/reset/", {"reason": "lost"}).status_code == 302
    )
    answer = post(
        client, calico, all_passed("calico-prod", "calico", "iptables", n=3), key=other_key
    )
    assert answer.status_code == 201, answer.content
    cluster.refresh_from_db()
    assert not cluster.approved
    assert cluster.agent_key_digest == hashlib.sha256(other_key.encode()).hexdigest()
    assert AuditEvent.objects.filter(action="cluster.agent_key_reset").count() == 1


def test_a_replayed_or_identical_payload_is_refused(client, two_vendors):
    calico, _ = two_vendors
    body = all_passed("calico-prod", "calico", "iptables")
    assert post(client, calico, body).status_code == 201
    # byte for byte, and the same content written differently
    assert post(client, calico, body).status_code == 409
    answer = post(client, calico, json.dumps(body, indent=2, sort_keys=True))
    assert answer.status_code == 409 and "already posted" in answer.json()["error"]
    # the same run moved in time, with higher resourceVersions: its objects' UIDs give it away
    uids = [o["uid"] for o in body["fingerprint"]["facts"]["objects"]]
    replay = all_passed("calico-prod", "calico", "iptables", n=5, uids=uids)
    answer = post(client, calico, replay)
    assert answer.status_code == 409 and "replayed" in answer.json()["error"]
    assert Run.objects.count() == 1


@pytest.mark.parametrize(
    "second,words",
    [
        # resourceVersions only grow: a later run cannot begin below what an earlier one saw
        ({"n": 2, "rv": 500}, "resourceVersions went back"),
        # a boot ID belongs to one node
        ({"n": 2, "nodes": {"node-a": "boot-b-1", "node-b": "boot-x"}}, "boot ID of node"),
        # two runs of one cluster at the same time
        ({"n": 1, "minutes_ago": 291}, "overlaps run"),
    ],
)
def test_facts_inconsistent_with_earlier_runs_are_refused(client, two_vendors, second, words):
    calico, _ = two_vendors
    assert post(client, calico, all_passed("calico-prod", "calico", "iptables")).status_code == 201
    answer = post(client, calico, all_passed("calico-prod", "calico", "iptables", **second))
    assert answer.status_code == 422, answer.content
    assert words in answer.json()["error"]
    assert Run.objects.count() == 1 and TestResult.objects.filter(run__isnull=True).count() == 0


def test_a_boot_never_returns_after_a_reboot(client, two_vendors):
    calico, _ = two_vendors
    boots = ["boot-a-1", "boot-a-2", "boot-a-1"]
    codes = []
    for n, boot in enumerate(boots, 1):
        body = all_passed("calico-prod", "calico", "iptables", n=n, nodes={"node-a": boot})
        codes.append(post(client, calico, body).status_code)
    assert codes == [201, 201, 422]


def test_timings_that_cannot_be_true_are_refused(client, two_vendors):
    calico, _ = two_vendors
    body = all_passed("calico-prod", "calico", "iptables")
    for result in body["results"].values():
        result["duration"] = 100.0  # eight tests of 100 s in a run of 4 minutes
    answer = post(client, calico, body)
    assert answer.status_code == 422 and "add up to more" in answer.json()["error"]
    body = all_passed("calico-prod", "calico", "iptables")
    del body["fingerprint"]["facts"]
    answer = post(client, calico, body)
    assert answer.status_code == 400 and "facts" in answer.json()["error"]
    assert not Run.objects.exists()


def test_pages_show_the_trust_class(client, two_vendors, maintainer):
    calico, _ = two_vendors
    run_id = post(client, calico, all_passed("calico-prod", "calico", "iptables")).json()["run"]
    approve_cluster(Cluster.objects.get(), maintainer)
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert 'data-trust="self-reported"' in page and "verifies this run" in page
    assert client.get(f"/api/v1/runs/{run_id}/").json()["trust"] == "self-reported"
    matrix = client.get("/matrix/").content.decode()
    assert "self-reported ?" in matrix
    staff = Client()
    staff.force_login(maintainer)
    page = staff.get(f"/runs/{run_id}/").content.decode()
    assert "Verify this self-reported run" in page
    assert staff.post(f"/runs/{run_id}/verify/", {"reason": "logs checked"}).status_code == 302
    assert Run.objects.get(pk=run_id).agent_verified_at is not None
    assert "self-reported ✓" in client.get("/matrix/").content.decode()
