"""The evidence policy (contract: Evidence policy): does one run or submission count for one
criterion, and if not, why — in one line.

This module is the only place that decides eligibility. The criteria, the badge, the pages, the
KEP report and the API consume `assess()`; the database prefilters used to find candidates
(`countable_runs()`) live here too, and every candidate they return is confirmed by `assess()`.

The conditions, in the order a "why" names them:

- withdrawn: evidence a maintainer withdrew (audited, with a reason) never counts, not even in a
  what-if; the row stays and is shown as withdrawn;
- trust: a run counts only on an approved, enabled cluster; a submission only once verified;
- real cluster: evidence from an emulated cluster (the lab) never counts;
- release: its Kubernetes minor is at least READINESS_MIN_KUBERNETES;
- age: a run's time is when it finished, a submission's when its e2e run happened; fresh is
  younger than READINESS_FRESH_DAYS (the periodic criterion has its own age rule);
- outcomes: only `passed` and `failed` are verdicts; the criterion's own rule on them.

`relax` lets a criterion ask "would this count if emulated evidence counted?" — the what-if
a criterion's detail states; it never changes a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db.models import Q

from dashboard.domain.catalog import (
    BASIC_KEYS,
    CONNECTIVITY_KEYS,
    Outcome,
    Proxier,
    parse_minor_setting,
)
from kernel.vocabulary import VERDICTS, Criterion, Key

WITHDRAWN = "withdrawn"
TRUST = "trust"
EMULATED = "emulated"
RELEASE = "release"
AGE = "age"
OUTCOME = "outcome"
# The conditions a what-if may relax, widest last.
WHAT_IF_EMULATED = frozenset({EMULATED})
WHAT_IF_ANY = frozenset({EMULATED, RELEASE, TRUST, AGE})

TESTS_WRITTEN = Criterion.TESTS_WRITTEN
PERIODIC = Criterion.PERIODIC_BASIC_PASSING
TWO_PLUGINS = Criterion.TWO_OUT_OF_TREE_PLUGINS
PROXIERS = Criterion.IPTABLES_AND_IPVS
BADGE = "badge"  # a plugin's connectivity status: the two-plugins rule without the in-tree test


LB_KEY = Key.POD_TO_LOADBALANCER
QUALIFYING_KEYS = (Key.POD_TO_POD, Key.POD_TO_SERVICE, Key.NETPOL_ALLOW_DENY)
# The passes each criterion relies on: one the other battery's newest run on the same cluster
# and release failed does not count there (dashboard/domain/agreement.py). tests-written asks
# for verdicts, passed or failed, so a disagreement does not take its verdict away.
PASS_KEYS: dict[str, tuple[str, ...]] = {
    PERIODIC: tuple(BASIC_KEYS),
    TWO_PLUGINS: tuple(CONNECTIVITY_KEYS),
    BADGE: tuple(CONNECTIVITY_KEYS),
    PROXIERS: (Key.POD_TO_SERVICE,),
}


def min_minor() -> int:
    return parse_minor_setting(getattr(settings, "READINESS_MIN_KUBERNETES", ""))


@dataclass(frozen=True)
class PluginFacts:
    slug: str
    in_tree: bool
    implements_network_policy: bool
    netpol_exemption: str = ""  # a maintainer's recorded reason, "" when none


@dataclass(frozen=True)
class Item:
    """One run or submission, as the policy sees it."""

    kind: str  # run | submission
    id: int
    plugin: PluginFacts
    source: str  # "cluster calico-iptables" | "submission of calico 3.28.0"
    when: datetime | None
    when_source: str  # finished | file | upload
    emulated: bool
    untrusted: str  # "" when trusted, else why not ("cluster x is not approved by a maintainer")
    minor: int | None
    outcomes: Mapping[str, str]
    reasons: Mapping[str, str] = field(default_factory=dict)
    proxier: str | None = (
        None  # the demonstrated proxier (detected for runs, declared for submissions)
    )
    proxier_source: str = ""  # "detected" | "declared" | "" (undetermined)
    declared_proxier: str = ""  # what the cluster was registered with (never counts by itself)
    plugin_version: str = ""
    kubernetes_version: str = ""
    battery: str = ""
    scheduled: bool = False
    finished_ok: bool = True  # runs: the run ended `finished` (not error/cancelled)
    state: str = ""
    invariant: str = ""  # basic runs: conclusive | inconclusive | unchecked | violated | ""
    withdrawn: str = ""  # "" while it stands, else who withdrew it, when and why
    self_reported: bool = False  # runs: posted by the cluster's own agent (a claim, not observed)
    verified: bool = False  # self-reported runs: a maintainer verified this run
    # runs: catalog key -> why its pass is contradicted by the other battery's newest run on the
    # same cluster and release (dashboard/domain/agreement.py)
    contradicted: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.id)

    @property
    def url(self) -> str:
        return f"/{'runs' if self.kind == 'run' else 'submissions'}/{self.id}/"

    def outcome(self, key: str) -> str:
        return self.outcomes.get(key) or Outcome.NOT_RUN

    @cached_property
    def label(self) -> str:
        # asked for every evidence entry of every criterion: worked out once per item
        day = self.when.date().isoformat() if self.when else "no date"
        mark = ", emulated" if self.emulated else ""
        if self.self_reported:
            mark += ", self-reported" + (" and verified" if self.verified else "")
        return f"{self.kind} {self.id} ({self.source}{mark}, {day})"

    @property
    def trust_class(self) -> str:
        """worker | self-reported | submission: who observed what this evidence says."""
        if self.kind == "submission":
            return "submission"
        return "self-reported" if self.self_reported else "worker"


@dataclass(frozen=True)
class Assessment:
    counts: bool
    why: str
    blocked: frozenset[str] = frozenset()  # the conditions that failed
    relied: frozenset[str] = frozenset()  # counted only because these conditions were relaxed
    dated: bool = True  # the evidence says when it ran (undated evidence is never `stale`)

    @property
    def stale_only(self) -> bool:
        """Every condition holds but the age, and the evidence has a time that is too old: the
        criterion may call it `stale` (and print that time). Evidence with no time is not stale
        but not demonstrated: its age is unknown, not old (issue 36)."""
        return self.blocked == {AGE} and self.dated

    @property
    def outcome_only(self) -> bool:
        """Counted evidence whose outcomes fail the criterion's rule (at-risk, failing)."""
        return self.blocked == {OUTCOME}


