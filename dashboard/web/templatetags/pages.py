"""Presentation helpers shared by the pages: human timestamps, labelled values, run links."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from django.utils.timezone import is_aware, localtime, now

from dashboard.web.audit_words import action_words, changes_words, detail_label, sentence
from kernel.vocabulary import Criterion

register = template.Library()


def _ago(value: datetime) -> str:
    delta = now() - value
    if abs(delta.total_seconds()) < 60:
        return "just now"
    if delta.total_seconds() < 0:
        return f"in {timesince(now(), value, depth=1)}"
    return f"{timesince(value, now(), depth=1)} ago"


@register.filter
def when(value: Any, style: str = "") -> SafeString | str:
    """`<time>` with a readable UTC date and time and how long ago; the exact instant in its title.

    style "short": time and age only ("06:16 UTC, 3 minutes ago"); "date": the day only.
    """
    if not isinstance(value, datetime):
        return "—" if value in (None, "") else str(value)
    local = localtime(value) if is_aware(value) else value
    exact = local.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    if style == "date":
        text = local.strftime("%-d %b %Y")
    elif style == "short":
        text = f"{local:%H:%M} UTC, {_ago(value)}"
    else:
        text = f"{local:%-d %b %Y, %H:%M} UTC ({_ago(value)})"
    return format_html('<time datetime="{}" title="{}">{}</time>', value.isoformat(), exact, text)


@register.filter
def ago(value: Any) -> SafeString | str:
    if not isinstance(value, datetime):
        return "—"
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        localtime(value).strftime("%Y-%m-%d %H:%M:%S UTC"),
        _ago(value),
    )


@register.filter
def run_links(ids: Any) -> SafeString:
    """[12, 11, 10] -> "run 12 · run 11 · run 10", each a link: never bare numbers."""
    return format_html_join(
        mark_safe(" · "), '<a href="/runs/{}/">run {}</a>', ((i, i) for i in ids or [])
    )


@register.filter
def plain(value: Any) -> str:
    """A JSON-ish value as words, never a Python repr: yes/no, lists joined, mappings as k: v."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if value is None:
        return "unknown"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {plain(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)


@register.filter
def audit_sentence(event: Any) -> str:
    """An audit entry's action and target as words ("approved cluster calico-ipvs")."""

    return sentence(event.action, event.target)


@register.filter
def audit_action(action: str) -> str:

    return action_words(action)


@register.filter
def audit_details(detail: Any) -> list[tuple[str, str]]:
    """(label, value) pairs of an entry's details, in words."""

    out = []
    for key, value in (detail or {}).items():
        text = changes_words(value) if key == "changes" else plain(value)
        out.append((detail_label(key), text))
    return out


@register.filter
def is_criterion(key: Any, name: str) -> bool:
    """`{% if c.key|is_criterion:"TESTS_WRITTEN" %}`: a template names a criterion by its
    member in the vocabulary, never by spelling its key again."""
    return str(key) == Criterion[name].value


@register.filter
def invalid(field: Any, name: str) -> SafeString:
    """The attributes of a form field a refusal names (`{{ field|invalid:"name" }}`): marked
    invalid, described by the form's error, focused first. Nothing for the other fields."""
    if str(field or "") != name:
        return mark_safe("")
    return mark_safe(' aria-invalid="true" aria-describedby="form-error" autofocus')
