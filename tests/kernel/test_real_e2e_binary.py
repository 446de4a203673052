"""Bad input with upstream's REAL e2e.test v1.36.3 (not the stand-in), on loopback only.

The binary is the one `make e2e-binaries` builds, at var/e2e/v1.36/e2e.test (or
E2E_REAL_BINARY); without it these tests are skipped with that reason (they need no cluster,
so they are not `realcluster` tests). What each shows, with the real program:

- a kubeconfig naming a closed loopback port: e2e.test's suite setup cannot list nodes
  (test/e2e/e2e.go:211, three tries 30 s apart: about 60 s), it writes a JUnit with only the
  failed [SynchronizedBeforeSuite], and the run's judgement is `error` with that reason, its
  output kept and nothing counted;
- a server that accepts TCP and never answers, past the time limit: the process group is
  stopped (SIGTERM: ginkgo still writes a JUnit with the node `interrupted`, which counts for
  nothing), `error` naming the limit, the partial output ("Will run 13 of 942 specs") kept;
- e2e.test killed from outside (as the OOM killer would) before it writes its JUnit: `error`
  saying it ended without one, with its last lines.

The whole product path (run_battery --battery upstream through a worker) with the real binary
is in tests/tasks/test_upstream_battery.py (`..._real_binary_...`): the product reads the
cluster's /version before e2e.test runs, so a closed port never reaches e2e.test there.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel import upstream as e2e
from workers.upstream import UpstreamReport, _judge, spec_names

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(os.environ.get("E2E_REAL_BINARY") or ROOT / "var" / "e2e" / "v1.36" / "e2e.test")


def real_binary() -> Path:
    if not (REAL.is_file() and os.access(REAL, os.X_OK)):
        pytest.skip(f"no real e2e.test at {REAL} (`make e2e-binaries` builds it)")
    return REAL


def kubeconfig(server: str) -> dict:
    """A pinned-style kubeconfig: one context, inline credentials (what run_e2e is given)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "not-a-token"}}],
    }


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: refused until reused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()


NAMES = spec_names(36)


def judge(result: e2e.E2EResult) -> tuple[str, UpstreamReport]:
    report = UpstreamReport()
    state: dict = {}
    return _judge(result, state, report, "1.36.3"), report


def test_a_closed_loopback_port_ends_in_error_with_the_suites_reason(settings) -> None:
    binary = real_binary()
    settings.E2E_TIME_LIMIT_SECONDS = 240
    port = closed_port()
    result = e2e.run_e2e(binary, kubeconfig(f"https://127.0.0.1:{port}"), NAMES, time_limit=240)
    assert result.exit_code == 1 and not result.timed_out
    assert "Will run 13 of 942 specs" in result.log  # our focus selects the 13 SCTP specs
    assert f"dial tcp 127.0.0.1:{port}: connect: connection refused" in result.log
    assert "Ran 0 of 942 Specs" in result.log
    assert result.junit is not None and b"[SynchronizedBeforeSuite]" in result.junit
    error, report = judge(result)
    # The reason is ginkgo's line under the failed node (its summary at the end names only
    # the node and e2e.go:211).
    assert error.startswith(
        "upstream's suite could not start on this cluster ([SynchronizedBeforeSuite] failed: "
        f'Get "https://127.0.0.1:{port}/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse'
        f'&resourceVersion=0": dial tcp 127.0.0.1:{port}: connect: connection refused): '
        "no spec ran, nothing is counted; its last lines:"
    ), error
    assert report.results == {}  # nothing counted
    assert result.progress.total == 13 and result.progress.done == 0  # none began


def test_past_its_time_limit_the_real_binary_is_killed_and_nothing_counts(
    settings, silent_server: int
) -> None:
    binary = real_binary()
    settings.E2E_TIME_LIMIT_SECONDS = 4
    result = e2e.run_e2e(
        binary, kubeconfig(f"https://127.0.0.1:{silent_server}"), NAMES, time_limit=4
    )
    assert result.timed_out and result.exit_code is None
    # SIGTERM first: ginkgo's interrupt handler still writes its report in the grace period,
    # with the interrupted node; the run is no evidence whatever that file says.
    if result.junit is not None:
        assert b'<testcase name="[SynchronizedBeforeSuite]"' in result.junit
        assert b'status="interrupted"' in result.junit
    assert "Will run 13 of 942 specs" in result.log  # the partial output is kept
    assert "Waiting up to 30m0s for all (but 0) nodes to be schedulable" in result.log
    error, report = judge(result)
    assert error.startswith(
        "e2e.test ran past its time limit of 4 s (E2E_TIME_LIMIT_SECONDS): its process group "
        "was killed, nothing is counted; its last lines:"
    )
    assert report.results == {}
    assert result.progress.total == 13 and result.progress.done == 0


def _e2e_children(binary: Path) -> list[int]:
    """This process's children running `binary` (run_e2e's e2e.test, no one else's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if argv0 == str(binary).encode() and ppid == os.getpid():
            found.append(int(entry.name))
    return found


def test_an_e2e_test_killed_before_its_junit_ends_in_error_without_one(
    settings, silent_server: int
) -> None:
    binary = real_binary()
    settings.E2E_TIME_LIMIT_SECONDS = 120
    killed: list[int] = []

    def on_line(line: str) -> None:
        # As the kernel's OOM killer would: SIGKILL to the program itself, mid-run.
        if "Will run" in line and not killed:
            for pid in _e2e_children(binary):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

    result = e2e.run_e2e(
        binary,
        kubeconfig(f"https://127.0.0.1:{silent_server}"),
        NAMES,
        time_limit=120,
        on_line=on_line,
    )
    assert killed, "e2e.test never printed its spec count"
    assert result.exit_code == -signal.SIGKILL and not result.timed_out
    assert result.junit is None
    error, report = judge(result)
    assert error.startswith(
        "e2e.test ended (exit status -9) without writing a JUnit file: nothing is counted; "
        "its last lines:"
    )
    assert "Will run 13 of 942 specs" in error
    assert report.results == {}
