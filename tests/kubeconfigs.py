"""Kubeconfig text for tests: one cluster, one user with a bearer token, one current context."""

from __future__ import annotations

import yaml


def token_kubeconfig(server: str, token: str) -> str:
    """The kubeconfig a vendor registers: `server` with a bearer `token` (context "c")."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": token}}],
        }
    )
