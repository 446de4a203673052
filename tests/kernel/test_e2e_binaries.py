"""Which e2e.test the worker has: E2E_DIR/v1.<minor>/e2e.test, executable. A minor without one
is refused by name, and the refusal says which minors this worker does have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel.upstream import KILL_GRACE_SECONDS, NoBinary, available_minors, binary_for, command


def _put(e2e_dir: Path, minor: int, mode: int = 0o755) -> Path:
    where = e2e_dir / f"v1.{minor}"
    where.mkdir(parents=True, exist_ok=True)
    binary = where / "e2e.test"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(mode)
    return binary


def test_the_binary_of_a_minor_that_has_one_is_found(tmp_path):
    binary = _put(tmp_path, 36)
    assert binary_for(tmp_path, 36) == binary


def test_a_minor_without_a_binary_is_refused_naming_the_minors_that_have_one(tmp_path):
    _put(tmp_path, 36)
    _put(tmp_path, 34)
    _put(tmp_path, 35, mode=0o644)  # not executable: not a binary this worker can run
    (tmp_path / "v1.37").mkdir()  # a directory with nothing in it
    (tmp_path / "v1.33" / "e2e.test").mkdir(parents=True)  # a directory, not a file
    (tmp_path / "notes").mkdir()
    with pytest.raises(NoBinary) as refused:
        binary_for(tmp_path, 37)
    assert str(refused.value) == (
        f"no e2e.test for Kubernetes 1.37: this worker has e2e.test for 1.34, 1.36 only "
        f"(in {tmp_path}); build it with `make e2e-binaries` or put it at "
        f"{tmp_path / 'v1.37' / 'e2e.test'} (an executable file)"
    )
    assert available_minors(tmp_path) == [34, 36]
    with pytest.raises(
        NoBinary, match=re.escape("1.35: this worker has e2e.test for 1.34, 1.36 only")
    ):
        binary_for(tmp_path, 35)


def test_a_worker_without_any_binary_says_so(tmp_path):
    with pytest.raises(NoBinary, match=r"^no e2e.test for Kubernetes 1.36: this worker has "):
        binary_for(tmp_path / "missing", 36)
    with pytest.raises(NoBinary) as refused:
        binary_for(tmp_path / "missing", 36)
    assert "e2e.test for no minor at all" in str(refused.value)
    assert available_minors(tmp_path / "missing") == []


def test_ginkgos_own_suite_timeout_is_past_the_workers_limit_and_its_grace(tmp_path):
    """The worker's deadline ends a run (SIGTERM: ginkgo writes the nodes `interrupted`);
    ginkgo's own timer is the backstop for a worker that died. Were they equal, which fired
    first was a race (the real v1.36.3 binary wrote `timedout` about half the time)."""
    argv = command(tmp_path / "e2e.test", tmp_path / "kc", "x", tmp_path, time_limit=60)
    (flag,) = [a for a in argv if a.startswith("--ginkgo.timeout=")]
    seconds = int(flag.removeprefix("--ginkgo.timeout=").removesuffix("s"))
    assert seconds >= 60 + 2 * KILL_GRACE_SECONDS
