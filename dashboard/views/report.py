"""The Markdown report a maintainer pastes into the KEP PR: verdicts, evidence with hashes, coverage."""

from __future__ import annotations

import html
import re
from typing import Any

from dashboard.models import Run, SignOff, Submission

ICON = {"met": "✅", "unmet": "❌", "at_risk": "⚠️", "stale": "⌛"}


def _evidence_facts(evaluation: dict[str, Any]) -> tuple[dict[int, Any], dict[int, Any]]:
    run_ids, sub_ids = set(), set()
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            for e in c["evidence"]:
                (run_ids if e["kind"] == "run" else sub_ids).add(e["id"])
    runs = {r.id: r for r in Run.objects.filter(id__in=run_ids).select_related("cluster", "plugin")
            .only("id", "finished", "battery", "proxier", "kubernetes_version", "plugin_version",
                  "cluster__name", "plugin__slug")} if run_ids else {}
    subs = {s.id: s for s in Submission.objects.without_content().filter(id__in=sub_ids).select_related("plugin")
            .only("id", "sha256", "created", "kind", "proxier", "kubernetes_version", "plugin_version",
                  "plugin__slug", "status")} if sub_ids else {}
    return runs, subs


# What can turn text into markup inside a line: emphasis, links and images, code, tables,
# strikethrough, escapes. Line starts cannot occur (newlines become spaces).
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")


def _md(text: Any) -> str:
    """Text someone else wrote (vendors: versions, names), as literal Markdown and no HTML."""
    flat = " ".join(str(text).split())
    return _MARKDOWN.sub(r"\\\1", html.escape(flat, quote=False))


def _code(text: Any) -> str:
    """A `code span` of someone else's text (a backtick would end it early)."""
    return "`" + " ".join(str(text).replace("`", "'").split()) + "`"


def _cell(text: Any) -> str:
    return _md(text)


def markdown_report(evaluation: dict[str, Any], base_url: str) -> str:
    runs, subs = _evidence_facts(evaluation)
    lines = [
        "## KEP-614 SCTP support: graduation evidence",
        "",
        (f"Current stage: **{evaluation['stage']}**. Evaluated at {evaluation['evaluated_at']} by the SCTP "
         f"readiness dashboard ({base_url}/). Evidence counts when younger than {evaluation['fresh_days']} days; "
         "only finished battery runs and *verified* vendor submissions count."),
        "",
    ]
    plugins: set[str] = set()
    proxiers: set[str] = set()
    for t in evaluation["transitions"]:
        lines += [f"### {t['from']} → {t['to']}: {'ready' if t['ready'] else 'not ready'}", "",
                  "| criterion | verdict | detail |", "|---|---|---|"]
        for c in t["criteria"]:
            lines.append(f"| `{c['key']}` {_cell(c['title'])} | {ICON.get(c['status'], '')} {c['status']} | "
                         f"{_cell(c['detail'])} |")
        lines.append("")
        for c in t["criteria"]:
            if not c["evidence"]:
                continue
            lines.append(f"Evidence for `{c['key']}`:")
            lines.append("")
            for e in c["evidence"]:
                url = f"{base_url}{e['url']}"
                if e["kind"] == "run" and e["id"] in runs:
                    r = runs[e["id"]]
                    plugins.add(r.plugin.slug)
                    proxiers.add(r.proxier)
                    when = r.finished.strftime("%Y-%m-%d") if r.finished else "unfinished"
                    lines.append(f"- [run {r.id}]({url}): {r.battery} battery on cluster {_code(r.cluster.name)} "
                                 f"({_md(r.plugin.slug)} {_md(r.plugin_version)}, Kubernetes "
                                 f"{_md(r.kubernetes_version)}, {r.proxier}), finished {when}")
                elif e["kind"] == "submission" and e["id"] in subs:
                    s = subs[e["id"]]
                    plugins.add(s.plugin.slug)
                    proxiers.add(s.proxier)
                    lines.append(f"- [submission {s.id}]({url}): {s.kind} from {_md(s.plugin.slug)} "
                                 f"{_md(s.plugin_version)} (Kubernetes {_md(s.kubernetes_version)}, {s.proxier}), "
                                 f"{s.status}, uploaded {s.created:%Y-%m-%d}, sha256 {_code(s.sha256)}")
                else:
                    lines.append(f"- [{_md(e.get('label') or e['kind'])}]({url})")
            lines.append("")
    for t in evaluation["transitions"]:
        for c in t["criteria"]:
            if c["key"] == "two-out-of-tree-plugins" and c.get("rows"):
                lines += ["Plugins (connectivity evidence):", "", "| plugin | status |", "|---|---|"]
                lines += [f"| {_md(r['name'])}{' (in-tree)' if r['in_tree'] else ''} | {r['status']} |" for r in c["rows"]]
                lines.append("")
            if c["key"] == "iptables-and-ipvs" and c.get("rows"):
                lines += ["Proxier modes (pod-to-service):", "", "| proxier | required | status |", "|---|---|---|"]
                lines += [f"| {r['proxier']} | {'yes' if r['required'] else 'no'} | {r['status']} |" for r in c["rows"]]
                lines.append("")
    lines.append(f"Plugins covered by the evidence above: {_md(', '.join(sorted(plugins))) or 'none'}; "
                 f"proxier modes: {', '.join(sorted(proxiers)) or 'none'}.")
    lines.append("")
    signoffs = list(SignOff.objects.select_related("maintainer").defer("snapshot")[:10])
    if signoffs:
        lines += ["Sign-offs:", ""]
        lines += [f"- {s.created:%Y-%m-%d} {s.from_stage} → {s.to_stage} by {_md(s.maintainer.get_username())}: "
                  f"{_cell(s.comment)} (sign-off `{s.uuid}`)" for s in signoffs]
        lines.append("")
    return "\n".join(lines)
