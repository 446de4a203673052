"""The battery's shipped ClusterRole (deploy/rbac/battery-role.yaml) as the tests read and
trim it: each verb it grants, and the role with one verb taken out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
ROLE_FILE = REPO / "deploy" / "rbac" / "battery-role.yaml"


def shipped_role() -> dict[str, Any]:
    return yaml.safe_load(ROLE_FILE.read_text())


def permissions(role: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(rule index, verb, permission as the battery names it) for every verb the role grants:
    `create pods`, `get pods/log`, `list daemonsets in API group "apps"`, `get /version/`."""
    out = []
    for index, rule in enumerate(role["rules"]):
        for verb in rule["verbs"]:
            if rule.get("nonResourceURLs"):
                # the Python client asks for /version/ (the other URL is kubectl's)
                out.append((index, verb, f"{verb} /version/"))
                continue
            for resource in rule["resources"]:
                group = rule["apiGroups"][0]
                where = f' in API group "{group}"' if group else ""
                out.append((index, verb, f"{verb} {resource}{where}"))
    return out


def without(role: dict[str, Any], index: int, verb: str) -> dict[str, Any]:
    """The role with one verb of one rule removed (the rule dropped when it was its last)."""
    rules = []
    for i, rule in enumerate(role["rules"]):
        if i == index:
            verbs = [v for v in rule["verbs"] if v != verb]
            if not verbs:
                continue
            rule = {**rule, "verbs": verbs}
        rules.append(rule)
    return {**role, "rules": rules}
