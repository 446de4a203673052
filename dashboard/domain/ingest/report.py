"""The validation report: catalog outcomes aggregated from upstream tests, and the rule
that says whether a submission is qualifying connectivity evidence (contract)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from dashboard.domain.ingest.junit import Case
from dashboard.domain.ingest.upstream_names import (
    CATALOG_KEYS,
    POD_TO_LB,
)
from dashboard.domain.policy import PluginFacts
from dashboard.domain.policy import qualifying as policy_qualifying

_NO_UPSTREAM: dict[str, str] = {
    POD_TO_LB: "no upstream e2e test exists; only this project's battery runs it"
}


@dataclass
class CatalogResult:
    outcome: str  # passed | failed | skipped | not_run
    upstream_names: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def aggregate(cases: Iterable[Case]) -> dict[str, CatalogResult]:
    """Contract: failed if any failed, passed if one passed and none failed, skipped if
    all skipped, not_run if none is in the file. A testcase the run did not select (ginkgo
    focus/skip, pending) is ``not_run`` too: it is in the file but never ran, so it is
    evidence of nothing; one skipped by the environment next to it makes the test skipped.

    The same upstream name can appear more than once (JUnit files of parallel nodes);
    each occurrence counts, so a spec skipped on one node and run on another is passed.
    """
    by_key: dict[str, list[Case]] = {key: [] for key in CATALOG_KEYS}
    for case in cases:
        if case.key is not None:
            by_key[case.key].append(case)
    results: dict[str, CatalogResult] = {}
    for key, found in by_key.items():
        if not found:
            reason = _NO_UPSTREAM.get(key, "no upstream test for it in the submitted file")
            results[key] = CatalogResult("not_run", [], [reason])
            continue
        outcomes = {case.outcome for case in found}
        if "failed" in outcomes:
            outcome = "failed"
        elif "passed" in outcomes:
            outcome = "passed"
        elif "skipped" in outcomes:
            outcome = "skipped"
        else:
            outcome = "not_run"
        names = list(dict.fromkeys(case.name for case in found))
        # The reasons that explain the outcome: failures for failed, skips for skipped.
        wanted = {"failed": "failed", "skipped": "skipped", "not_run": "not_run"}.get(outcome)
        reasons = list(
            dict.fromkeys(case.reason for case in found if case.outcome == wanted and case.reason)
        )
        results[key] = CatalogResult(outcome, names, reasons)
    return results


def ran(results: dict[str, CatalogResult]) -> bool:
    """Whether any catalog test reached a verdict (passed or failed) in the file."""
    return any(result.outcome in ("passed", "failed") for result in results.values())


def count(results: dict[str, CatalogResult]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not_run": 0}
    for result in results.values():
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    return counts


def qualifying(results: dict[str, CatalogResult], plugin: PluginFacts | bool) -> tuple[bool, str]:
    """The evidence policy's qualifying rule (dashboard.domain.policy.qualifying, defined there once) on a
    file's results. `plugin` may be a bare "implements NetworkPolicy" flag (no exemption)."""
    facts = (
        plugin
        if isinstance(plugin, PluginFacts)
        else PluginFacts("the plugin", False, bool(plugin))
    )
    return policy_qualifying({key: r.outcome for key, r in results.items()}, facts)


def results_to_dict(results: dict[str, CatalogResult]) -> dict[str, dict[str, object]]:
    return {key: asdict(result) for key, result in results.items()}
