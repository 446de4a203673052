"""What keeps CI honest: a missing dependency fails under CI=true, Redis tests are marked so the
embedded pass leaves them out, and .ci/run stops when it cannot install what tests need."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.need import unavailable

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_missing_dependency_skips_on_a_laptop_and_fails_under_ci(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no Chromium"):
        unavailable("no Chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no Chromium .CI=true"):
        unavailable("no Chromium")


def test_every_test_module_that_starts_a_redis_worker_is_marked_redis() -> None:
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        text = path.read_text()
        starts_worker = (
            re.search(r"celery_worker\((?![^)]*embedded_dir)", text) or "private_redis()" in text
        )
        if starts_worker and "pytest.mark.redis" not in text:
            unmarked.append(str(path.relative_to(ROOT)))
    assert unmarked == []


def test_ci_stops_when_it_cannot_install_what_the_tests_need_and_runs_the_embedded_pass() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export CI=true" in script
    assert not re.search(r"\|\|\s*echo", script)  # no "install || echo, and carry on"
    assert "make test-embedded" in script
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"test-embedded:.*\n(.*\n)*?.*CELERY_BROKER_URL=filesystem://", makefile)
    # the real-cluster suite runs in a stage of its own against the cluster CI starts; the
    # PostgreSQL pass deselects it by name and the embedded pass (no Redis) leaves it out
    assert '-m "not redis and not browser and not guest and not realcluster"' in makefile
    assert "-m 'not realcluster'" in script


def test_ci_starts_the_real_cluster_runs_its_suite_and_always_stops_it() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    # after the PostgreSQL pass (its Redis and PostgreSQL), before the embedded pass
    start = script.index("make test COVERAGE=1")
    stage = script[start : script.index("make test-embedded")]
    built = stage.index("\n  E2E_MINORS=36 make e2e-binaries\n")
    up = stage.index("\n  make cluster\n")
    suite = stage.index("make test-realcluster\n")
    assert built < up < suite
    # cluster-down runs on every exit of the stage (trap), and its failure fails CI
    assert stage.index("trap down EXIT") < built
    assert "make cluster-down ||" in stage and '[ "$stage_rc" -eq 0 ] || exit' in stage
    assert 'REALCLUSTER_KUBECONFIG="$PWD/var/cluster/kubeconfig"' in stage
    # what `make cluster` needs beside Go is installed before any test runs
    packages = script[: script.index("== install")]
    for pkg in (
        "gcc libseccomp-dev busybox-static iptables nftables util-linux iproute2 openssl curl bash"
    ).split():
        assert f" {pkg}" in packages, pkg
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"test-realcluster:.*\n.*-m realcluster .*tests/realcluster", makefile)


def test_the_real_cluster_suite_skips_with_the_reason_and_fails_under_ci(
    monkeypatch, tmp_path
) -> None:
    from tests.realcluster.conftest import no_cluster

    monkeypatch.delenv("CI", raising=False)
    # No Go: the reason says that `make cluster` cannot build one here.
    monkeypatch.setenv("GO", str(tmp_path / "no-such-go"))
    with pytest.raises(pytest.skip.Exception, match=r"x does not exist; and no Go toolchain"):
        no_cluster("x does not exist")
    go = tmp_path / "go"
    go.write_text("#!/bin/sh\n")
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    with pytest.raises(pytest.skip.Exception, match=r"start one with `make cluster`") as skipped:
        no_cluster("x does not exist")
    assert "Go toolchain" not in str(skipped.value)
    monkeypatch.setenv("CI", "true")
    for go_there in (str(go), str(tmp_path / "no-such-go")):
        monkeypatch.setenv("GO", go_there)
        with pytest.raises(pytest.fail.Exception, match=r"no real cluster: x does not exist"):
            no_cluster("x does not exist")
