"""The real-cluster suite (marker `realcluster`): tests against the real Kubernetes cluster of
`make cluster` (upstream's binaries, built from the release pinned in cluster/release.env).

`real_kubeconfig` is the path of its admin kubeconfig: REALCLUSTER_KUBECONFIG, by default
var/cluster/kubeconfig. When no cluster answers there, the tests are skipped with the reason
(and, on a machine without Go, that `make cluster` cannot build one here), except under
CI=true, where they fail: CI builds and starts the cluster (.ci/run), and a CI that silently
skipped them would say nothing about the real cluster.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.need import unavailable

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_KUBECONFIG = ROOT / "var" / "cluster" / "kubeconfig"


def go_toolchain() -> str | None:
    """The Go that `make cluster` would build with, found as cluster/build-env.sh finds it
    (GO, else `go` on the PATH, else /usr/local/go/bin/go), or None."""
    name = os.environ.get("GO") or "go"
    found = shutil.which(name)
    if found is None and not os.environ.get("GO") and os.access("/usr/local/go/bin/go", os.X_OK):
        found = "/usr/local/go/bin/go"
    return found


def no_cluster(reason: str) -> None:
    """Skips (fails under CI=true) the test: no real cluster answers, for `reason`."""
    if go_toolchain() is None:
        unavailable(
            f"no real cluster: {reason}; and no Go toolchain here to build one (`make cluster` "
            "needs Go 1.26: `go` on the PATH or GO=/path/to/go)"
        )
    unavailable(f"no real cluster: {reason} (start one with `make cluster`)")


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
        no_cluster(f"{path} does not exist")
    try:
        real_version(path)
    except Exception as exc:  # whatever the client raises: the cluster does not answer
        no_cluster(f"GET /version through {path} failed: {type(exc).__name__}: {exc}")
    return path


def registration_form(kubeconfig: Path, name: str, proxier: str = "iptables") -> dict[str, Any]:
    """A vendor's registration of the real cluster: kubenet (its bridge/host-local/portmap
    plugins implement no NetworkPolicy), the release's version, the proxier it runs."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    return {
        "name": name,
        "plugin": "kubenet",
        "plugin_version": "v1.36.3",
        "proxier": proxier,
        "kubeconfig": SimpleUploadedFile("kubeconfig", kubeconfig.read_bytes()),
    }


def vendor_token() -> str:
    from dashboard.domain.models import ApiToken
    from tests import factories

    return ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Kubenet vendor", ("kubenet",))
    )[1]


def register_and_approve(client: Any, kubeconfig: Path, name: str, proxier: str) -> Any:
    """Registered through the API by a vendor (a loopback API server, allowed only by the
    suite's CLUSTER_ALLOWED_NETWORKS), approved by a maintainer: the product's own path."""
    from dashboard.domain.models import Cluster
    from tests.conftest import auth
    from tests.e2e import maintainer_token

    resp = client.post(
        "/api/v1/clusters/", registration_form(kubeconfig, name, proxier), **auth(vendor_token())
    )
    assert resp.status_code == 201, resp.content
    assert resp.json()["emulated"] is False and resp.json()["approved"] is False
    approved = client.post(f"/api/v1/clusters/{name}/approve", **auth(maintainer_token()))
    assert approved.status_code == 200, approved.content
    return Cluster.objects.get(name=name)


def proxy_mode(kubeconfig: Path) -> str:
    """kube-proxy's mode as `make cluster-proxy` wrote it beside the kubeconfig."""
    mode_file = kubeconfig.parent / "kube-proxy.mode"
    return mode_file.read_text().strip() if mode_file.is_file() else "iptables"


def battery_namespaces_left(kubeconfig: Path, run_ids: list[str]) -> list[str]:
    """The battery's namespaces of these battery run ids that still exist (any phase)."""
    from kubernetes import client as k8s

    from kernel.battery.base import RUN_ID_LABEL
    from kernel.kubeconfig import api_client_from_kubeconfig

    api = api_client_from_kubeconfig(kubeconfig.read_text(), request_timeout=10)
    try:
        core = k8s.CoreV1Api(api)
        left = []
        for run_id in run_ids:
            found = core.list_namespace(label_selector=f"{RUN_ID_LABEL}={run_id}")
            for ns in found.items:
                name = ns.metadata.name if ns.metadata else "?"
                left.append(f"{name} ({ns.status.phase if ns.status else '?'})")
        return left
    finally:
        api.close()
