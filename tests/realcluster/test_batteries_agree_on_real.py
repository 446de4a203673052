"""Both batteries on the real cluster (issues 37 item 3, 38, 40): our battery (`all`) and
upstream's own e2e.test v1.36.3 (`upstream`, its 13 SCTP specs) run through the worker's own
`execute` against the same registered, approved cluster, and agree catalog test by catalog
test, as the cluster page's side-by-side report shows them (dashboard.domain.agreement).

Where they cannot agree the reason must be one of the known ones, said in the report:
- no upstream spec exists for the key (service-iptables-rules since 1.27, pod-to-loadbalancer):
  the report's row says "no upstream spec" (dashboard.domain.agreement);
- every upstream spec of the key skipped itself at run time ("until DialFromNode supports SCTP
  #96482": node-pod and node-Service are such specs, in pod-to-pod and pod-to-service).
Any other difference fails, naming the key and both outcomes with their reasons.

Upstream's runners leave out the specs of a feature the cluster lacks (`--ginkgo.skip`); the
`upstream` battery does too, decided by our battery's own checks (kernel.battery.features):
on this cluster (kernel without SCTP sockets, kubenet without NetworkPolicy, single-stack) only
the two basic specs run, and every left-out spec ends skipped with the reason ours gives.
Both runs go through a real Celery worker; then the upstream run's page and the cluster page's
side-by-side table are read as a visitor gets them. It needs the real
e2e.test at E2E_DIR/v1.36/ (`make e2e-binaries`); without it, it is skipped with that reason,
or fails under CI=true, as the cluster's absence does.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from dashboard.domain.agreement import side_by_side
from dashboard.domain.models import Run, TestResult
from kernel.vocabulary import Key
from tests.e2e import wait_for
from tests.realcluster.conftest import battery_namespaces_left, proxy_mode, register_and_approve
from tests.worker import celery_worker
from workers import runner

pytestmark = [
    pytest.mark.realcluster,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

NO_UPSTREAM_SPEC = {Key.SERVICE_IPTABLES_RULES, Key.POD_TO_LOADBALANCER}
RUNTIME_SKIP = "#96482"


def _need_binary(settings) -> Path:
    binary = Path(settings.E2E_DIR) / "v1.36" / "e2e.test"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        reason = f"no real e2e.test at {binary} (`make e2e-binaries` builds it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason)
    return binary


def _run(cluster, battery: str, log: Path, timeout: float) -> Run:
    call_command("run_battery", cluster.name, "--battery", battery)
    run = Run.objects.filter(cluster=cluster, battery=battery).latest("id")
    wait_for(
        lambda: Run.objects.get(pk=run.pk).state in ("finished", "error", "cancelled"),
        timeout,
        f"run {run.pk} ({battery})",
        log,
    )
    run.refresh_from_db()
    return run


def test_ours_and_upstreams_e2e_test_agree_key_by_key(real_kubeconfig: Path, settings) -> None:
    _need_binary(settings)
    client = Client()
    cluster = register_and_approve(
        client, real_kubeconfig, "real-agree", proxy_mode(real_kubeconfig)
    )
    since = timezone.now()
    with celery_worker() as worker:
        ours = _run(cluster, "all", worker["log"], 600)
        assert ours.state == Run.State.FINISHED, ours.error
        # Ours' pods (a hostPort 5060 among them) gone before upstream's specs ask the same.
        gone = [runner.battery_run_id(ours.id)]
        wait_for(
            lambda: not battery_namespaces_left(real_kubeconfig, gone), 180, "ours' namespaces"
        )
        upstream = _run(cluster, "upstream", worker["log"], 1200)
        assert upstream.state == Run.State.FINISHED, upstream.error
    state = upstream.upstream
    assert len(state["specs"]) == 13

    # What was left out, and why: our battery's own words for the same facts.
    left = {f["feature"]: f["reason"] for f in state["left_out"]}
    assert left["[Feature:NetworkPolicy]"] == "the plugin kubenet does not implement NetworkPolicy"
    ours_results = {r.test_key: r for r in ours.results.all()}
    if ours_results[Key.POD_TO_POD].reason.startswith("[Feature:SCTPConnectivity]"):
        assert left["[Feature:SCTPConnectivity]"] == kernel_words(
            ours_results[Key.POD_TO_POD].reason
        )
    assert left["[Feature:IPv6DualStack]"].startswith("not a dual-stack cluster: ")
    assert all(
        label in state["skip"] for label in ("Feature:NetworkPolicy", "Feature:IPv6DualStack")
    )
    for spec in state["specs"]:
        wanted = [why for label, why in left.items() if label in spec["name"]]
        if wanted:
            assert spec["outcome"] == "skipped", spec
            assert spec["message"] == "; ".join(wanted), spec
        else:
            assert spec["outcome"] in ("passed", "failed"), spec
            assert spec["message"] or spec["outcome"] == "passed", spec

    results = {
        (r.run_id, r.test_key): r
        for r in TestResult.objects.filter(run_id__in=(ours.id, upstream.id))
    }
    report = side_by_side([upstream, ours], results, since)
    assert report is not None and report["ours"].id == ours.id
    assert report["upstream"].id == upstream.id

    unexplained = []
    for row in report["rows"]:
        if row["state"] == "agree":
            continue
        theirs = results.get((upstream.id, row["key"]))
        mine = results.get((ours.id, row["key"]))
        if row["state"] == "no upstream spec" and row["key"] in NO_UPSTREAM_SPEC:
            assert row["why"] == "upstream's e2e.test has no spec for it"
            continue
        if (
            row["state"] == "cannot agree"
            and theirs is not None
            and theirs.outcome == "skipped"
            and RUNTIME_SKIP in theirs.reason
        ):
            continue
        unexplained.append(
            f"{row['key']}: ours {row['ours']} ({mine.reason[:300] if mine else 'no result'}) / "
            f"upstream {row['upstream']} ({theirs.reason[:300] if theirs else 'no result'})"
        )
    assert not unexplained, "the batteries disagree:\n" + "\n".join(unexplained)
    assert not report["disagree"]

    # The upstream run's page: its 13 specs with outcome and message, what was left out and
    # why, and upstream's own JUnit file behind the link.
    page = client.get(f"/runs/{upstream.id}/").content.decode()
    assert f'href="/runs/{upstream.id}/junit.xml"' in page
    for spec in state["specs"]:
        assert f'data-spec="{html.escape(spec["name"])}" data-outcome="{spec["outcome"]}"' in page
        if spec["message"]:
            assert html.escape(spec["message"]) in page
    for label, why in left.items():
        assert f'data-feature="{label}"' in page and html.escape(why) in page
    junit = client.get(f"/runs/{upstream.id}/junit.xml")
    assert junit.status_code == 200
    kept = Run.objects.defer(None).get(pk=upstream.id).upstream_junit
    assert kept is not None and junit.content == bytes(kept)
    assert b'<property name="SkipStrings" value="' in junit.content

    # The cluster page's side-by-side table: this pair, both outcomes per catalog test.
    page = client.get(f"/clusters/{cluster.name}/").content.decode()
    assert 'id="side-by-side"' in page
    assert 'data-disagree="0"' in page
    for row in report["rows"]:
        shown = (
            f'<tr data-key="{row["key"]}" data-state="{row["state"]}"><th scope="row"><code>'
            f'{row["key"]}</code></th><td data-outcome="{row["ours"]}">'
        )
        assert shown in page, row["key"]

    # Both runs' namespaces are gone (the API deletes asynchronously: wait for it).
    ids = [runner.battery_run_id(ours.id), runner.battery_run_id(upstream.id)]
    wait_for(lambda: not battery_namespaces_left(real_kubeconfig, ids), 180, "namespaces to go")


def kernel_words(reason: str) -> str:
    """Our connectivity skip's reason without what only a battery test adds (`; besides …`)."""
    return reason.split("; besides, ")[0]
