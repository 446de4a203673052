"""The real-cluster suite (marker `realcluster`): tests against the real Kubernetes cluster of
`make cluster` (upstream's binaries, built from the release pinned in cluster/release.env).

`real_kubeconfig` is the path of its admin kubeconfig: REALCLUSTER_KUBECONFIG, by default
var/cluster/kubeconfig. When no cluster answers there, the tests are skipped with the reason,
except under CI=true, where they fail: CI starts the cluster, and a CI that silently skipped
them would say nothing about the real cluster.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_KUBECONFIG = ROOT / "var" / "cluster" / "kubeconfig"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and no real cluster: {reason}", pytrace=False)
    pytest.skip(f"no real cluster: {reason} (start one with `make cluster`)")


def real_version(kubeconfig: Path) -> dict[str, Any]:
    """GET /version of the kubeconfig's cluster, through the project's kubernetes client, as
    the raw JSON object (the client's VersionInfo model would drop fields it does not know)."""
    from kubernetes import client as k8s

    from kernel.kubeconfig import api_client_from_kubeconfig

    api = api_client_from_kubeconfig(kubeconfig.read_text(), request_timeout=10)
    try:
        # _preload_content=False: the urllib3 response, not the VersionInfo model.
        resp: Any = k8s.VersionApi(api).get_code(_preload_content=False)
        body: dict[str, Any] = json.loads(resp.data)
        return body
    finally:
        api.close()


@pytest.fixture
def real_kubeconfig(lab_networks_allowed: None) -> Path:
    # After the suite's CLUSTER_ALLOWED_NETWORKS (127.0.0.0/8): the cluster is on loopback.
    path = Path(os.environ.get("REALCLUSTER_KUBECONFIG") or DEFAULT_KUBECONFIG)
    if not path.is_file():
        _unavailable(f"{path} does not exist")
    try:
        real_version(path)
    except Exception as exc:  # whatever the client raises: the cluster does not answer
        _unavailable(f"GET /version through {path} failed: {type(exc).__name__}: {exc}")
    return path
