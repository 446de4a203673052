"""Finding candidate evidence in a bounded number of queries, as policy Items.

The lookups are "LIMIT 1" subqueries on indexes (the newest run of each kind per cluster, the
newest verified submission of each kind per plugin and proxier) plus the newest submissions,
so an evaluation costs the same number of queries however long the history is. They only find
candidates: whether one counts is dashboard.domain.policy's answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

from django.db import connection
from django.db.models import Case, F, Q, TextField, Value, When, Window
from django.db.models.functions import Cast, RowNumber

from dashboard.domain import heads, policy
from dashboard.domain.agreement import contradictions
from dashboard.domain.catalog import Proxier
from dashboard.domain.lookups import any_of
from dashboard.domain.models import Cluster, Plugin, Run, Submission, TestResult
from dashboard.domain.policy import Item
from kernel.vocabulary import PROXIERS

# Per plugin, the newest connectivity submissions shown beside the indexed lookups.
RECENT_SUBMISSIONS = 20

_RUN_FIELDS = (
    "id",
    "cluster_id",
    "state",
    "finished",
    "plugin_id",
    "plugin_version",
    "kubernetes_version",
    "kubernetes_minor",
    "proxier",
    "proxier_detected",
    "battery",
    "trigger",
    "agent_verified_at",
    "emulated",
    "cluster__name",
    "cluster__enabled",
    "cluster__approved",
    "cluster__emulated",
    "cluster__lab",
    "withdrawn_at",
    "withdrawn_by",
    "withdrawn_reason",
)
_SUB_FIELDS = (
    "id",
    "status",
    "plugin_id",
    "plugin_version",
    "kubernetes_version",
    "kubernetes_minor",
    "proxier",
    "results",
    "run_at",
    "run_at_source",
    "emulated",
    "withdrawn_at",
    "withdrawn_by",
    "withdrawn_reason",
)


# The keys of policy.RUN_FINGERPRINT_KEYS as the database keeps them (Run.fp_<key>), read as
# their JSON text: a handful of distinct values (true, "iptables", ...) over hundreds of runs,
# decoded once each (_json_value) instead of once per row by JSONField (8 ms of a year's load).
_FP = {f"fp_text_{key}": Cast(f"fp_{key}", TextField()) for key in policy.RUN_FINGERPRINT_KEYS}


@functools.lru_cache(maxsize=512)
def _json_scalar(text: str) -> Any:
    return json.loads(text)


def _json_value(text: str) -> Any:
    """The value of a JSON text; a scalar's is shared between rows (immutable), an object or
    array is decoded afresh for each."""
    if text[:1] in ("{", "["):
        return json.loads(text)
    return _json_scalar(text)


def fingerprint_of(row: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint as far as its stored keys (Run.fp_*, as JSON text) go: the keys it has
    (a key that is absent, or null, reads as absent, which is how `.get()` on the whole
    document sees it)."""
    out = {}
    for key in policy.RUN_FINGERPRINT_KEYS:
        text = row[f"fp_text_{key}"]
        if text is not None:
            value = _json_value(text)
            if value is not None:
                out[key] = value
    return out


def plugins_by_id() -> dict[int, Any]:
    return {p.id: p for p in Plugin.objects.all()}


def _Row(**fields: Any) -> Any:
    """A run, its cluster or a submission as dashboard.domain.policy reads it, from a values() row."""
    return SimpleNamespace(**fields)


_CLUSTER_FIELDS = ("name", "enabled", "approved", "emulated", "lab")


