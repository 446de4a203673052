"""What the readiness page says about each criterion in plain words: the next action for an
unmet one, and the evidence that does not count grouped by reason (not repeated per item)."""

from __future__ import annotations

import re
from typing import Any

from kernel.vocabulary import Criterion

PROXIER_WORD = {"iptables": "iptables", "ipvs": "ipvs", "nftables": "nftables"}
SHORT_DETAIL_WORDS = 30

# (pattern in the policy's one-line why, the group's words); first match wins.
REASONS = (
    (re.compile(r"emulated"), "on emulated clusters (the lab): never counted"),
    (re.compile(r"self-reported"), "self-reported by a cluster's agent, not verified yet"),
    (re.compile(r"not approved"), "on clusters no maintainer has approved"),
    (re.compile(r"is disabled"), "on disabled clusters"),
    (re.compile(r"pending review"), "waiting for a maintainer to verify them"),
    (re.compile(r"rejected"), "rejected by a maintainer"),
    (re.compile(r"is older than 1\.\d+"), "on a Kubernetes release too old to count"),
    (re.compile(r"older than \d+ days"), "too old: outside the freshness window"),
    (re.compile(r"in-tree"), "from an in-tree plugin (only out-of-tree plugins count)"),
)


def _reason(why: str) -> str:
    for pattern, words in REASONS:
        if pattern.search(why):
            return words
    return why.removeprefix("not counted: ").split("; ")[0] or "does not count"


def _kinds(items: list[dict[str, Any]]) -> str:
    runs = sum(1 for e in items if e.get("kind") == "run")
    subs = len(items) - runs
    parts = []
    if runs:
        parts.append(f"{runs} run{'s' if runs != 1 else ''}")
    if subs:
        parts.append(f"{subs} submission{'s' if subs != 1 else ''}")
    return " and ".join(parts)


def group_evidence(evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """{"counted": [...], "groups": [{"label": "8 runs on emulated clusters…", "items": [...]}]}"""
    counted = [e for e in evidence if e.get("counts")]
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in evidence:
        if not e.get("counts"):
            groups.setdefault(_reason(str(e.get("why") or "")), []).append(e)
    return {
        "counted": counted,
        "groups": [
            {"reason": reason, "label": f"{_kinds(items)} {reason}", "items": items}
            for reason, items in sorted(groups.items(), key=lambda kv: -len(kv[1]))
        ],
    }


def short_detail(detail: str) -> tuple[str, bool]:
    """The first clause of a long detail, and whether anything was left out."""
    words = detail.split()
    if len(words) <= SHORT_DETAIL_WORDS:
        return detail, False
    first = detail.split("; ")[0]
    if len(first.split()) > SHORT_DETAIL_WORDS:
        first = " ".join(words[:SHORT_DETAIL_WORDS])
    return first.rstrip(".,;:") + " …", True


def _emulated_only(c: dict[str, Any]) -> bool:
    evidence = c.get("evidence") or []
    return bool(evidence) and all(e.get("emulated") for e in evidence if not e.get("counts"))


REAL_CLUSTER = "register a real cluster and have a maintainer approve it"


def next_action(c: dict[str, Any], periodic_runs: int) -> str:
    """One line: what would move an unmet (or stale, at-risk) criterion forward."""
    key, status, rows = c["key"], c["status"], c.get("rows") or []
    if status == "met":
        return ""
    counted_any = any(e.get("counts") for e in c.get("evidence") or [])
    if key == Criterion.TESTS_WRITTEN:
        missing = [r["key"] for r in rows if not r.get("recorded")]
        if status == "stale":
            return "run the all battery again: the newest counted outcomes are too old"
        where = (
            REAL_CLUSTER + ", then run the all battery on it"
            if not counted_any
            else "run the all battery on an approved real cluster"
        )
        if missing:
            return f"{where} (no counted outcome yet for {len(missing)} of {len(rows)} tests)"
        return where
    if key == Criterion.PERIODIC_BASIC_PASSING:
        if not rows:
            return (
                f"{REAL_CLUSTER}, mark it basic-only and schedule the basic battery on it; "
                f"then {periodic_runs} conclusive periodic basic runs in a row"
            )
        best = max(
            (sum(1 for e in r.get("evidence") or [] if e.get("counts")) for r in rows), default=0
        )
        if status == "stale":
            return "the periodic job has not run recently: check that its schedule and workers run"
        prefix = f"{REAL_CLUSTER} for the periodic job; " if _emulated_only(c) else ""
        return (
            f"{prefix}needs {periodic_runs} conclusive periodic basic runs in a row: {best} so far"
        )
    if key == Criterion.TWO_OUT_OF_TREE_PLUGINS:
        passing = [r for r in rows if str(r.get("status", "")).startswith("counted")]
        if status == "at_risk":
            return "a counted plugin's newest connectivity evidence fails: look at its runs"
        if status == "stale":
            return "run the connectivity battery again: the counted evidence is too old"
        return (
            f"needs 2 out-of-tree plugins passing the connectivity tests: {len(passing)} so far; "
            f"{REAL_CLUSTER} (or upload results for a maintainer to verify)"
        )
    if key == Criterion.IPTABLES_AND_IPVS:
        missing = [
            str(r.get("proxier"))
            for r in rows
            if r.get("required", True) and r.get("status") != "demonstrated"
        ]
        if status == "stale":
            return (
                "run the connectivity battery again on each proxier mode: the evidence is too old"
            )
        modes = " and ".join(missing) or "iptables and ipvs"
        return (
            f"pod-to-service must pass on {modes}: {REAL_CLUSTER} with kube-proxy in "
            f"{'that mode' if len(missing) == 1 else 'each mode'} and run the connectivity battery"
        )
    return "see its evidence"