@dataclass
class Policy:
    now: datetime
    fresh_days: int = field(default_factory=lambda: settings.READINESS_FRESH_DAYS)
    minimum: int = field(default_factory=min_minor)
    memo: bool = True  # answer each (item, criterion, relaxation) once
    _assessed: dict[tuple[str, int, str, frozenset[str]], tuple[Item, Assessment]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _found: dict[tuple[str, int, str], tuple[Item, list[tuple[str, str]], str]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _qualifies: dict[tuple[str, int], tuple[Item, tuple[bool, str]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def fresh_cutoff(self) -> datetime:
        return self.now - timedelta(days=self.fresh_days)

    # --- the conditions every criterion shares -------------------------------------------

    def _general(self, item: Item, *, age: bool) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if item.withdrawn:
            problems.append((WITHDRAWN, item.withdrawn))
        if item.untrusted:
            problems.append((TRUST, item.untrusted))
        if item.emulated:
            problems.append(
                (EMULATED, "emulated cluster (the lab): emulated evidence never counts")
            )
        if item.minor is None:
            problems.append((RELEASE, "Kubernetes release unknown"))
        elif item.minor < self.minimum:
            old = f"Kubernetes 1.{item.minor} is older than 1.{self.minimum}, the oldest release that counts"
            problems.append((RELEASE, old))
        if age:
            if item.when is None:
                problems.append(
                    (
                        AGE,
                        "no run time (the file does not say when the run happened; a "
                        "maintainer enters the run date when verifying)"
                        if item.kind == "submission"
                        else "no run time",
                    )
                )
            elif item.when < self.fresh_cutoff:
                problems.append((AGE, f"older than {self.fresh_days} days ({item.when:%Y-%m-%d})"))
        if item.kind == "run" and not item.finished_ok:
            problems.append((OUTCOME, f"the run ended {item.state or 'unfinished'}"))
        return problems

    # --- per criterion -----------------------------------------------------------------

    def assess(self, item: Item, criterion: str, relax: frozenset[str] = frozenset()) -> Assessment:
        # An evaluation asks again and again (each what-if, the badges): answered once per item,
        # criterion and relaxation for this policy's `now` (items are immutable).
        memo_key = (item.kind, item.id, criterion, relax)
        found = self._assessed.get(memo_key) if self.memo else None
        if found is not None and found[0] is item:
            return found[1]
        problems, rule_why = self._problems(item, criterion)
        blocking = [(c, why) for c, why in problems if c not in relax]
        if blocking:
            answer = Assessment(
                False,
                "not counted: " + "; ".join(why for _, why in blocking),
                frozenset(c for c, _ in blocking),
                dated=item.when is not None,
            )
        else:
            extra = ""
            if relax and problems:
                extra = " (if " + "; ".join(why for _, why in problems) + " were allowed)"
            answer = Assessment(
                True, "counts: " + rule_why + extra, relied=frozenset(c for c, _ in problems)
            )
        if self.memo:
            self._assessed[memo_key] = (item, answer)
        return answer

    def _problems(self, item: Item, criterion: str) -> tuple[list[tuple[str, str]], str]:
        found = self._found.get((item.kind, item.id, criterion)) if self.memo else None
        if found is not None and found[0] is item:
            return found[1], found[2]
        problems = self._general(item, age=criterion != PERIODIC)
        rule_ok, rule_why = self.rule(item, criterion)
        if not rule_ok:
            problems.append((OUTCOME, rule_why))
        against = [
            why
            for key, why in sorted(item.contradicted.items())
            if key in PASS_KEYS.get(criterion, ()) and item.outcome(key) == Outcome.PASSED
        ]
        if against:
            problems.append((OUTCOME, "contradicted: " + "; ".join(against)))
        self._found[(item.kind, item.id, criterion)] = (item, problems, rule_why)
        return problems, rule_why

    def rule(self, item: Item, criterion: str) -> tuple[bool, str]:
        """The criterion's own rule on the outcomes: (holds, one line)."""
        if criterion == TESTS_WRITTEN:
            keys = verdict_keys(item)
            if not keys:
                return False, "no test reached a verdict (passed or failed)"
            return True, "verdicts for " + ", ".join(keys)
        if criterion == PERIODIC:
            return conclusive_basic(item)
        if criterion in (TWO_PLUGINS, BADGE):
            found = self._qualifies.get(item.key)
            if found is None or found[0] is not item:
                found = (item, qualifying(item.outcomes, item.plugin))
                self._qualifies[item.key] = found
            ok, why = found[1]
            if ok and criterion == TWO_PLUGINS and item.plugin.in_tree:
                return False, f"{item.plugin.slug} is in-tree: only out-of-tree plugins count"
            return ok, why
        if criterion == PROXIERS:
            if item.outcome(Key.POD_TO_SERVICE) != Outcome.PASSED:
                return False, f"pod-to-service {label(item.outcome(Key.POD_TO_SERVICE))}"
            if not item.proxier:
                return False, "pod-to-service passed, but the proxier mode could not be determined"
            return True, f"pod-to-service passed on {item.proxier} ({item.proxier_source})"
        raise ValueError(f"unknown criterion {criterion!r}")


# --- the rules on outcomes, each defined once ------------------------------------------


def label(outcome: str) -> str:
    return str(outcome).replace("_", " ")


def lb_skip_counts(reason: str) -> bool:
    """A skipped pod-to-loadbalancer counts for tests-written only when skipped for want of an
    SCTP load balancer (the KEP lets it skip on bare metal)."""
    text = (reason or "").lower()
    return "load balancer" in text or "loadbalancer" in text or "providers" in text


def verdict_keys(item: Item) -> list[str]:
    """The catalog tests this evidence gives a verdict for (tests-written)."""
    return outcome_verdict_keys(item.outcomes, item.reasons)


def outcome_verdict_keys(outcomes: Mapping[str, str], reasons: Mapping[str, str]) -> list[str]:
    """verdict_keys() of evidence with these outcomes and reasons (what tests-written reads of
    the many submissions it looks through, without making items of them)."""
    keys = [k for k in BASIC_KEYS + CONNECTIVITY_KEYS if outcomes.get(k) in VERDICTS]
    if outcomes.get(LB_KEY) == Outcome.SKIPPED and lb_skip_counts(reasons.get(LB_KEY, "")):
        keys.append(LB_KEY)
    return keys


def qualifying(outcomes: Mapping[str, str], plugin: PluginFacts) -> tuple[bool, str]:
    """Qualifying connectivity evidence: pod-to-pod, pod-to-service and netpol-allow-deny passed
    in the same run or submission, no connectivity test failed or errored. A plugin without
    NetworkPolicy support cannot qualify unless a maintainer recorded an exemption."""

    def get(key: str) -> str:
        return outcomes.get(key) or Outcome.NOT_RUN

    problems = [
        f"{k} {label(get(k))}"
        for k in CONNECTIVITY_KEYS
        if get(k) in (Outcome.FAILED, Outcome.ERROR)
    ]
    exempt = not plugin.implements_network_policy and bool(plugin.netpol_exemption)
    required = (Key.POD_TO_POD, Key.POD_TO_SERVICE) if exempt else QUALIFYING_KEYS
    for key in required:
        if get(key) != Outcome.PASSED and f"{key} {label(get(key))}" not in problems:
            problems.append(f"{key} {label(get(key))}")
    if not plugin.implements_network_policy and not exempt:
        problems.append(
            f"{plugin.slug} does not implement NetworkPolicy and has no exemption "
            "(the SCTPConnectivity set includes the NetworkPolicy tests)"
        )
    if problems:
        return False, ", ".join(problems)
    if exempt:
        return (
            True,
            f"pod-to-pod and pod-to-service passed (NetworkPolicy exemption: {plugin.netpol_exemption})",
        )
    return True, "pod-to-pod, pod-to-service and netpol-allow-deny passed"


def conclusive_basic(item: Item) -> tuple[bool, str]:
    """A conclusive basic run: at least one basic test passed, none failed or errored, and the
    sctp.ko invariant was checked on at least one node where the module was not loaded before."""
    bad = [
        f"{k} {label(item.outcome(k))}"
        for k in BASIC_KEYS
        if item.outcome(k) in (Outcome.FAILED, Outcome.ERROR)
    ]
    if bad:
        return False, ", ".join(bad)
    passed = [k for k in BASIC_KEYS if item.outcome(k) == Outcome.PASSED]
    if not passed:
        seen = sorted({label(item.outcome(k)) for k in BASIC_KEYS})
        return False, f"no basic test passed ({', '.join(seen)})"
    if item.invariant == "violated":
        # Ours, stricter than upstream's (2 nodes, 2 specs): every node, every basic test.
        return (
            False,
            (
                "the sctp.ko invariant did not hold: the module got loaded during a basic test "
                "(read on every battery node, stricter than upstream's check)"
            ),
        )
    if item.invariant == "inconclusive":
        return (
            False,
            "inconclusive: sctp.ko was already loaded on every node before the basic tests",
        )
    if item.invariant != "conclusive":
        return False, "the sctp.ko invariant was not checked (no node access, or lsmod failed)"
    return True, f"{len(passed)} basic tests passed, sctp.ko invariant checked"


def invariant_state(fingerprint: Mapping[str, Any] | None) -> str:
    """conclusive | inconclusive | unchecked | violated, from the module states the battery
    recorded (violated: our every-node invariant broke during a basic test, whatever the
    tests' upstream outcomes; runs before issue 40 carry no `sctp_invariant_held`)."""
    if (fingerprint or {}).get("sctp_invariant_held") is False:
        return "violated"
    before = (fingerprint or {}).get("sctp_module_before") or {}
    if not isinstance(before, Mapping) or not before:
        return "unchecked"
    if any(v is False for v in before.values()):
        return "conclusive"
    if all(v is True for v in before.values()):
        return "inconclusive"
    return "unchecked"


# --- database prefilters (necessary conditions only; assess() decides) ------------------


def countable_runs_q(
    policy: Policy, *, relax: frozenset[str] = frozenset(), age: bool = True, prefix: str = ""
) -> Q:
    """The runs that may count, as a filter on Run (or on a relation to it, with `prefix`,
    e.g. "run__"); `relax` as in assess(). Boolean tests are written `__in=[...]`: SQLite
    compiles `=True` to a bare column test its planner cannot match to an index."""
    p = prefix
    q = Q(**{f"{p}state": "finished", f"{p}withdrawn_at__isnull": True})  # never relaxed
    if TRUST not in relax:
        q &= Q(**{f"{p}cluster__approved__in": [True], f"{p}cluster__enabled__in": [True]})
        # a self-reported run counts only once a maintainer verified it
        q &= ~Q(**{f"{p}trigger": "agent"}) | Q(**{f"{p}agent_verified_at__isnull": False})
    if EMULATED not in relax:
        q &= Q(
            **{
                f"{p}emulated__in": [False],
                f"{p}cluster__emulated__in": [False],
                f"{p}cluster__lab__in": [False],
            }
        )
    if RELEASE not in relax:
        q &= Q(**{f"{p}kubernetes_minor__gte": policy.minimum})
    if age and AGE not in relax:
        q &= Q(**{f"{p}finished__gte": policy.fresh_cutoff})
    return q


def countable_submissions_q(
    policy: Policy, *, relax: frozenset[str] = frozenset(), age: bool = True
) -> Q:
    q = Q(withdrawn_at__isnull=True)  # never relaxed
    if TRUST not in relax:
        q &= Q(status="verified")
    if EMULATED not in relax:
        q &= Q(emulated__in=[False])
    if RELEASE not in relax:
        q &= Q(kubernetes_minor__gte=policy.minimum)
    if age and AGE not in relax:
        q &= Q(run_at__gte=policy.fresh_cutoff)
    return q


# --- building items from rows ---------------------------------------------------------


PROXIER_MODES = frozenset(Proxier.values)  # (the enum builds its list anew on every access)


def plugin_facts(plugin: Any) -> PluginFacts:
    return PluginFacts(
        plugin.slug,
        plugin.in_tree,
        plugin.implements_network_policy,
        plugin.netpol_exemption_reason or "",
    )


def withdrawn_text(row: Any) -> str:
    """ "" while a run or submission (a model or a values() row) stands, else who withdrew it,
    when and why."""
    at = getattr(row, "withdrawn_at", None)
    if at is None:
        return ""
    return f"withdrawn by {getattr(row, 'withdrawn_by', '')} on {at:%Y-%m-%d}: " + str(
        getattr(row, "withdrawn_reason", "")
    )


# The keys of a run's fingerprint that run_item() reads: the readiness evaluation loads only
# these, which the database keeps as columns (Run.fp_<key>, kept in step by a test).
RUN_FINGERPRINT_KEYS = (
    "proxier_detected",
    "emulated",
    "sctp_module_before",
    "sctp_invariant_held",
)


def run_item(
    run: Any,
    outcomes: Mapping[str, str],
    reasons: Mapping[str, str],
    plugin: PluginFacts,
    contradicted: Mapping[str, str] | None = None,
) -> Item:
    cluster = run.cluster
    self_reported = run.trigger == "agent"
    verified = self_reported and run.agent_verified_at is not None
    if not cluster.enabled:
        untrusted = f"cluster {cluster.name} is disabled"
    elif not cluster.approved:
        untrusted = f"cluster {cluster.name} is not approved by a maintainer"
    elif self_reported and not verified:
        untrusted = (
            "self-reported by the cluster's agent: counts once a maintainer verifies the run"
        )
    else:
        untrusted = ""
    fingerprint = run.fingerprint or {}
    detected = run.proxier_detected or fingerprint.get("proxier_detected") or ""
    return Item(
        kind="run",
        id=run.id,
        plugin=plugin,
        source=f"cluster {cluster.name}",
        when=run.finished,
        when_source="finished",
        emulated=bool(
            run.emulated or cluster.emulated or cluster.lab or fingerprint.get("emulated")
        ),
        untrusted=untrusted,
        minor=run.kubernetes_minor,
        outcomes=outcomes,
        reasons=reasons,
        proxier=detected if detected in PROXIER_MODES else None,
        proxier_source="detected" if detected in PROXIER_MODES else "",
        declared_proxier=run.proxier,
        plugin_version=run.plugin_version,
        kubernetes_version=run.kubernetes_version,
        battery=run.battery,
        scheduled=run.trigger == "periodic",
        finished_ok=run.state == "finished",
        state=run.state,
        invariant=invariant_state(fingerprint),
        self_reported=self_reported,
        verified=verified,
        withdrawn=withdrawn_text(run),
        contradicted=contradicted or {},
    )


def submission_item(sub: Any, plugin: PluginFacts) -> Item:
    status = sub.status
    untrusted = (
        ""
        if status == "verified"
        else (
            "pending review: submissions count once a maintainer verifies them"
            if status == "pending_review"
            else "rejected by a maintainer"
        )
    )
    results = sub.results or {}
    outcomes = _outcomes(results)
    reasons = _reasons(results)
    # Age: when the e2e run happened, from the file (or a maintainer's date); a file that does
    # not say is not fresh until a maintainer enters the date when verifying.
    return Item(
        kind="submission",
        id=sub.id,
        plugin=plugin,
        source=f"submission of {plugin.slug} {sub.plugin_version}".strip(),
        when=sub.run_at,
        when_source=sub.run_at_source or "",
        emulated=bool(sub.emulated),
        untrusted=untrusted,
        minor=sub.kubernetes_minor,
        outcomes=outcomes,
        reasons=reasons,
        proxier=sub.proxier if sub.proxier in PROXIER_MODES else None,
        proxier_source="declared",
        declared_proxier=sub.proxier,
        plugin_version=sub.plugin_version,
        kubernetes_version=sub.kubernetes_version,
        withdrawn=withdrawn_text(sub),
    )


def submission_outcomes(sub: Any) -> dict[str, str]:
    return _outcomes(sub.results or {})


def _is_mapping(value: Any) -> bool:
    # A decoded JSON object is a dict: checked first, the ABC's isinstance() is ten times slower
    # (an evaluation reads hundreds of submissions' results).
    return type(value) is dict or isinstance(value, Mapping)


def _outcomes(results: Mapping[str, Any]) -> dict[str, str]:
    outcomes = {k: (v.get("outcome") if _is_mapping(v) else v) for k, v in results.items()}
    return {k: str(v) for k, v in outcomes.items() if v}


def _reasons(results: Mapping[str, Any]) -> dict[str, str]:
    return {k: (v.get("reason") or "") for k, v in results.items() if _is_mapping(v)}


def submission_qualifying(sub: Any) -> tuple[bool, str]:
    """The one answer to "is this submission qualifying connectivity evidence?" that the API,
    the stored report, the verification page, ``/`` and the matrix all give: the policy's
    rule on its outcomes with its plugin's facts as they are now (an exemption included)."""
    return qualifying(submission_outcomes(sub), plugin_facts(sub.plugin))


def on_proxier(item: Item, mode: str) -> bool:
    """The item speaks of this proxier mode: the one its run demonstrated, or (a file, or a run
    that demonstrated none) the one declared for it. One rule for the criterion iptables-and-ipvs
    and the per-proxier badges."""
    return item.proxier == mode or (not item.proxier and item.declared_proxier == mode)


def evidence_entry(item: Item, assessment: Assessment) -> dict[str, Any]:
    """The API's evidence item: {"kind","id","url","label","counts","why","emulated",
    "trust"} (trust: worker | self-reported | submission)."""
    return {
        "kind": item.kind,
        "id": item.id,
        "url": item.url,
        "label": item.label,
        "counts": assessment.counts,
        "why": assessment.why,
        "emulated": item.emulated,
        "trust": item.trust_class,
    }