def load(
    run_ids: Iterable[int | None],
    submission_ids: Iterable[int | None],
    plugins: dict[int, Any] | None = None,
    store: dict[tuple[str, int], Item] | None = None,
) -> dict[tuple[str, int], Item]:
    """Items for these runs and submissions: at most three queries (runs, their results,
    submissions). With `store` (one evaluation's items so far), what it holds is not read
    again and what is read is added to it."""
    plugins = plugins if plugins is not None else plugins_by_id()
    store = store if store is not None else {}
    facts = {pid: policy.plugin_facts(p) for pid, p in plugins.items()}
    rids = {i for i in run_ids if i}
    sids = {i for i in submission_ids if i}
    missing_runs = {i for i in rids if ("run", i) not in store}
    missing_subs = {i for i in sids if ("submission", i) not in store}
    if missing_runs:
        outcomes: dict[int, dict[str, str]] = {}
        reasons: dict[int, dict[str, str]] = {}
        for run_id, key, outcome, reason in TestResult.objects.filter(
            any_of("run_id", missing_runs)
        ).values_list("run_id", "test_key", "outcome", "reason"):
            outcomes.setdefault(run_id, {})[key] = outcome
            reasons.setdefault(run_id, {})[key] = reason[:300]
        own = [f for f in _RUN_FIELDS if not f.startswith("cluster__")]
        rows: list[dict[str, Any]] = []
        for row in (
            Run.objects.filter(any_of("id", missing_runs))
            .order_by()  # kept by id: no sort
            .values(*_RUN_FIELDS, **_FP)
        ):
            rows.append(row)
        against = contradictions(rows)
        for row in rows:
            run = _Row(**{f: row[f] for f in own})
            run.fingerprint = fingerprint_of(row)
            run.cluster = _Row(**{f: row[f"cluster__{f}"] for f in _CLUSTER_FIELDS})
            store[("run", run.id)] = policy.run_item(
                run,
                outcomes.get(run.id, {}),
                reasons.get(run.id, {}),
                facts[run.plugin_id],
                against.get(run.id),
            )
    if missing_subs:
        for s in (
            Submission.objects.filter(any_of("id", missing_subs)).order_by().values(*_SUB_FIELDS)
        ):
            sub = _Row(**s)
            store[("submission", sub.id)] = policy.submission_item(sub, facts[sub.plugin_id])
    out = {("run", i): store[("run", i)] for i in rids if ("run", i) in store}
    out.update(
        {("submission", i): store[("submission", i)] for i in sids if ("submission", i) in store}
    )
    return out


def newest_first(items: Iterable[Item]) -> list[Item]:
    """Items newest first; the same time ordered by kind and id, so that the order never
    depends on the order rows came back in."""
    return sorted(items, key=lambda i: (i.when is not None, i.when, i.kind, i.id), reverse=True)


def connectivity_candidates(plugins: dict[int, Any], plugin_id: int | None = None) -> list[Item]:
    """Connectivity evidence worth assessing: per cluster, its newest connectivity run, newest
    qualifying run and newest run with pod-to-service passed; per plugin and per proxier, the
    newest verified submissions of those kinds; and the newest connectivity submissions
    (pending ones included: they are shown, never counted). With `plugin_id`, that plugin's:
    what its badge assesses.

    The plain lookups, one plugin or the fleet at a time (a plugin's page, the plain evaluation
    the property test compares with); an evaluation uses ConnectivitySets, the same answer for
    the fleet and every plugin at once."""
    clusters = Cluster.objects.all()
    if plugin_id is not None:
        clusters = clusters.filter(plugin_id=plugin_id)
    slots = heads.cluster_slots()
    ids = list(clusters.annotate(**slots).values_list(*slots))
    run_ids = {i for row in ids for i in row if i}

    subs = Submission.objects.filter(status=Submission.Status.VERIFIED, withdrawn_at__isnull=True)
    plugin_rows = Plugin.objects.all() if plugin_id is None else Plugin.objects.filter(pk=plugin_id)
    sub_ids: set[int] = set()
    sub_slots = heads.plugin_slots()
    for row in plugin_rows.annotate(**sub_slots).values_list(*sub_slots):
        sub_ids.update(i for i in row if i)
    recent = Submission.objects.filter(
        has_connectivity__in=[True],
        status__in=[Submission.Status.VERIFIED, Submission.Status.PENDING],
    )
    if plugin_id is not None:
        recent = recent.filter(plugin_id=plugin_id)
    else:
        for proxier in PROXIERS:
            newest = (
                subs.filter(proxier=proxier, pod_to_service_passed__in=[True])
                .order_by("-created", "-id")
                .values_list("id", flat=True)
                .first()
            )
            if newest:
                sub_ids.add(newest)
    sub_ids.update(
        recent.order_by("-created", "-id").values_list("id", flat=True)[:RECENT_SUBMISSIONS]
    )
    return newest_first(load(run_ids, sub_ids, plugins).values())


