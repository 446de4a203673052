"""Evidence heads: for every cluster, plugin and schedule, the ids of its newest evidence of
each kind, pre-aggregated into one row each (models.EvidenceHead).

A readiness evaluation reads these rows (one query) instead of ranking each cluster's,
plugin's and schedule's whole history with correlated "LIMIT 1" lookups, so its cost does not
grow with the history. The rows hold candidates only, never a verdict: whether one counts
(its age, its release, its cluster's approval) is decided when the evaluation runs.

The slots are defined here once; the plain lookups (what the property test compares the
evaluation with) annotate the same expressions on the fly.

Kept up to date when evidence changes:
- a run's or a submission's save or delete refreshes its scopes (dashboard/domain/apps.py);
- code that moves runs with a bulk UPDATE calls refresh_runs() (dashboard.domain.runs,
  dashboard.domain.trust, workers);
- every readiness recording (after each run, and every minute from beat) rebuilds them all,
  so a change made behind the application's back (a script, a SQL console) lasts a minute.
`stale()` lists the rows that differ from the history (tests check it after each test).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connection, connections, transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.signals import post_delete

from dashboard.domain.models import Cluster, EvidenceHead, Plugin, Run, Schedule, Submission

TERMINAL = [Run.State.FINISHED, Run.State.ERROR, Run.State.CANCELLED]


def _newest(qs: Any, outer: str, order: str) -> Subquery:
    return Subquery(qs.filter(**{outer: OuterRef("pk")}).order_by(order, "-id").values("id")[:1])


def cluster_slots() -> dict[str, Subquery]:
    """Per cluster: its newest connectivity run whatever its trust (shown), and its newest
    qualifying and pod-to-service-passed runs among those that may count (an unverified
    self-reported or a withdrawn run must not hide an older one that counts)."""
    runs = Run.objects.filter(state=Run.State.FINISHED)
    trusted = runs.exclude(trigger=Run.Trigger.AGENT, agent_verified_at__isnull=True).filter(
        withdrawn_at__isnull=True
    )
    return {
        "c_run": _newest(runs.filter(has_connectivity__in=[True]), "cluster", "-finished"),
        "q_run": _newest(trusted.filter(qualifying__in=[True]), "cluster", "-finished"),
        "p_run": _newest(trusted.filter(pod_to_service_passed__in=[True]), "cluster", "-finished"),
    }


def plugin_slots() -> dict[str, Subquery]:
    """Per plugin: its newest verified, standing submissions that qualify and that carry
    connectivity results."""
    subs = Submission.objects.filter(status=Submission.Status.VERIFIED, withdrawn_at__isnull=True)
    return {
        "q_sub": _newest(subs.filter(qualifying__in=[True]), "plugin", "-created"),
        "c_sub": _newest(subs.filter(has_connectivity__in=[True]), "plugin", "-created"),
    }


def periodic_runs() -> int:
    return int(settings.READINESS_PERIODIC_RUNS)


def schedule_slots(n: int | None = None) -> dict[str, Subquery]:
    """Per schedule: its last n terminal scheduled runs (run_0 the newest), as n "LIMIT 1
    OFFSET i" lookups on the (schedule, -created) index."""
    n = periodic_runs() if n is None else n
    recent = Run.objects.filter(
        schedule=OuterRef("pk"), trigger=Run.Trigger.PERIODIC, state__in=TERMINAL
    ).order_by("-created", "-id")
    return {f"run_{i}": Subquery(recent.values("id")[i : i + 1]) for i in range(n)}


# --- computing and storing ------------------------------------------------------------------

_SCOPES: dict[str, tuple[Any, Any]] = {
    "cluster": (Cluster, cluster_slots),
    "plugin": (Plugin, plugin_slots),
    "schedule": (Schedule, schedule_slots),
}


def _heads_of(scope: str, row: dict[str, Any]) -> dict[str, Any]:
    if scope == "schedule":
        n = periodic_runs()
        ids = [row[f"run_{i}"] for i in range(n)]
        return {"n": n, "runs": [i for i in ids if i is not None]}
    return {k: v for k, v in row.items() if k != "id" and v is not None}


def compute(scope: str, ids: Iterable[int] | None = None) -> dict[int, dict[str, Any]]:
    """The heads of these clusters, plugins or schedules (all of them when `ids` is None), from
    the history itself."""
    model, slots = _SCOPES[scope]
    qs = model.objects.all()
    if ids is not None:
        qs = qs.filter(pk__in=list(ids))
    annotations = slots()
    return {
        row["id"]: _heads_of(scope, row)
        for row in qs.annotate(**annotations).values("id", *annotations)
    }


def _store(scope: str, heads: dict[int, dict[str, Any]]) -> None:
    if not heads:
        return
    # In the order of their scope's id: two writers upserting the same rows take their locks
    # in one order, and never wait on each other in a circle.
    rows = [EvidenceHead(**{f"{scope}_id": pk}, heads=heads[pk]) for pk in sorted(heads)]
    EvidenceHead.objects.bulk_create(
        rows, update_conflicts=True, unique_fields=[scope], update_fields=["heads"]
    )


