"""The live progress reader (kernel.upstream.ProgressReader) on the REAL console output of
upstream's e2e.test v1.36.3 against this project's cluster, and its JUnit through our ingest
(tests/fixtures/realcluster/e2e-v1.36.3-sctp*, see e2e-v1.36.3-NOTICE.md there: the `upstream`
battery's own command, its focus and the --ginkgo.skip the battery decided on that cluster).

What the real output showed: ginkgo v2 writes a spec its --ginkgo.skip left out exactly as one
outside the focus (status="skipped", <skipped message="skipped">), so only the run's own
decision (kernel.battery.features) can say those were left out, and why; "Will run N of 942"
counts the specs left after focus and skip.
"""

from __future__ import annotations

import gzip
import re
from datetime import UTC, datetime
from pathlib import Path

from dashboard.domain.ingest import ingest
from dashboard.domain.ingest.junit import NOT_SELECTED
from kernel.battery import features
from kernel.upstream import ProgressReader, spec_key
from kernel.vocabulary import Key
from workers.upstream import spec_names

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realcluster"
NAMES = spec_names(36)
CASE = re.compile(
    rb'<testcase name="([^"]*)" classname="[^"]*" status="([^"]*)"[^>]*>\s*(<skipped message="skipped">)?'
)
SKIP = r"\[Feature:NetworkPolicy\]|\[Feature:SCTPConnectivity\]|\[Feature:IPv6DualStack\]"
# What the battery's survey decided on that cluster (the fixture's NOTICE).
LEFT_OUT = {
    features.NETWORK_POLICY: "the plugin kubenet does not implement NetworkPolicy",
    features.SCTP_CONNECTIVITY: "[Feature:SCTPConnectivity]: the kernel of node vm has no SCTP "
    "sockets",
    features.DUAL_STACK: "not a dual-stack cluster: this cluster is not configured for "
    "dual-stack services",
}
RAN = {
    (
        "[sig-network] Services should allow creating a basic SCTP service with pod and "
        "endpoints [LinuxOnly] [Serial]"
    ),
    "[sig-network] Networking should allow creating a Pod with an SCTP HostPort [LinuxOnly] [Serial]",
}


def log() -> list[str]:
    path = FIXTURES / "e2e-v1.36.3-sctp.log.gz"
    return gzip.decompress(path.read_bytes()).decode().splitlines()


def junit() -> bytes:
    path = FIXTURES / "e2e-v1.36.3-sctp-junit_01.xml.gz"
    return gzip.decompress(path.read_bytes())


def junit_specs() -> dict[str, str]:
    """Spec name (as our key reduces it) -> status of the SCTP specs that ran, read from
    upstream's own file (those outside the focus or left out by the skip are
    `<skipped message="skipped">`)."""
    found = {}
    for name, status, unselected in CASE.findall(junit()):
        text = name.decode().replace("&#39;", "'")
        if ("SCTP" in text or "sctp" in text) and not unselected:
            found[spec_key(text)] = status.decode()
    return found


def test_the_skip_decided_on_the_cluster_is_in_upstreams_file_and_matches_the_labels() -> None:
    assert f'<property name="SkipStrings" value="{SKIP}">'.encode() in junit()
    assert features.skip_regex(LEFT_OUT) == SKIP
    assert any(line.startswith("Will run 2 of 942 specs") for line in log())
    assert {n for n in NAMES if not features.labels_of(n, features.FEATURES)} == RAN


def test_each_real_spec_is_shown_running_once_and_every_end_is_counted() -> None:
    specs = junit_specs()
    assert set(specs) == {spec_key(n) for n in RAN} and set(specs.values()) == {"passed"}
    reader = ProgressReader(NAMES)
    shown: list[str] = []
    for line in log():
        before = reader.progress.running
        reader.feed(line)
        now = reader.progress.running
        if now and now != before:
            shown.append(now)
            assert reader.progress.done == len(shown) - 1, (now, reader.progress)
    assert len(shown) == len(set(shown)) == 2 and set(shown) == RAN
    assert reader.progress.as_dict() == {"running": "", "done": 2, "total": 2}


def test_the_real_junit_through_the_ingest_as_a_vendors_file_and_as_the_batterys() -> None:
    when = datetime(2026, 12, 7, 16, 0, tzinfo=UTC)
    # A vendor's file: the left-out specs are only "not selected", never a verdict.
    vendor = ingest(junit(), received_at=when)
    assert len(vendor.cases) == 13 and all(c.key for c in vendor.cases)
    dry = vendor.provenance["dry_run"]
    assert isinstance(dry, dict) and dry["value"] == "no"
    assert vendor.provenance["skip"] == SKIP
    for case in vendor.cases:
        if case.name in RAN:
            assert case.outcome == "passed", case
        else:
            assert (case.outcome, case.reason) == ("not_run", NOT_SELECTED), case
    # The battery's own run: what it left out ends skipped with its reason, by catalog key.
    ours = ingest(junit(), received_at=when, check_evidence=False, left_out=LEFT_OUT)
    for case in ours.cases:
        if case.name in RAN:
            assert case.outcome == "passed", case
            continue
        wanted = [why for label, why in LEFT_OUT.items() if label in case.name]
        assert (case.outcome, case.reason) == ("skipped", "; ".join(wanted)), case
    results = ours.results
    assert results[Key.DECLARE_SCTP_PORTS].outcome == "passed"
    assert results[Key.HOSTPORT_KUBENET].outcome == "passed"
    for key in (Key.POD_TO_POD, Key.POD_TO_SERVICE, Key.NETPOL_ALLOW_DENY):
        assert results[key].outcome == "skipped", key
        assert any(LEFT_OUT[features.SCTP_CONNECTIVITY] in r for r in results[key].reasons), key
    netpol = results[Key.NETPOL_SCTP_BLOCKS_TCP_UDP]
    assert (netpol.outcome, netpol.reasons) == ("skipped", [LEFT_OUT[features.NETWORK_POLICY]])