class ConnectivitySets:
    """The candidates of connectivity_candidates() for the whole fleet and for every plugin at
    once, in a fixed number of queries (five lookups and one load), sharing `store`."""

    def __init__(
        self,
        plugins: dict[int, Any] | None,
        store: dict[tuple[str, int], Item] | None = None,
        stored_heads: dict[str, dict[int, Any]] | None = None,
    ) -> None:
        """`plugins`: by id, or None to read them here; `stored_heads`: heads.read()'s, or
        None to read them here."""
        self.plugins = plugins
        self.heads = stored_heads
        self.store = store if store is not None else {}
        self._found: tuple[Any, ...] | None = None

    def _lookups(self) -> tuple[Any, ...]:
        if self._found is not None:
            return self._found
        # Per cluster and per plugin, its newest evidence of each kind: the pre-aggregated rows
        # (dashboard.domain.heads), one query whatever the history.
        stored = self.heads if self.heads is not None else heads.read()
        cluster_rows = [
            (plugin_id, h.get("c_run"), h.get("q_run"), h.get("p_run"))
            for plugin_id, h in stored["cluster"].values()
        ]
        if self.plugins is None:
            self.plugins = plugins_by_id()
        plugin_rows = [
            (
                pid,
                stored["plugin"].get(pid, {}).get("q_sub"),
                stored["plugin"].get(pid, {}).get("c_sub"),
            )
            for pid in self.plugins
        ]
        # Per plugin its newest connectivity submissions (verified or pending), per proxier the
        # newest verified one with pod-to-service passed; ranked here.
        found = _newest_submissions()
        rows = sorted({r[0]: r for r in found}.values(), key=lambda r: (r[2], r[0]), reverse=True)
        proxier_subs, recent, seen_proxiers = [], [], set()
        per_plugin: dict[int, int] = {}
        for sid, pid, created, mode, status, connectivity, passed in rows:
            if status == Submission.Status.VERIFIED and passed and mode in Proxier.values:
                if mode not in seen_proxiers:
                    seen_proxiers.add(mode)
                    proxier_subs.append(sid)
            if connectivity and status in _SHOWN_STATUSES:
                if per_plugin.get(pid, 0) < RECENT_SUBMISSIONS:
                    per_plugin[pid] = per_plugin.get(pid, 0) + 1
                    recent.append((sid, pid, created))
        self._found = (cluster_rows, plugin_rows, proxier_subs, recent)
        return self._found

    def all_plugins(self) -> dict[int, Any]:
        self._lookups()
        assert self.plugins is not None
        return self.plugins

    def _items(self, run_ids: set[int], sub_ids: set[int]) -> list[Item]:
        return newest_first(load(run_ids, sub_ids, self.all_plugins(), self.store).values())

    def candidate_ids(self) -> tuple[set[int], set[int]]:
        """Every run and submission the fleet's and the plugins' candidates are made of."""
        return self._all_ids()

    def _all_ids(self) -> tuple[set[int], set[int]]:
        cluster_rows, plugin_rows, proxier_subs, recent = self._lookups()
        run_ids = {i for row in cluster_rows for i in row[1:] if i}
        sub_ids = {i for row in plugin_rows for i in row[1:] if i}
        sub_ids.update(proxier_subs)
        sub_ids.update(i for i, _p, _c in recent)
        return run_ids, sub_ids

    def overall(self) -> list[Item]:
        cluster_rows, plugin_rows, proxier_subs, recent = self._lookups()
        # Loaded once with every plugin's: the badges then read no more.
        self._items(*self._all_ids())
        run_ids = {i for row in cluster_rows for i in row[1:] if i}
        sub_ids = {i for row in plugin_rows for i in row[1:] if i}
        sub_ids.update(proxier_subs)
        # The fleet's newest: within the union of every plugin's newest.
        newest = sorted(recent, key=lambda r: (r[2], r[0]), reverse=True)[:RECENT_SUBMISSIONS]
        sub_ids.update(i for i, _p, _c in newest)
        return self._items(run_ids, sub_ids)

    def of_plugin(self, plugin_id: int) -> list[Item]:
        cluster_rows, plugin_rows, _proxier_subs, recent = self._lookups()
        if not self.store:
            self._items(*self._all_ids())
        run_ids = {i for row in cluster_rows if row[0] == plugin_id for i in row[1:] if i}
        sub_ids = {i for row in plugin_rows if row[0] == plugin_id for i in row[1:] if i}
        sub_ids.update(i for i, p, _c in recent if p == plugin_id)
        return self._items(run_ids, sub_ids)


_NEWEST_SUB = [F("created").desc(), F("id").desc()]

