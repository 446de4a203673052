"""tests-written: every catalog test is implemented by the battery and has a recorded outcome
(passed, failed or skipped) from a battery run."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from dashboard.catalog import ALL_KEYS, Outcome
from dashboard.models import CatalogTest, TestResult

from ..base import Context, EvidenceRef, Verdict

KEY = "tests-written"
TITLE = "The e2e tests described in the Test Plan have been written"


def implemented_keys() -> set[str]:
    from workers.battery import REGISTRY

    return set(REGISTRY)


def evaluate(ctx: Context) -> Verdict:
    # Any one recorded outcome is enough; its run is the evidence link. Unordered on purpose:
    # "LIMIT 1" on the (test_key, outcome) index stays cheap however long the history is.
    example = TestResult.objects.filter(
        test_key=OuterRef("key"), outcome__in=[Outcome.PASSED, Outcome.FAILED, Outcome.SKIPPED]
    ).values("run_id")[:1]
    tests = [
        {**t, "recorded": t["example_run"] is not None}
        for t in CatalogTest.objects.annotate(example_run=Subquery(example)).values("key", "example_run")
    ]
    implemented = implemented_keys()
    absent = [k for k in ALL_KEYS if k not in {t["key"] for t in tests}]
    if absent:  # the catalog itself is incomplete (its seed migration did not run)
        return Verdict(KEY, TITLE, "unmet", "catalog is missing: " + ", ".join(absent), [], [])
    missing_impl = [t["key"] for t in tests if t["key"] not in implemented]
    unrecorded = [t["key"] for t in tests if t["key"] in implemented and not t["recorded"]]
    evidence = []
    seen: set[int] = set()
    for t in tests:
        if t["example_run"] and t["example_run"] not in seen:
            seen.add(t["example_run"])
            evidence.append(EvidenceRef("run", t["example_run"], f"run {t['example_run']}"))
    rows = [
        {"key": t["key"], "implemented": t["key"] in implemented, "recorded": t["recorded"], "run": t["example_run"]}
        for t in tests
    ]
    if not missing_impl and not unrecorded:
        detail = f"all {len(tests)} catalog tests are implemented and have recorded outcomes"
        return Verdict(KEY, TITLE, "met", detail, evidence, rows)
    parts = []
    if missing_impl:
        parts.append("not implemented: " + ", ".join(missing_impl))
    if unrecorded:
        parts.append("no recorded outcome yet: " + ", ".join(unrecorded))
    return Verdict(KEY, TITLE, "unmet", "; ".join(parts), evidence, rows)
