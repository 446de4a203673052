"""The matrix (/matrix/): plugins × proxiers, latest outcome per test, trust level, bounded queries."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import Run, Submission
from dashboard.web.views.matrix import build_matrix
from tests import factories
from tests.web.views.page_data import grow_history, grow_submissions, queries

pytestmark = pytest.mark.django_db


def _cell(plugin: str, proxier: str | None, key: str) -> dict:
    for row in build_matrix()["rows"]:
        if row["plugin"]["slug"] == plugin and row["proxier"] == proxier:
            return next(c for c in row["cells"] if c["key"] == key)
    raise AssertionError(f"no row for {plugin}/{proxier}")


def test_a_cell_shows_the_newest_run_outcome_as_our_run() -> None:
    c = factories.cluster("calico-a")
    factories.run(c, factories.with_outcome("pod-to-pod", Outcome.FAILED), days_ago=5)
    newest = factories.run(c, days_ago=1)
    cell = _cell("calico", "iptables", "pod-to-pod")
    assert (cell["outcome"], cell["trust"], cell["url"]) == ("passed", "run", f"/runs/{newest.id}/")


def test_skipped_missing_and_passed_are_three_different_cells() -> None:
    c = factories.cluster("calico-a")
    factories.run(
        c,
        {"declare-sctp-ports": Outcome.PASSED, "hostport-kubenet": Outcome.SKIPPED},
        battery="basic",
    )
    assert _cell("calico", "iptables", "declare-sctp-ports")["outcome"] == "passed"
    assert _cell("calico", "iptables", "hostport-kubenet")["outcome"] == "skipped"
    assert _cell("calico", "iptables", "service-iptables-rules")["outcome"] == "not_run"
    assert (
        _cell("calico", "iptables", "pod-to-pod")["outcome"] == "missing"
    )  # no connectivity run at all
    assert _cell("antrea", None, "pod-to-pod")["outcome"] == "missing"


def test_a_basic_run_does_not_hide_an_older_connectivity_run() -> None:
    c = factories.cluster("calico-a")
    conn = factories.run(c, battery="connectivity", days_ago=10)
    factories.run(c, battery="basic", days_ago=1)
    assert _cell("calico", "iptables", "pod-to-service")["url"] == f"/runs/{conn.id}/"


def test_verified_and_pending_submissions_show_their_trust_level() -> None:
    verified = factories.submission("cilium", days_ago=3, proxier="ipvs")
    pending = factories.submission(
        "cilium",
        factories.with_outcome("pod-to-pod", Outcome.FAILED),
        status=Submission.Status.PENDING,
        days_ago=1,
        proxier="ipvs",
    )
    cell = _cell("cilium", "ipvs", "pod-to-pod")
    assert (cell["outcome"], cell["trust"], cell["url"]) == (
        "passed",
        "verified",
        f"/submissions/{verified.id}/",
    )
    assert (
        cell["pending"]["outcome"] == "failed"
        and cell["pending"]["url"] == f"/submissions/{pending.id}/"
    )


def test_a_rejected_submission_is_not_shown() -> None:
    factories.submission("cilium", status=Submission.Status.REJECTED)
    assert _cell("cilium", None, "pod-to-pod")["outcome"] == "missing"


def test_the_page_draws_colour_and_symbol_for_each_outcome(client: Client) -> None:
    factories.run(
        factories.cluster("calico-a"), factories.with_outcome("pod-to-pod", Outcome.FAILED)
    )
    body = client.get("/matrix/").content.decode()
    assert re.search(r'class="o o-failed trust-run"[^>]*>✘</a>', body)
    assert re.search(r'class="o o-passed trust-run"[^>]*>✔</a>', body)
    assert "k8s 1.34.2" in body


def test_its_query_count_does_not_grow_with_history(client: Client) -> None:
    a = factories.cluster("calico-a")
    b = factories.cluster("cilium-b", plugin_slug="cilium", proxier="ipvs")
    grow_history(a, 3)
    grow_submissions(2)
    before = build_queries()
    grow_history(a, 60)
    grow_history(b, 30)
    grow_submissions(40)
    assert build_queries() == before == 5
    # Served: the check of the publication; the matrix is built once per publication.
    assert queries(client, "/matrix/") == 1


def build_queries() -> int:
    with CaptureQueriesContext(connection) as ctx:
        build_matrix()
    return len(ctx.captured_queries)


def test_it_is_built_once_per_publication_and_shows_new_evidence_at_once(client: Client) -> None:
    c = factories.cluster("calico-a")
    assert "calico-a" not in client.get("/matrix/").content.decode()
    run = factories.run(c)
    assert f'href="/runs/{run.id}/"' in client.get("/matrix/").content.decode()
    with CaptureQueriesContext(connection) as ctx:
        assert f'href="/runs/{run.id}/"' in client.get("/matrix/").content.decode()
    assert len(ctx.captured_queries) == 1


def test_an_old_connectivity_run_stays_visible_behind_many_newer_basic_runs() -> None:
    c = factories.cluster("calico-a")
    conn = factories.run(c, battery="connectivity", days_ago=30)
    for i in range(60):
        factories.run(c, battery="basic", days_ago=20 - i * 0.1)
    assert _cell("calico", "iptables", "pod-to-pod")["url"] == f"/runs/{conn.id}/"
    assert _cell("calico", "iptables", "declare-sctp-ports")["outcome"] == "passed"


def test_a_run_sits_under_the_proxier_it_demonstrated_not_the_registered_one() -> None:
    registered_iptables = factories.cluster("calico-a")
    via_nft = factories.run(registered_iptables, detected="nftables")
    assert _cell("calico", "nftables", "pod-to-service")["url"] == f"/runs/{via_nft.id}/"
    undetermined = factories.run(factories.cluster("calico-b", proxier="ipvs"), detected=None)
    cell = _cell("calico", "ipvs (not demonstrated)", "pod-to-service")
    assert cell["url"] == f"/runs/{undetermined.id}/"
    ebpf = factories.run(factories.cluster("cilium-a", plugin_slug="cilium"), detected=None)
    Run.objects.filter(pk=ebpf.pk).update(fingerprint={"service_dataplane": "ebpf (cilium)"})
    assert _cell("cilium", "ebpf (cilium)", "pod-to-service")["url"] == f"/runs/{ebpf.id}/"
    order = [r["proxier"] for r in build_matrix()["rows"] if r["plugin"]["slug"] == "calico"]
    assert order[0] == "nftables" and order[-1] == "ipvs (not demonstrated)"


def test_the_page_gives_the_per_proxier_verdict(client: Client) -> None:
    factories.run(factories.cluster("calico-ipvs", proxier="ipvs"))
    body = client.get("/matrix/").content.decode()
    verdicts = body[body.index('id="per-proxier"') :]
    assert "✔ <b>ipvs</b> demonstrated" in verdicts
    assert "✘ <b>iptables</b> not demonstrated" in verdicts
    assert "<b>nftables</b> not demonstrated" in verdicts and "(not required)" in verdicts
    assert "deprecated since Kubernetes 1.35" in verdicts


def test_a_cells_markup_escapes_every_value_as_format_html_does() -> None:
    """The cells are written without the template engine (~1,000 per page): every value a
    source brings (a reason, a cluster's or plugin version's text) is escaped exactly as
    format_html() escapes it, and a safe string is passed through as it is."""
    from django.utils.html import format_html
    from django.utils.safestring import mark_safe

    from dashboard.web.views.matrix import _cell_html, _e

    hostile = "<script>alert(\"x\")</script> & 'quoted'"
    for value in (hostile, "plain", 3, None, mark_safe("<b>safe</b>")):
        assert _e(value) == format_html("{}", value)
    cell = {
        "url": "/runs/1/",
        "label": hostile,
        "trust": "run",
        "trust_label": "our run",
        "trust_short": "ours",
        "source": hostile,
        "kubernetes_version": hostile,
        "when": now(),
        "reason": hostile,
        "outcome": "failed",
        "symbol": "✘",
        "beside": {
            "url": "/submissions/2/",
            "trust_label": "verified vendor",
            "label": hostile,
            "outcome": "passed",
            "trust": "verified",
            "symbol": "✔",
            "source": hostile,
        },
    }
    markup = _cell_html(cell)
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    # the title (label, source, release, reason) twice, the source, the release, the note twice
    assert markup.count("&lt;script&gt;") == 4 * 2 + 2 + 2
    assert "&#x27;quoted&#x27;" in markup and "&quot;x&quot;" in markup