# pg_advisory_xact_lock's key: "heads" in ASCII.
_LOCK = 0x6865616473


@contextmanager
def _serialized() -> Iterator[None]:
    """One writer of heads at a time, its reading done after it holds the lock (PostgreSQL):
    otherwise a rebuild that read the history before a run's end committed could store its
    older answer over the refresh that run's end made. SQLite writes one at a time anyway."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK])
        yield


def refresh(
    clusters: Iterable[int | None] = (),
    plugins: Iterable[int | None] = (),
    schedules: Iterable[int | None] = (),
) -> None:
    """Recomputes the heads of these scopes (ids of scopes that no longer exist are ignored)."""
    wanted = {
        scope: {i for i in ids if i}
        for scope, ids in (("cluster", clusters), ("plugin", plugins), ("schedule", schedules))
    }
    if not any(wanted.values()):
        return
    with _serialized():
        for scope, ids in wanted.items():
            if ids:
                _store(scope, compute(scope, ids))


def refresh_runs(run_ids: Iterable[int]) -> None:
    """After a bulk UPDATE of these runs (which sends no signal): their clusters' and
    schedules' heads."""
    scopes = list(Run.objects.filter(pk__in=list(run_ids)).values_list("cluster_id", "schedule_id"))
    refresh(clusters=[c for c, _s in scopes], schedules=[s for _c, s in scopes])


def rebuild() -> None:
    """Every scope's heads from the history (each readiness recording; the migration)."""
    with _serialized():
        for scope in _SCOPES:
            _store(scope, compute(scope))


def stale() -> list[str]:
    """The stored rows that differ from the history, in words ([] when every row is right).
    A scope with no row must have no evidence."""
    stored = {
        scope: dict(
            EvidenceHead.objects.filter(**{f"{scope}__isnull": False}).values_list(
                f"{scope}_id", "heads"
            )
        )
        for scope in _SCOPES
    }
    found = []
    for scope in _SCOPES:
        for pk, heads in compute(scope).items():
            empty = not any(heads.get(k) for k in heads if k != "n")
            have = stored[scope].get(pk)
            if have is None and empty:
                continue
            if have != heads:
                found.append(f"{scope} {pk}: stored {_words(have)}, history says {_words(heads)}")
    return found


def _words(heads: dict[str, Any] | None) -> str:
    """A row's slots in a fixed order (PostgreSQL's jsonb keeps its own)."""
    return "none" if heads is None else json.dumps(heads, sort_keys=True)


# --- reading ---------------------------------------------------------------------------------


def read() -> dict[str, dict[int, Any]]:
    """Every stored row in one query: {"cluster": {id: (plugin_id, heads)}, "plugin": {id:
    heads}, "schedule": {id: heads}}."""
    out: dict[str, dict[int, Any]] = {"cluster": {}, "plugin": {}, "schedule": {}}
    for (
        cluster_id,
        plugin_of_cluster,
        plugin_id,
        schedule_id,
        heads,
    ) in EvidenceHead.objects.values_list(
        "cluster_id", "cluster__plugin_id", "plugin_id", "schedule_id", "heads"
    ):
        if cluster_id is not None:
            out["cluster"][cluster_id] = (plugin_of_cluster, heads)
        elif plugin_id is not None:
            out["plugin"][plugin_id] = heads
        else:
            out["schedule"][schedule_id] = heads
    return out


# --- signals (dashboard/domain/apps.py) -------------------------------------------------------


def _deleting_itself(sender: type, kwargs: dict[str, Any]) -> bool:
    """post_delete: the object was deleted for itself (its own delete() or a queryset of its
    model), not as part of deleting its cluster or plugin, whose heads go with it."""
    if kwargs.get("signal") is not post_delete:
        return True
    origin = kwargs.get("origin")
    return isinstance(origin, sender) or (isinstance(origin, QuerySet) and origin.model is sender)


def on_run_changed(sender: type, instance: Run, **kwargs: Any) -> None:
    # A queued or running run is nobody's head; only its end (or a later edit) moves them.
    if instance.state in TERMINAL and _deleting_itself(sender, kwargs):
        refresh(clusters=[instance.cluster_id], schedules=[instance.schedule_id])


def on_submission_changed(sender: type, instance: Submission, **kwargs: Any) -> None:
    if _deleting_itself(sender, kwargs):
        refresh(plugins=[instance.plugin_id])


def on_migrated(sender: Any, **kwargs: Any) -> None:
    """post_migrate: every row from the history, with the models as they are now (a migration
    could only use the models of its own time). Not when migrating back to before the table."""
    connection = connections[kwargs.get("using", "default")]
    if EvidenceHead._meta.db_table in connection.introspection.table_names():
        rebuild()
