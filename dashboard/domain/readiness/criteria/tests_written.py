"""tests-written: every catalog test is implemented by the battery and has a `passed` or
`failed` outcome in counted evidence (runs or verified submissions); pod-to-loadbalancer may
instead have a counted `skipped` for want of an SCTP load balancer, which the KEP allows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Case, Exists, OuterRef, QuerySet, Subquery, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce

from dashboard.domain import compiled
from dashboard.domain.catalog import (
    ALL_KEYS,
    BASIC_KEYS,
    CONNECTIVITY_KEYS,
    Outcome,
    criterion_title,
)
from dashboard.domain.models import CatalogTest, Run, Submission, TestResult
from dashboard.domain.policy import (
    LB_KEY,
    TESTS_WRITTEN,
    Policy,
    countable_runs_q,
    countable_submissions_q,
    evidence_entry,
    outcome_verdict_keys,
    verdict_keys,
)
from dashboard.domain.readiness.base import Context, Verdict
from dashboard.domain.readiness.evidence_lookup import load, plugins_by_id, store_of
from dashboard.domain.readiness.whatif import with_what_if
from kernel.battery.implemented import implemented_keys as battery_implemented_keys

KEY = TESTS_WRITTEN
TITLE = criterion_title(KEY)
RECENT_SUBMISSIONS = 200

# What the walk over the newest submissions reads of each one's results: per test its outcome
# (`{"k": {"outcome": ...}}`, or the older `{"k": "passed"}`), and pod-to-loadbalancer's reason
# (its skip counts only for want of a load balancer), extracted by the database instead of
# sending and decoding every whole document (what this lookup grew by over a year).
_VERDICT_TESTS = (*BASIC_KEYS, *CONNECTIVITY_KEYS)
_OUTCOME_OF = {
    f"outcome_{i}": Coalesce(KT(f"results__{key}__outcome"), KT(f"results__{key}"))
    for i, key in enumerate(_VERDICT_TESTS)
}
_LB_REASON = {"lb_reason": KT(f"results__{LB_KEY}__reason")}


def implemented_keys() -> set[str]:
    # Read without importing the battery (and the kubernetes client) into the web process.
    return set(battery_implemented_keys())


def evaluate(ctx: Context) -> Verdict:
    return with_what_if(_evaluate, ctx)


def candidates(ctx: Context, relax: frozenset[str]) -> list[dict[str, Any]]:
    """Per catalog test the newest counted runs with each verdict, its newest run at all and
    its newest counted submission with a verdict (among the newest RECENT_SUBMISSIONS): two
    queries, once per evaluation and relaxation."""
    found: list[dict[str, Any]] = ctx.memo(
        f"tests-written-candidates-{','.join(sorted(relax))}", lambda: _candidates(ctx, relax)
    )
    return found


_CANDIDATE_COLUMNS = ("key", "passed_run", "failed_run", "skip_run", "latest_run")


def _candidate_runs(pol: Policy, relax: frozenset[str]) -> QuerySet[CatalogTest]:
    """Per catalog test, its newest counted runs with each verdict and its newest run at all."""
    runs = Run.objects.filter(countable_runs_q(pol, relax=relax))

    def newest(outcome: str) -> Subquery:
        # The newest counted run with this outcome for the key: runs are walked newest first on
        # the finished index, each checked on the (run, test_key) constraint, so the cost is
        # bounded by the runs inside the freshness window, not by the whole history.
        has = TestResult.objects.filter(
            run=OuterRef("pk"), test_key=OuterRef(OuterRef("key")), outcome=outcome
        )
        return Subquery(runs.filter(Exists(has)).order_by("-finished", "-id").values("id")[:1])

    latest_any = Subquery(
        TestResult.objects.filter(test_key=OuterRef("key")).order_by("-id").values("run_id")[:1]
    )
    return CatalogTest.objects.annotate(
        passed_run=newest(Outcome.PASSED),
        failed_run=newest(Outcome.FAILED),
        # only pod-to-loadbalancer may count a skip (for want of a load balancer)
        skip_run=Case(When(key=LB_KEY, then=newest(Outcome.SKIPPED))),
        latest_run=latest_any,
    ).values_list(*_CANDIDATE_COLUMNS)


def _with_cutoff(pol: Policy, cutoff: datetime) -> Policy:
    """The policy of the same release floor whose freshness cutoff is `cutoff`."""
    days = timedelta(days=pol.fresh_days)
    return Policy(now=cutoff + days, fresh_days=pol.fresh_days, minimum=pol.minimum)


def candidate_run_rows(pol: Policy, relax: frozenset[str]) -> list[tuple[Any, ...]]:
    """The rows of _candidate_runs(), its SQL compiled once per relaxation and release floor
    (dashboard.domain.compiled): only the freshness cutoff changes between evaluations."""
    return compiled.rows(
        (KEY, relax, pol.minimum),
        lambda cutoff: _candidate_runs(_with_cutoff(pol, cutoff), relax),
        pol.fresh_cutoff,
    )


def _candidates(ctx: Context, relax: frozenset[str]) -> list[dict[str, Any]]:
    pol = ctx.policy
    found = candidate_run_rows(pol, relax)
    tests = [dict(zip(_CANDIDATE_COLUMNS, row, strict=True)) for row in found]
    # Per test, its candidate submission: the newest counted one that gives it a verdict, among
    # the newest counted submissions, by the same rule as their items' (policy.verdict_keys), on
    # the outcomes the database reads out of their results.
    newest_subs = Submission.objects.filter(countable_submissions_q(pol, relax=relax)).order_by(
        "-created", "-id"
    )[:RECENT_SUBMISSIONS]
    first: dict[str, int] = {}
    for sub_id, keys in submission_verdicts(newest_subs):
        for key in keys:
            first.setdefault(key, sub_id)
        if len(first) == len(ALL_KEYS):
            break
    for t in tests:
        t["submission"] = first.get(str(t["key"]))
    return tests


def submission_verdicts(submissions: QuerySet[Submission]) -> Iterator[tuple[int, list[str]]]:
    """Each submission's id and the tests it gives a verdict for (policy.verdict_keys of its
    item), read from the outcomes (and the load balancer's reason) that the database extracts
    from its results, in the queryset's order."""
    rows = submissions.annotate(**_OUTCOME_OF, **_LB_REASON).values_list(
        "id", *_OUTCOME_OF, *_LB_REASON
    )
    for sub_id, *outcomes, lb_reason in rows:
        found = {k: str(o) for k, o in zip(_VERDICT_TESTS, outcomes, strict=True) if o}
        yield sub_id, outcome_verdict_keys(found, {LB_KEY: str(lb_reason or "")})


def candidate_ids(ctx: Context, relax: frozenset[str]) -> tuple[set[int], set[int]]:
    tests = candidates(ctx, relax)
    runs = {t[k] for t in tests for k in ("passed_run", "failed_run", "skip_run", "latest_run")}
    return runs - {None}, {t["submission"] for t in tests} - {None}


def _evaluate(ctx: Context, relax: frozenset[str]) -> tuple[Verdict, set[str]]:
    pol = ctx.policy
    tests = candidates(ctx, relax)
    absent = [k for k in ALL_KEYS if k not in {t["key"] for t in tests}]
    if absent:  # the catalog itself is incomplete (its seed migration did not run)
        return Verdict(
            KEY, TITLE, "unmet", "catalog is missing: " + ", ".join(absent), [], []
        ), set()

    plugins = ctx.memo("plugins", plugins_by_id)
    run_ids, sub_ids = candidate_ids(ctx, relax)
    items = load(run_ids, sub_ids, plugins, store_of(ctx))

    implemented = implemented_keys()
    used: set[str] = set()
    rows, evidence, missing_impl, unrecorded = [], [], [], []
    for t in tests:
        key = t["key"]
        found = None
        for rid in (t["passed_run"], t["failed_run"], t["skip_run"]):
            item = items.get(("run", rid)) if rid else None
            if item is not None:
                a = pol.assess(item, KEY, relax)
                if a.counts and key in verdict_keys(item):
                    found = (item, a)
                    break
        item = items.get(("submission", t["submission"])) if t["submission"] else None
        if found is None and item is not None:
            a = pol.assess(item, KEY, relax)
            if a.counts and key in verdict_keys(item):
                found = (item, a)
        row = {
            "key": key,
            "implemented": key in implemented,
            "recorded": found is not None,
            "run": found[0].id if found and found[0].kind == "run" else None,
            "evidence": evidence_entry(*found) if found else None,
            "why": "",
        }
        if found is not None:
            used |= found[1].relied
            evidence.append(evidence_entry(*found))
        elif key in implemented:
            latest = items.get(("run", t["latest_run"])) if t["latest_run"] else None
            if latest is not None:
                a = pol.assess(latest, KEY, relax)
                outcome = latest.outcome(key).replace("_", " ")
                why = (
                    f"run {latest.id}: {key} {outcome}"
                    + ("" if key in verdict_keys(latest) else " (no verdict)")
                    + ("" if a.counts else f"; {a.why}")
                )
                evidence.append(evidence_entry(latest, a))
            else:
                why = "never run"
            row["why"] = why
            unrecorded.append(f"{key} ({why})")
        if key not in implemented:
            missing_impl.append(key)
        rows.append(row)

    if not missing_impl and not unrecorded:
        detail = (
            f"all {len(tests)} catalog tests are implemented and have verdicts in counted evidence"
        )
        return Verdict(KEY, TITLE, "met", detail, evidence, rows), used
    parts = []
    if missing_impl:
        parts.append("not implemented: " + ", ".join(missing_impl))
    if unrecorded:
        parts.append("no verdict in counted evidence: " + "; ".join(unrecorded))
    return Verdict(KEY, TITLE, "unmet", "; ".join(parts), evidence, rows), used