_SUB_COLUMNS = (
    "id",
    "plugin_id",
    "created",
    "proxier",
    "status",
    "has_connectivity",
    "pod_to_service_passed",
)
_SHOWN_STATUSES = (Submission.Status.VERIFIED, Submission.Status.PENDING)


def _newest_submissions() -> list[tuple[Any, ...]]:
    """Rows (_SUB_COLUMNS) holding, per plugin and status, its newest RECENT_SUBMISSIONS
    connectivity submissions (verified or pending), and per proxier its newest verified one
    with pod-to-service passed (rows may repeat; other rows may come along: the caller ranks).

    PostgreSQL: one query of LATERAL "LIMIT n" lookups, each an index range of its own
    ((plugin, status, has_connectivity, -created) and (proxier, status, pod_to_service_passed,
    -created)), so its cost does not grow with the number of submissions (a window over every
    submission took 13 ms at 2,000). Elsewhere (SQLite, no LATERAL): that window."""
    if connection.vendor == "postgresql":
        table, columns = Submission._meta.db_table, ", ".join(f"s.{c}" for c in _SUB_COLUMNS)
        statuses = ", ".join(["(%s)"] * len(_SHOWN_STATUSES))
        modes = ", ".join(["(%s)"] * len(Proxier.values))
        sql = (
            f"SELECT {columns} FROM {Plugin._meta.db_table} p CROSS JOIN (VALUES {statuses})"
            f" AS st(status) CROSS JOIN LATERAL (SELECT * FROM {table} s WHERE s.plugin_id = p.id"
            " AND s.status = st.status AND s.has_connectivity"
            " ORDER BY s.created DESC, s.id DESC LIMIT %s) s"
            f" UNION ALL SELECT {columns} FROM (VALUES {modes}) AS px(mode) CROSS JOIN LATERAL"
            f" (SELECT * FROM {table} s WHERE s.proxier = px.mode AND s.status = %s"
            " AND s.pod_to_service_passed ORDER BY s.created DESC, s.id DESC LIMIT 1) s"
        )
        params = [*_SHOWN_STATUSES, RECENT_SUBMISSIONS, *Proxier.values, Submission.Status.VERIFIED]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
    shown = Q(has_connectivity__in=[True], status__in=_SHOWN_STATUSES)
    per_proxier = Q(
        status=Submission.Status.VERIFIED,
        proxier__in=Proxier.values,
        pod_to_service_passed__in=[True],
    )

    def kind(q: Q) -> Case:
        return Case(When(q, then=Value(1)), default=Value(0))

    return list(
        Submission.objects.filter(shown | per_proxier)
        .annotate(
            shown_rank=Window(
                RowNumber(), partition_by=[F("plugin_id"), kind(shown)], order_by=_NEWEST_SUB
            ),
            proxier_rank=Window(
                RowNumber(), partition_by=[F("proxier"), kind(per_proxier)], order_by=_NEWEST_SUB
            ),
        )
        .filter(Q(shown_rank__lte=RECENT_SUBMISSIONS) | Q(proxier_rank=1))
        .values_list(*_SUB_COLUMNS)
    )


def store_of(ctx: Any) -> dict[tuple[str, int], Item] | None:
    """One evaluation's items, each read once whichever criterion asks first (None for the
    plain evaluation: every criterion reads its own)."""
    if ctx.plain:
        return None
    store: dict[tuple[str, int], Item] = ctx.memo("items", dict)
    return store


def connectivity(ctx: Any) -> list[Item]:
    """The fleet's connectivity candidates, once per evaluation (the plain lookups for the
    plain evaluation)."""
    if ctx.plain:
        found: list[Item] = ctx.memo(
            "connectivity", lambda: connectivity_candidates(ctx.memo("plugins", plugins_by_id))
        )
        return found
    found = ctx.memo("connectivity", lambda: connectivity_sets(ctx).overall())
    return found


def connectivity_sets(ctx: Any) -> ConnectivitySets:
    """One evaluation's connectivity candidates (the criteria's and every plugin's badge). The
    evaluation's plugins (ctx.memo("plugins")) come with their lookups when not read yet."""

    def make() -> ConnectivitySets:
        known = ctx._cache.get("plugins")
        sets = ConnectivitySets(known, ctx.memo("items", dict), ctx.memo("heads", heads.read))
        if known is None:
            ctx.memo("plugins", sets.all_plugins)
        return sets

    sets: ConnectivitySets = ctx.memo("connectivity-sets", make)
    return sets
