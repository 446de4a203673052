"""The KEP report's Markdown as HTML, for the report page: the subset dashboard/domain/kep_report.py
writes (headings, paragraphs, pipe tables, bullet lists, `code`, **bold**, *italic*, links,
backslash escapes, footnotes). Everything is HTML-escaped first; only these constructs become
markup, and only http(s) and site-relative links become anchors."""

from __future__ import annotations

import re
from html import escape

_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+!|<>~.-])")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(((?:https?://|/)[^)\s]*)\)")
_FOOTREF = re.compile(r"\[\^([\w-]+)\]")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_PLACE = "\x00{}\x00"
_BULLET = re.compile(r"^[-*]\s+")


def _inline(text: str) -> str:
    """One line of inline Markdown as HTML (escaped first; backslash escapes kept literal)."""
    kept: list[str] = []

    def keep(html: str) -> str:
        kept.append(html)
        return _PLACE.format(len(kept) - 1)

    text = _ESCAPED.sub(lambda m: keep(escape(m.group(1))), text)
    text = _CODE.sub(lambda m: keep(f"<code>{escape(m.group(1))}</code>"), text)
    text = _FOOTREF.sub(
        lambda m: keep(
            f'<sup class="fnref"><a href="#fn-{m.group(1)}" id="fnref-{m.group(1)}">{escape(m.group(1))}</a></sup>'
        ),
        text,
    )
    text = _LINK.sub(
        lambda m: keep(f'<a href="{escape(m.group(2))}">') + m.group(1) + keep("</a>"), text
    )
    text = escape(text, quote=False)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    text = _ITALIC.sub(r"<em>\1</em>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)


def _cells(row: str) -> list[str]:
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def to_html(markdown: str) -> str:
    lines = markdown.splitlines()
    out: list[str] = []
    notes: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if m := re.match(r"^(#{1,6})\s+(.*)$", line):
            level = min(len(m.group(1)) + 0, 6)
            out.append(f"<h{level}>{_inline(m.group(2))}</h{level}>")
            i += 1
        elif m := re.match(r"^\[\^([\w-]+)\]:\s*(.*)$", line):
            notes.append((m.group(1), m.group(2)))
            i += 1
        elif (
            line.startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-|: ]+\|$", lines[i + 1])
        ):
            head = _cells(line)
            i += 2
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append('<div class="table-wrap"><table class="report-table stack">')
            out.append(
                "<thead><tr>"
                + "".join(f'<th scope="col">{_inline(c)}</th>' for c in head)
                + "</tr></thead><tbody>"
            )
            for r in rows:
                out.append(
                    "<tr>"
                    + "".join(
                        f'<td data-label="{escape(head[j] if j < len(head) else "")}">{_inline(c)}</td>'
                        for j, c in enumerate(r)
                    )
                    + "</tr>"
                )
            out.append("</tbody></table></div>")
        elif re.match(r"^[-*]\s+", line):
            out.append("<ul>")
            while i < len(lines) and re.match(r"^[-*]\s+", lines[i]):
                item = _BULLET.sub("", lines[i])
                out.append(f"<li>{_inline(item)}</li>")
                i += 1
            out.append("</ul>")
        else:
            para = []
            while (
                i < len(lines)
                and lines[i].strip()
                and not re.match(r"^(#{1,6}\s|\||[-*]\s|\[\^)", lines[i])
            ):
                para.append(lines[i].strip())
                i += 1
            out.append(f"<p>{_inline(' '.join(para))}</p>")
    if notes:
        out.append('<section class="footnotes" aria-label="Footnotes"><ol>')
        for name, text in notes:
            out.append(
                f'<li id="fn-{escape(name)}">{_inline(text)} '
                f'<a href="#fnref-{escape(name)}" aria-label="back to the table">↩</a></li>'
            )
        out.append("</ol></section>")
    return "\n".join(out)
