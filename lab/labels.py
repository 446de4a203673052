"""Label selectors: the `labelSelector=` query string and `LabelSelector` objects."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from lab.errors import ApiError

Requirement = Callable[[Mapping[str, str]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9./_-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split_terms(text: str) -> list[str]:
    # Commas separate requirements except inside `in (a,b)` value sets.
    terms, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def parse_selector(text: str) -> list[Requirement]:
    """Parse `a=b,c!=d,e,!f,g in (x,y)` the way the apiserver does; 400 on bad input."""
    requirements: list[Requirement] = []
    for term in _split_terms(text or ""):
        eq = _EQ_RE.match(term)
        if eq:
            key, op, value = eq.groups()
            requirements.append(_not_in(key, {value}) if op == "!=" else _in(key, {value}))
            continue
        match = _SET_RE.match(term)
        if not match:
            raise ApiError(400, f"unable to parse requirement: {term.strip()!r}")
        negate, key, op, values_text = match.groups()
        if op:
            values = {v.strip() for v in values_text.split(",") if v.strip()}
            requirements.append(_in(key, values) if op == "in" else _not_in(key, values))
        elif negate:
            requirements.append(_lacks(key))
        else:
            requirements.append(_has(key))
    return requirements


# One function per kind of term: each requirement keeps its own key and values.
def _in(key: str, values: set[str]) -> Requirement:
    return lambda labels: labels.get(key) in values


def _not_in(key: str, values: set[str]) -> Requirement:
    return lambda labels: labels.get(key) not in values


def _has(key: str) -> Requirement:
    return lambda labels: key in labels


def _lacks(key: str) -> Requirement:
    return lambda labels: key not in labels


def matches_query(text: str | None, labels: Mapping[str, str] | None) -> bool:
    return all(req(labels or {}) for req in parse_selector(text or ""))


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """A `metav1.LabelSelector`; an empty selector matches everything."""
    labels = labels or {}
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def service_selector_matches(
    selector: Mapping[str, str] | None, labels: Mapping[str, str] | None
) -> bool:
    """A Service's plain map selector; an empty or absent one selects no pods."""
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())
