"""The matrix's evidence: plugins × proxier modes × Kubernetes minor, and for each catalog test
the sources a cell shows (our runs, vendor files, self-reported runs).

Sources are our own finished runs and vendor submissions. The page answers in a fixed number
of queries and time whatever the history: every lookup is an "ORDER BY … LIMIT" on an index,
either exact (the newest run of each battery of a cluster, the newest connectivity run or
submission of a plugin, the newest submission of each status per plugin and proxier). How a
cell looks is the page's business (dashboard/web/views/matrix.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, OuterRef, Subquery
from django.utils.timezone import now

from dashboard.domain import compiled
from dashboard.domain.catalog import ALL_KEYS, Battery, Outcome, Proxier, keys_of
from dashboard.domain.ingest.upstream_names import fed_keys
from dashboard.domain.lookups import JSONKey, any_of
from dashboard.domain.models import Cluster, Plugin, Run, Submission, TestResult
from kernel.vocabulary import PROXIERS

RUN_TRUSTS = ("run", "agent", "agent-pending")  # sources that are runs (the others: files)


@dataclass
class Source:
    trust: str  # run | verified | pending | agent | agent-pending (self-reported runs)
    id: int
    when: datetime
    plugin_id: int
    proxier: str
    kubernetes_version: str
    outcomes: dict[str, str]
    reasons: dict[str, str] = field(default_factory=dict)
    keys: tuple[str, ...] = (
        ALL_KEYS  # the tests this source could speak about (a run: its battery's)
    )
    name: str = ""  # what a cell names: the cluster of a run, "submission N" for a file
    emulated: bool = False
    cluster_id: int | None = None  # a run's cluster
    battery: str = ""  # a run's battery
    # Our battery's run: upstream's e2e.test's newest run on the same cluster and release, when
    # both are in the evidence window (issue 38: both outcomes shown, a disagreement flagged).
    upstream: Source | None = None

    @property
    def url(self) -> str:
        return f"/runs/{self.id}/" if self.trust in RUN_TRUSTS else f"/submissions/{self.id}/"

    def outcome(self, key: str) -> str:
        return self.outcomes.get(key) or Outcome.NOT_RUN

    @property
    def minor(self) -> str:
        return minor_of(self.kubernetes_version)


def minor_of(version: str) -> str:
    """ "v1.31.2" -> "1.31"; rows group by it, so one row never mixes releases."""
    parts = version.lstrip("v").split(".")
    return (
        ".".join(parts[:2])
        if len(parts) >= 2 and all(p.isdigit() for p in parts[:2])
        else (version or "?")
    )


def _cluster_runs() -> tuple[set[int], set[int]]:
    """Per cluster, the newest finished run covering the basic and the connectivity tests, and
    the newest finished run of upstream's e2e.test: one "LIMIT 1" step each on the (cluster,
    state, battery, -created) index (compiled once: dashboard.domain.compiled)."""
    ids: set[int] = set()
    upstream: set[int] = set()
    for basic_run, conn_run, upstream_run in compiled.rows(
        ("matrix-cluster-runs",), _newest_cluster_runs
    ):
        ids.update(i for i in (basic_run, conn_run) if i)
        if upstream_run:
            upstream.add(upstream_run)
    return ids, upstream


def _newest_cluster_runs() -> Any:
    finished = Run.objects.filter(cluster=OuterRef("pk"), state=Run.State.FINISHED).order_by(
        "-created"
    )
    return Cluster.objects.annotate(
        basic_run=Subquery(
            finished.filter(battery__in=[Battery.BASIC, Battery.ALL]).values("id")[:1]
        ),
        conn_run=Subquery(
            finished.filter(battery__in=[Battery.CONNECTIVITY, Battery.ALL]).values("id")[:1]
        ),
        upstream_run=Subquery(finished.filter(battery__in=[Battery.UPSTREAM]).values("id")[:1]),
    ).values_list("basic_run", "conn_run", "upstream_run")


PLUGIN_FIELDS = ("id", "slug", "name", "in_tree", "implements_network_policy")


def _plugins() -> tuple[list[dict[str, Any]], set[int], set[int]]:
    """The plugins, and in the same query the sources every plugin's rows may show, whatever
    their age: its newest connectivity run, verified and pending submission, and the newest
    verified and pending submission of each (plugin, proxier): one "LIMIT 1" step each on the
    (plugin, state|status, has_connectivity, -finished|-created) and (plugin, proxier, status,
    -created) indexes.

    `has_connectivity__in=[True]` rather than `=True`: SQLite compiles the latter to a bare
    column test that its planner cannot match to those indexes, and would sort the plugin's
    whole history instead.
    """

    plugins: list[dict[str, Any]] = []
    run_ids: set[int] = set()
    sub_ids: set[int] = set()
    # Compiled once (dashboard.domain.compiled): eleven subqueries per plugin, no parameter
    # that changes between requests.
    for values in compiled.rows(("matrix-plugins",), _plugin_sources):
        row = dict(zip(_PLUGIN_COLUMNS, values, strict=True))
        run_ids.update(row[k] for k in _PLUGIN_RUNS if row[k])
        sub_ids.update(row[k] for k in _PLUGIN_SUBMISSIONS if row[k])
        plugins.append({k: row[k] for k in PLUGIN_FIELDS})
    return plugins, run_ids, sub_ids


def _newest(model: Any, order: Any, **filters: Any) -> Subquery:
    qs = model.objects.filter(plugin=OuterRef("pk"), **filters)
    return Subquery(qs.order_by(order).values("id")[:1])


# The newest verified and pending submission of each (plugin, proxier): column -> (mode, status).
_PROXIER_SLOTS = {
    f"{proxier}_{status}": (proxier, status)
    for proxier in Proxier.values
    for status in (Submission.Status.VERIFIED, Submission.Status.PENDING)
}
_PLUGIN_RUNS = ("conn_run",)
_PLUGIN_SUBMISSIONS = ("conn_verified", "conn_pending", *_PROXIER_SLOTS)
_PLUGIN_COLUMNS = (*PLUGIN_FIELDS, *_PLUGIN_RUNS, *_PLUGIN_SUBMISSIONS)


def _plugin_sources() -> Any:
    # NULLS LAST: only the run_plugin_conn_newest index gives this order (models.Run).
    by_finished = F("finished").desc(nulls_last=True)
    runs = {
        "conn_run": _newest(Run, by_finished, state=Run.State.FINISHED, has_connectivity__in=[True])
    }
    submissions = {
        "conn_verified": _newest(
            Submission, "-created", status=Submission.Status.VERIFIED, has_connectivity__in=[True]
        ),
        "conn_pending": _newest(
            Submission, "-created", status=Submission.Status.PENDING, has_connectivity__in=[True]
        ),
        **{
            column: _newest(Submission, "-created", proxier=proxier, status=status)
            for column, (proxier, status) in _PROXIER_SLOTS.items()
        },
    }
    return (
        Plugin.objects.order_by("name")
        .annotate(**runs, **submissions)
        .values_list(*_PLUGIN_COLUMNS)
    )


def demonstrated(proxier_detected: str, proxier: str, service_dataplane: Any) -> str:
    """The proxier a run's row is under: the mode its Service's rules demonstrated (contract:
    demonstrated proxier), else the dataplane that carried the traffic instead ("ebpf
    (cilium)": the fingerprint's `service_dataplane`), else the registered mode, marked as not
    demonstrated."""
    if proxier_detected:
        return proxier_detected
    dataplane = str(service_dataplane or "")
    if dataplane and dataplane not in PROXIERS:
        return dataplane[:60]
    return f"{proxier} (not demonstrated)"


def _proxier_order(label: str) -> tuple[int, str]:
    """The proxier modes in the vocabulary's order, then any other dataplane by name."""
    return (PROXIERS.index(label), "") if label in PROXIERS else (len(PROXIERS), label)


def load_sources(
    plugin_runs: set[int], plugin_subs: set[int], since: datetime | None = None
) -> list[Source]:
    """The sources the matrix shows: the plugins' (`_plugins`) and every cluster's newest runs,
    each of our battery's runs with upstream's newest on its cluster beside it (`upstream`:
    same release, both finished after `since`, the evidence window's start)."""
    cluster_runs, upstream_runs = _cluster_runs()
    shown_runs = cluster_runs | plugin_runs
    run_ids = sorted(shown_runs | upstream_runs)
    sub_ids = sorted(plugin_subs)
    sources: list[Source] = []
    if run_ids:
        results: dict[int, dict[str, tuple[str, str]]] = {}
        for run_id, key, outcome, reason in TestResult.objects.filter(
            any_of("run_id", run_ids)
        ).values_list("run_id", "test_key", "outcome", "reason"):
            results.setdefault(run_id, {})[key] = (outcome, reason)
        # Plain rows, not model instances: a year's matrix reads hundreds of runs. (Newest first,
        # the models' order, as before: a cell's ties go to the first source.)
        for r in (
            Run.objects.filter(any_of("id", run_ids))
            # one key of the fingerprint, not the whole document (kilobytes per run)
            .annotate(service_dataplane=JSONKey("fingerprint", "service_dataplane"))
            .values(
                "id",
                "plugin_id",
                "proxier",
                "kubernetes_version",
                "battery",
                "finished",
                "created",
                "emulated",
                "trigger",
                "agent_verified_at",
                "proxier_detected",
                "service_dataplane",
                "cluster__name",
                "cluster_id",
            )
        ):
            got = results.get(r["id"], {})
            keys = keys_of(r["battery"])
            kind = "run"
            if r["trigger"] == Run.Trigger.AGENT:
                kind = "agent" if r["agent_verified_at"] else "agent-pending"
            sources.append(
                Source(
                    kind,
                    r["id"],
                    r["finished"] or r["created"],
                    r["plugin_id"],
                    demonstrated(r["proxier_detected"], r["proxier"], r["service_dataplane"]),
                    r["kubernetes_version"],
                    {k: got[k][0] for k in keys if k in got},
                    {k: got[k][1] for k in keys if k in got},
                    keys,
                    name=r["cluster__name"],
                    emulated=r["emulated"],
                    cluster_id=r["cluster_id"],
                    battery=r["battery"],
                )
            )
        sources = _pair_batteries(sources, shown_runs, upstream_runs, since)
    if sub_ids:
        for s in Submission.objects.filter(any_of("id", sub_ids)).values(
            "id",
            "plugin_id",
            "proxier",
            "kubernetes_version",
            "status",
            "results",
            "created",
            "emulated",
        ):
            trust = "verified" if s["status"] == Submission.Status.VERIFIED else "pending"
            results_of = s["results"] or {}
            outcomes = {k: v.get("outcome", Outcome.NOT_RUN) for k, v in results_of.items()}
            reasons = {k: "; ".join(v.get("reasons", [])[:2]) for k, v in results_of.items()}
            sources.append(
                Source(
                    trust,
                    s["id"],
                    s["created"],
                    s["plugin_id"],
                    s["proxier"],
                    s["kubernetes_version"],
                    outcomes,
                    reasons,
                    name=f"submission {s['id']}",
                    emulated=s["emulated"],
                )
            )
    return sources


def _pair_batteries(
    runs: list[Source], shown_runs: set[int], upstream_runs: set[int], since: datetime | None
) -> list[Source]:
    """Each of our battery's runs gets its cluster's newest upstream run beside it when both are
    on the same release and in the window; an upstream run the matrix does not show otherwise
    is only beside (it has no demonstrated proxier: its own row would be a guess)."""
    newest_upstream = {
        s.cluster_id: s for s in runs if s.id in upstream_runs and s.battery == Battery.UPSTREAM
    }
    for s in runs:
        up = newest_upstream.get(s.cluster_id)
        if (
            up is not None
            and s.battery != Battery.UPSTREAM
            and s.trust == "run"
            and up.kubernetes_version == s.kubernetes_version
            and (since is None or (s.when >= since and up.when >= since))
        ):
            s.upstream = up
    return [s for s in runs if s.id in shown_runs]


def _pick(candidates: list[Source], key: str) -> Source | None:
    """The newest source with an outcome for key; else the newest source at all (shown as not run)."""
    decided = [s for s in candidates if s.outcome(key) != Outcome.NOT_RUN]
    pool = decided or candidates
    return max(pool, key=lambda s: s.when) if pool else None


@dataclass(frozen=True)
class Shown:
    """What one cell shows for a test: the main source (our newest run, else the newest
    verified file), the verified file beside our run, and a newer pending file or unverified
    self-reported run. A file never stands for a test it did not contain."""

    main: Source | None
    beside: Source | None
    pending: Source | None
    upstream: Source | None = None  # upstream's e2e.test beside our run (main)


def shown(sources: list[Source], key: str) -> Shown:
    ours = _pick([s for s in sources if s.trust in RUN_TRUSTS and s.trust != "agent-pending"], key)
    files = [s for s in sources if s.trust not in RUN_TRUSTS and s.outcome(key) != Outcome.NOT_RUN]
    vendor = _pick([s for s in files if s.trust == "verified"], key)
    pending = _pick(
        [s for s in files if s.trust == "pending"]
        + [s for s in sources if s.trust == "agent-pending" and s.outcome(key) != Outcome.NOT_RUN],
        key,
    )
    if pending is not None and any(
        m is not None and m.outcome(key) != Outcome.NOT_RUN and pending.when <= m.when
        for m in (ours, vendor)
    ):
        pending = None  # an older pending file adds nothing to what the cell says
    return Shown(
        main=ours or vendor,
        beside=vendor if ours is not None else None,
        pending=pending,
        # upstream's outcome only for a test it has a spec for at the release (issue 39)
        upstream=ours.upstream
        if ours is not None
        and ours.upstream is not None
        and key in _keys(ours.upstream)
        and key in fed_keys(ours.upstream.kubernetes_version)
        else None,
    )


def _keys(source: Source | None) -> tuple[str, ...]:
    return source.keys if source is not None else ()


def disagree(main: Source | None, upstream: Source | None, key: str) -> bool:
    """Both batteries gave a verdict on key, and not the same one."""
    if main is None or upstream is None:
        return False
    verdicts = (Outcome.PASSED, Outcome.FAILED)
    a, b = main.outcome(key), upstream.outcome(key)
    return a in verdicts and b in verdicts and a != b


@dataclass(frozen=True)
class Row:
    plugin: Any  # a dict: id, slug, name, in_tree, implements_network_policy
    proxier: str | None
    minor: str | None
    cells: dict[str, Shown]  # by catalog key, in catalog order
    kubernetes_versions: list[str]
    first: bool  # the plugin's first row


def rows(since: datetime | None = None) -> list[Row]:
    """Rows: plugin × proxier × Kubernetes minor, so a row never mixes releases; each cell still
    names the cluster or submission it comes from. `since`: the evidence window's start, for
    pairing our runs with upstream's (default: READINESS_FRESH_DAYS before now)."""
    if since is None:
        since = now() - timedelta(days=int(settings.READINESS_FRESH_DAYS))
    plugins, plugin_runs, plugin_subs = _plugins()
    groups: dict[tuple[int, str, str], list[Source]] = {}
    for s in load_sources(plugin_runs, plugin_subs, since):
        groups.setdefault((s.plugin_id, s.proxier, s.minor), []).append(s)
    out = []
    for p in plugins:
        keys = sorted(
            ((m, minor) for (pid, m, minor) in groups if pid == p["id"]),
            key=lambda k: (
                _proxier_order(k[0]),
                [-int(x) if x.isdigit() else 0 for x in k[1].split(".")],
            ),
        )
        for i, key in enumerate(keys or [None]):
            group = groups.get((p["id"], *key), []) if key else []
            out.append(
                Row(
                    plugin=p,
                    proxier=key[0] if key else None,
                    minor=key[1] if key else None,
                    cells={
                        test: shown([s for s in group if test in s.keys], test) for test in ALL_KEYS
                    },
                    kubernetes_versions=sorted(
                        {s.kubernetes_version for s in group if s.kubernetes_version}
                    ),
                    first=i == 0,
                )
            )
    return out
