"""Prometheus metrics (text format 0.0.4), names prefixed `sctp_dashboard_`.

Read from the database at scrape time, so every web replica and process answers the same and
nothing is lost on restart: runs by state, test outcomes, queue wait (created -> started),
submissions by status and size, criterion statuses (from the shared readiness evaluation).
Ingest time is the one thing the database does not keep: `observe_ingest` adds it to counters
in the shared cache (Redis, or the database cache in the embedded mode).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from django.core.cache import cache
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum

from dashboard.domain.models import Run, Submission, TestResult
from dashboard.domain.publication import failure_counts, published

log = logging.getLogger(__name__)

P = "sctp_dashboard_"
QUEUE_WAIT_BUCKETS = (1, 5, 15, 30, 60, 300, 900, 3600, 4 * 3600)
SIZE_BUCKETS = (10_000, 100_000, 1_000_000, 10_000_000, 50_000_000)
INGEST_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_INGEST_KEY = "metrics:ingest:"


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(
    name: str, kind: str, help_text: str, samples: Iterable[tuple[str, dict[str, object], float]]
) -> list[str]:
    lines = [f"# HELP {P}{name} {help_text}", f"# TYPE {P}{name} {kind}"]
    for suffix, labels, value in samples:
        inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
        lines.append(
            f"{P}{name}{suffix}{{{inner}}} {value:g}" if inner else f"{P}{name}{suffix} {value:g}"
        )
    return lines


def _histogram(
    counts: dict[float, int], total: int, total_sum: float, labels: dict[str, object] | None = None
) -> list[tuple[str, dict[str, object], float]]:
    labels = labels or {}
    samples: list[tuple[str, dict[str, object], float]] = [
        ("_bucket", {**labels, "le": f"{le:g}"}, counts[le]) for le in sorted(counts)
    ]
    samples.append(("_bucket", {**labels, "le": "+Inf"}, total))
    samples += [("_sum", labels, total_sum), ("_count", labels, total)]
    return samples


def observe_ingest(seconds: float, size: int, accepted: bool) -> None:
    """Count one ingest (a result file parsed) in the shared cache; never raises."""
    result = "accepted" if accepted else "refused"
    keys = [f"{_INGEST_KEY}{result}:count", f"{_INGEST_KEY}{result}:sum_us"]
    keys += [f"{_INGEST_KEY}{result}:le:{le:g}" for le in INGEST_BUCKETS if seconds <= le]
    try:
        for key in keys:
            cache.add(key, 0, timeout=None)
        cache.incr(keys[0])
        cache.incr(keys[1], int(seconds * 1_000_000))
        for key in keys[2:]:
            cache.incr(key)
    except Exception:  # metrics must never break an upload
        log.warning("could not record the ingest metric", exc_info=True)


def _ingest_lines() -> list[str]:
    samples: list[tuple[str, dict[str, object], float]] = []
    try:
        for result in ("accepted", "refused"):
            base = f"{_INGEST_KEY}{result}:"
            names = [f"{base}count", f"{base}sum_us"] + [
                f"{base}le:{le:g}" for le in INGEST_BUCKETS
            ]
            got = cache.get_many(names)
            counts = {le: int(got.get(f"{base}le:{le:g}", 0)) for le in INGEST_BUCKETS}
            samples += _histogram(
                counts,
                int(got.get(f"{base}count", 0)),
                int(got.get(f"{base}sum_us", 0)) / 1_000_000,
                {"result": result},
            )
    except Exception:
        log.warning("could not read the ingest metrics", exc_info=True)
        return []
    return _family(
        "ingest_seconds",
        "histogram",
        "Time to parse and check an uploaded result file, by result.",
        samples,
    )


def render() -> str:
    lines: list[str] = []
    by_state = dict(
        Run.objects.values_list("state").annotate(n=Count("id")).values_list("state", "n")
    )
    lines += _family(
        "runs",
        "gauge",
        "Battery runs by state.",
        [("", {"state": s}, by_state.get(s, 0)) for s in Run.State.values],
    )
    outcomes = TestResult.objects.values_list("test_key", "outcome").annotate(n=Count("id"))
    lines += _family(
        "test_results_total",
        "counter",
        "Recorded test outcomes of runs, by test and outcome.",
        [("", {"test": key, "outcome": outcome}, n) for key, outcome, n in sorted(outcomes)],
    )
    wait = ExpressionWrapper(F("started") - F("created"), output_field=DurationField())
    waits = (
        Run.objects.filter(started__isnull=False)
        .annotate(wait=wait)
        .aggregate(
            total=Count("id"),
            total_sum=Sum("wait"),
            **{
                f"le{i}": Count("id", filter=Q(wait__lte=timedelta(seconds=le)))
                for i, le in enumerate(QUEUE_WAIT_BUCKETS)
            },
        )
    )
    wait_sum = waits["total_sum"].total_seconds() if waits["total_sum"] else 0.0
    lines += _family(
        "run_queue_wait_seconds",
        "histogram",
        "Time from a run's request to its start.",
        _histogram(
            {le: waits[f"le{i}"] for i, le in enumerate(QUEUE_WAIT_BUCKETS)},
            waits["total"],
            wait_sum,
        ),
    )
    subs = dict(
        Submission.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    lines += _family(
        "submissions",
        "gauge",
        "Vendor submissions by review status.",
        [("", {"status": s}, subs.get(s, 0)) for s in Submission.Status.values],
    )
    sizes = Submission.objects.aggregate(
        total=Count("id"),
        total_sum=Sum("size"),
        **{f"le{i}": Count("id", filter=Q(size__lte=le)) for i, le in enumerate(SIZE_BUCKETS)},
    )
    lines += _family(
        "submission_bytes",
        "histogram",
        "Size of accepted result files.",
        _histogram(
            {le: sizes[f"le{i}"] for i, le in enumerate(SIZE_BUCKETS)},
            sizes["total"],
            float(sizes["total_sum"] or 0),
        ),
    )
    lines += _ingest_lines()
    failed, serving_last_good = failure_counts()
    lines += _family(
        "readiness_evaluation_failures_total",
        "counter",
        "Readiness evaluations that raised (a criterion, the lookups or the badges).",
        [("", {}, failed)],
    )
    lines += _family(
        "readiness_serving_last_good",
        "gauge",
        "1 while the newest evaluation failed and the last good one is served.",
        [("", {}, 1 if serving_last_good else 0)],
    )
    lines += _criteria_lines()
    return "\n".join(lines) + "\n"


STATUSES = ("met", "unmet", "at_risk", "stale")


def _criteria_lines() -> list[str]:

    try:
        evaluation = published()
    except Exception:
        log.exception("readiness evaluation failed for /metrics")
        return _family(
            "readiness_evaluation_errors",
            "gauge",
            "1 when readiness could not be evaluated.",
            [("", {}, 1)],
        )
    samples = []
    for transition in evaluation.get("transitions", []):
        for criterion in transition.get("criteria", []):
            for status in STATUSES:
                samples.append(
                    (
                        "",
                        {"criterion": criterion["key"], "status": status},
                        1 if criterion.get("status") == status else 0,
                    )
                )
    lines = _family(
        "criterion_status",
        "gauge",
        "1 for the current status of each graduation criterion.",
        samples,
    )
    stage = evaluation.get("stage")
    lines += _family(
        "stage",
        "gauge",
        "1 for the feature's current stage.",
        [("", {"stage": s}, 1 if s == stage else 0) for s in ("alpha", "beta", "stable")],
    )
    return lines
