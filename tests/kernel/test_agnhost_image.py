"""The battery's agnhost image follows upstream's e2e at the pinned release.

Upstream's e2e.test names its images in test/utils/image/manifest.go (`configs[Agnhost]`);
v1.36.3 uses registry.k8s.io/e2e-test-images/agnhost:2.63.0. The battery's default (and the
dashboard's AGNHOST_IMAGE default) is that image, so both batteries run the same servers and
clients, and the real cluster's image built from the release's source (make cluster) serves both.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from kernel.battery.base import DEFAULT_AGNHOST_IMAGE

ROOT = Path(__file__).resolve().parents[2]


def pinned_release() -> str:
    text = (ROOT / "cluster" / "release.env").read_text()
    match = re.search(r"^KUBE_VERSION=(\S+)$", text, re.MULTILINE)
    assert match, "cluster/release.env pins no KUBE_VERSION"
    return match.group(1)


def module_cache() -> Path | None:
    env = os.environ.get("GOMODCACHE")
    if env:
        return Path(env)
    try:
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=20, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out) if out else None


def test_the_default_agnhost_is_upstreams_at_the_pinned_release() -> None:
    cache = module_cache()
    manifest = (
        cache / f"k8s.io/kubernetes@{pinned_release()}" / "test/utils/image/manifest.go"
        if cache
        else None
    )
    if manifest is None or not manifest.is_file():
        pytest.skip(f"upstream's source at {pinned_release()} is not in the Go module cache")
    match = re.search(
        r'configs\[Agnhost\] = Config\{list\.PromoterE2eRegistry, "agnhost", "([^"]+)"\}',
        manifest.read_text(),
    )
    assert match, f"no configs[Agnhost] line in {manifest}"
    assert DEFAULT_AGNHOST_IMAGE == f"registry.k8s.io/e2e-test-images/agnhost:{match.group(1)}"


def test_the_dashboards_default_is_the_batterys() -> None:
    from django.conf import settings as live

    assert (
        live.AGNHOST_IMAGE
        == DEFAULT_AGNHOST_IMAGE
        == ("registry.k8s.io/e2e-test-images/agnhost:2.63.0")
    )
