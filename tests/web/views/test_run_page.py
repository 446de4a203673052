"""One run's page: live partial while it runs, outcomes with reasons, evidence, timings, fingerprint."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.timezone import now

from dashboard.domain.models import Run, TestResult
from tests import factories
from tests.web.views.page_data import queries

pytestmark = pytest.mark.django_db


def _running() -> Run:
    c = factories.cluster("calico-a")
    run = Run.objects.create(
        cluster=c,
        plugin=c.plugin,
        proxier=c.proxier,
        battery="basic",
        state="running",
        started=now(),
    )
    TestResult.objects.create(
        run=run,
        test_key="declare-sctp-ports",
        outcome="passed",
        reason="accepted",
        evidence="Service created with protocol SCTP",
        duration=1.5,
    )
    return run


def test_a_running_run_polls_its_partial_and_says_which_tests_wait(client: Client) -> None:
    run = _running()
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert f'data-poll="/runs/{run.id}/progress/"' in body
    assert (
        '<meta http-equiv="refresh" content="5">' in body
    )  # inside <noscript>: works without JavaScript
    assert "1 of 4 tests have an outcome" in body
    # The first test without an outcome is the one running; the rest wait.
    assert 'data-key="hostport-kubenet" data-outcome="running"' in body
    assert 'class="active-test" data-test="hostport-kubenet"' in body
    assert 'data-key="service-iptables-rules" data-outcome="queued"' in body
    assert "Service created with protocol SCTP" in body and "1.5 s" in body


def test_the_partial_stops_polling_once_the_run_ended(client: Client) -> None:
    run = _running()
    Run.objects.filter(pk=run.pk).update(
        state="finished", finished=now(), fingerprint={"node_count": 2, "worker_sctp": False}
    )
    partial = client.get(f"/runs/{run.id}/progress/")
    body = partial.content.decode()
    assert partial["Cache-Control"] == "no-store"
    assert "data-poll" not in body and 'data-state="finished"' in body
    assert 'data-key="hostport-kubenet" data-outcome="not_run"' in body
    assert "node_count" in body and "✘ no" in body


def test_query_count_is_fixed(client: Client) -> None:
    run = factories.run(factories.cluster("calico-a"))
    assert queries(client, f"/runs/{run.id}/") == queries(client, f"/runs/{run.id}/progress/") == 3


def test_an_unknown_run_is_a_404(client: Client) -> None:
    assert client.get("/runs/999999/").status_code == 404


def test_the_tcp_and_udp_conformance_checks_are_listed_apart_from_the_catalog(
    client: Client,
) -> None:
    from dashboard.domain.models import TestResult

    run = factories.run(factories.cluster(), battery="basic")
    TestResult.objects.create(
        run=run,
        test_key="conformance-udp-pod-to-service",
        outcome="failed",
        reason="UDP to the ClusterIP 10.96.0.9:80 timed out (TIMEOUT)",
    )
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert "Other network conformance checks" in body
    section = body.split("Other network conformance checks")[1]
    assert "conformance-udp-pod-to-service" in section and "timed out (TIMEOUT)" in section
    assert "conformance-udp-pod-to-service" not in body.split("Other network conformance checks")[0]


def test_tests_without_an_upstream_spec_say_so_beside_their_outcome():
    from dashboard.web.views.runs import UPSTREAM_NOTES

    assert set(UPSTREAM_NOTES) == {"service-iptables-rules", "pod-to-loadbalancer"}
    assert all(note.startswith("No upstream spec") for note in UPSTREAM_NOTES.values())


def test_the_run_page_shows_the_no_upstream_spec_note_beside_those_two_tests_only(
    client: Client,
) -> None:
    c = factories.cluster("calico-notes")
    run = Run.objects.create(
        cluster=c, plugin=c.plugin, proxier=c.proxier, battery="all", state="succeeded"
    )
    for key in ("service-iptables-rules", "pod-to-loadbalancer", "pod-to-service"):
        TestResult.objects.create(run=run, test_key=key, outcome="passed", reason=f"{key} ok")
    body = client.get(f"/runs/{run.id}/").content.decode()
    assert body.count('class="muted upstream-note"') == 2
    for key in ("service-iptables-rules", "pod-to-loadbalancer"):
        row = body.split(f"{key} ok", 1)[1].split("</td>", 1)[0]
        assert '<p class="muted upstream-note">No upstream spec' in row
    row = body.split("pod-to-service ok", 1)[1].split("</td>", 1)[0]
    assert "upstream-note" not in row
