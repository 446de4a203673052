"""Upstream's own `e2e.test`, run against a registered cluster: the command line, the process,
its progress.

Plain Python (no Django): workers/upstream.py picks the binary, gives it the names of the
release's SCTP specs (dashboard/domain/ingest/upstream_names.py) and reads the JUnit it wrote
through the same ingest as a vendor's file.

The program is someone else's code talking to someone else's cluster, so it is fenced in:

- its kubeconfig is written by us (kernel.kubeconfig.pinned_kubeconfig): the server is the
  address resolved and allowed now, the hostname kept for TLS only, one context, inline
  credentials only; the file lives in a private temporary directory removed afterwards;
- it runs in a process group of its own, with an environment of ours (no DATABASE_URL, no
  keys: nothing of the worker's), and the whole group is killed at the time limit or on
  cancellation, so no child (kubectl, a port-forward) outlives the run;
- its output is read line by line, bounded (long lines cut, the log kept to its last
  LOG_MAX_BYTES), and parsed for progress as it streams.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARY_NAME = "e2e.test"
LOG_MAX_BYTES = 1024 * 1024  # the log kept with the run: its last megabyte
LINE_MAX_CHARS = 4096
TAIL_LINES = 15  # the last lines quoted in a run's error
KILL_GRACE_SECONDS = 5.0
JUNIT_MAX_BYTES = 50 * 1024 * 1024
JUNIT_NAME = "junit_01.xml"

# Ginkgo v2's console output (-v), as e2e.test prints it.
_WILL_RUN = re.compile(r"Will run (\d+) of (\d+) specs", re.IGNORECASE)
_RAN = re.compile(r"Ran (\d+) of (\d+) Specs")
# The end of one spec: "• [12.3 seconds]", "• [FAILED] [3.1 seconds]", "S [SKIPPED] [0.0 seconds]"
_SPEC_END = re.compile(
    r"^\s*[•SP]\s+(?:\[(?:FAILED|PANICKED|SKIPPED|PENDING|INTERRUPTED|TIMEDOUT|ABORTED)\]\s+)*"
    r"\[\d+(?:\.\d+)? seconds\]"
)
_SUITE_NODE_FAILED = re.compile(r"^\[(?:Synchronized)?BeforeSuite\] \[FAILED\]")
_FAILED_REASON = re.compile(r"^\s*\[FAILED\] (.+)$")
_TAG = re.compile(r"\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")
_IT = re.compile(r"^\s*\[It\]\s+")
# What Go's RE2 and Python's re both read as an operator; everything else is literal in both.
_RE_SPECIAL = frozenset("\\.+*?()|[]{}^$")


class NoBinary(Exception):
    """There is no e2e.test for the cluster's minor: the run is refused, never guessed."""


_MINOR_DIR = re.compile(r"^v1\.(\d+)$")


def _usable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def available_minors(e2e_dir: Path) -> list[int]:
    """The minors that have an executable E2E_DIR/v1.<minor>/e2e.test, in order."""
    try:
        entries = list(Path(e2e_dir).iterdir())
    except OSError:
        return []
    found = {
        int(m.group(1))
        for entry in entries
        if (m := _MINOR_DIR.match(entry.name)) and _usable(entry / BINARY_NAME)
    }
    return sorted(found)


def binary_for(e2e_dir: Path, minor: int) -> Path:
    """E2E_DIR/v1.<minor>/e2e.test, or NoBinary saying where it should be, how to build it and
    which minors this worker does have binaries for."""
    path = Path(e2e_dir) / f"v1.{minor}" / BINARY_NAME
    if not _usable(path):
        have = available_minors(e2e_dir)
        listed = ", ".join(f"1.{m}" for m in have)
        where = f"{listed} only" if have else "no minor at all"
        raise NoBinary(
            f"no e2e.test for Kubernetes 1.{minor}: this worker has e2e.test for {where} "
            f"(in {e2e_dir}); build it with `make e2e-binaries` or put it at {path} "
            "(an executable file)"
        )
    return path


def _escape(text: str) -> str:
    return "".join(f"\\{c}" if c in _RE_SPECIAL else c for c in text)


def _segments(name: str) -> list[str]:
    name = _IT.sub("", _SPACES.sub(" ", name))
    return [part.strip() for part in _TAG.split(name) if part.strip()]


def focus_regex(names: Iterable[str]) -> str:
    """One regular expression that selects exactly these specs (Go's RE2 and Python alike).

    Each name's text between its bracketed tags, in order, joined by `.*`: a tag that moved,
    came or went between releases (`[LinuxOnly]`, a `[Feature:…]` label) changes nothing, and
    no spec without all of the text is selected.
    """
    patterns = sorted(
        {".*".join(_escape(seg) for seg in _segments(name)) for name in names if _segments(name)}
    )
    if not patterns:
        raise ValueError("no spec names to focus on")
    return "(" + "|".join(patterns) + ")"


def spec_key(text: str) -> str:
    """A spec's name reduced for matching a console line to it: no tags, single spaces."""
    return " ".join(_segments(text)).casefold()


def kubectl_beside(binary: Path) -> Path | None:
    """The release's kubectl, when one lies beside its e2e.test (E2E_DIR/v1.<minor>/kubectl).

    Upstream's network specs run `kubectl exec` (framework/pod/output RunHostCmd) with the
    framework's --kubectl-path, "kubectl" by default: without one here, whichever kubectl the
    worker's PATH (/usr/local/bin:/usr/bin:/bin) holds is used, of whatever release."""
    path = Path(binary).parent / "kubectl"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def command(
    binary: Path,
    kubeconfig: Path,
    focus: str,
    report_dir: Path,
    time_limit: int,
    kubectl: Path | None = None,
    skip: str = "",
) -> list[str]:
    """The command line: upstream's framework flags (test/e2e/framework/test_context.go) and
    ginkgo v2's. `--report-dir` is where the framework writes its files; ginkgo's
    `--junit-report` names the one JUnit file (it takes precedence over the framework's).
    `skip`: the `--ginkgo.skip` of the feature labels the cluster lacks (as upstream's own
    runners leave them out; kernel.battery.features), none when empty.
    ginkgo's own suite timeout is a backstop set past our limit and its kill grace: the
    worker's deadline ends the run first (SIGTERM, the nodes written `interrupted`), and
    ginkgo's timer only ends a run whose worker died. Equal, the two raced: ginkgo's timer
    fired first about half the time and wrote `timedout` instead (measured on v1.36.3)."""
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--ginkgo.focus={focus}",
        *([f"--ginkgo.skip={skip}"] if skip else []),
        "--ginkgo.no-color",
        "--ginkgo.v",
        f"--ginkgo.timeout={int(time_limit + 2 * KILL_GRACE_SECONDS)}s",
        f"--report-dir={report_dir}",
        f"--ginkgo.junit-report={report_dir / JUNIT_NAME}",
        f"--e2e-output-dir={report_dir}",
        *([f"--kubectl-path={kubectl}"] if kubectl is not None else []),
    ]


@dataclass
class Progress:
    """What the console said so far: the spec running, how many ended, how many will run."""

    running: str = ""
    done: int = 0
    total: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"running": self.running, "done": self.done, "total": self.total}


class ProgressReader:
    """Reads ginkgo's console lines; `feed` answers whether the progress changed.

    As e2e.test v1.36.3 prints them with `--ginkgo.v` (checked on its real output against a
    real cluster, tests/fixtures/realcluster/e2e-v1.36.3-sctp.log): a spec begins right after
    a `------------------------------` line with its full name (labels appended in one more
    bracket, `[sig-network, Serial]`), and ends with `• [8.318 seconds]`, `S [SKIPPED] […]`
    or `• [FAILED] […]`; a skipped or failed spec's name is printed once more after its end
    (with `[It]` inside), which is not a start. `done` counts those ends; "Ran N of M Specs"
    counts only the specs that ran, not those skipped at run time, so it ends the run without
    replacing the count (a suite whose setup failed ends with 0 done).
    """

    SEPARATOR = "------------------------------"

    def __init__(self, names: Iterable[str]) -> None:
        self.names = {spec_key(name): name for name in names}
        self.progress = Progress()
        self._after_separator = False

    def feed(self, line: str) -> bool:
        p = self.progress
        after_separator, self._after_separator = self._after_separator, False
        if line.strip() == self.SEPARATOR:
            self._after_separator = True
            return False
        if m := _RAN.search(line):
            if p.total is None:
                p.total = int(m.group(1))
            p.running = ""
            return True
        if m := _WILL_RUN.search(line):
            p.total = int(m.group(1))
            return True
        if _SPEC_END.match(line):
            p.done += 1
            p.running = ""
            return True
        if after_separator:
            key = spec_key(line)
            if key in self.names:
                p.running = self.names[key]
                return True
        return False


@dataclass
class E2EResult:
    exit_code: int | None  # None: killed by us
    junit: bytes | None  # the JUnit file it wrote, as written (None: none)
    log: str  # the console output (its last LOG_MAX_BYTES)
    progress: Progress
    timed_out: bool = False
    cancelled: bool = False
    start_error: str = ""  # it could not be started at all
    command: list[str] = field(default_factory=list)

    @property
    def suite_failure(self) -> str:
        """Why the suite's setup failed, as ginkgo says it under the failed suite node
        ("[SynchronizedBeforeSuite] [FAILED] [60.001 seconds]", then "  [FAILED] <reason>"):
        the summary at the end of the output names only the node and its file."""
        lines = self.log.splitlines()
        for i, line in enumerate(lines):
            if _SUITE_NODE_FAILED.match(line):
                for after in lines[i + 1 : i + 8]:
                    m = _FAILED_REASON.match(after)
                    if m and not m.group(1).startswith("in ["):
                        return m.group(1)[:LINE_MAX_CHARS]
        return ""

    @property
    def tail(self) -> str:
        """The last lines of its output, for a run's error."""
        lines = [line for line in self.log.splitlines() if line.strip()]
        return "\n".join(lines[-TAIL_LINES:])[-3000:]


class _Log:
    """The console output, kept to its last `limit` bytes."""

    def __init__(self, limit: int = LOG_MAX_BYTES) -> None:
        self.lines: deque[str] = deque()
        self.size = 0
        self.dropped = 0
        self.limit = limit

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.size += len(line) + 1
        while self.size > self.limit and self.lines:
            self.size -= len(self.lines.popleft()) + 1
            self.dropped += 1

    def text(self) -> str:
        head = f"[… {self.dropped} earlier lines not kept]\n" if self.dropped else ""
        return head + "\n".join(self.lines)


_EOF = object()


def _read_lines(stream: Any, out: queue.Queue[object]) -> None:
    try:
        while True:
            raw = stream.readline(LINE_MAX_CHARS * 4)
            if not raw:
                break
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            out.put(line[:LINE_MAX_CHARS])
    except (OSError, ValueError):
        pass
    finally:
        out.put(_EOF)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the whole group, SIGKILL to what is left after KILL_GRACE_SECONDS."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, KILL_GRACE_SECONDS)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            # The leader is gone; its children (same group) go now, whatever they trap.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        break


def run_e2e(
    binary: Path,
    kubeconfig: dict[str, Any],
    names: list[str],
    *,
    time_limit: float,
    should_cancel: Callable[[], bool] = lambda: False,
    on_progress: Callable[[Progress], None] | None = None,
    on_line: Callable[[str], None] | None = None,
    skip: str = "",
) -> E2EResult:
    """Runs `binary` focused on `names` (less those `skip` matches) against the cluster of
    `kubeconfig` (pinned already) and returns what it did; never raises for what the program
    does."""
    focus = focus_regex(names)
    workdir = Path(tempfile.mkdtemp(prefix="sctp-e2e-"))
    os.chmod(workdir, 0o700)
    try:
        config_path = workdir / "kubeconfig"
        fd = os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(kubeconfig, handle)
        report_dir = workdir / "report"
        report_dir.mkdir(mode=0o700)
        argv = command(
            binary,
            config_path,
            focus,
            report_dir,
            int(time_limit),
            kubectl_beside(binary),
            skip=skip,
        )
        return _supervise(
            argv,
            workdir,
            config_path,
            report_dir,
            names,
            time_limit,
            should_cancel,
            on_progress,
            on_line,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _supervise(
    argv: list[str],
    workdir: Path,
    config_path: Path,
    report_dir: Path,
    names: list[str],
    time_limit: float,
    should_cancel: Callable[[], bool],
    on_progress: Callable[[Progress], None] | None,
    on_line: Callable[[str], None] | None,
) -> E2EResult:
    reader = ProgressReader(names)
    log = _Log()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "LANG": "C.UTF-8",
        "KUBECONFIG": str(config_path),
    }
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
            start_new_session=True,  # its own process group: killed as one
        )
    except OSError as exc:
        return E2EResult(
            None, None, "", reader.progress, start_error=f"{type(exc).__name__}: {exc}"
        )
    lines: queue.Queue[object] = queue.Queue(maxsize=10_000)
    pump = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
    pump.start()
    deadline = time.monotonic() + time_limit
    timed_out = cancelled = False
    eof = False
    try:
        while True:
            try:
                item = lines.get(timeout=0.2)
            except queue.Empty:
                item = None
            if item is _EOF:
                eof = True
            elif isinstance(item, str):
                log.add(item)
                if on_line is not None:
                    on_line(item)
                if reader.feed(item) and on_progress is not None:
                    on_progress(reader.progress)
            if eof and proc.poll() is not None:
                break
            if should_cancel():
                cancelled = True
                break
            if time.monotonic() > deadline:
                timed_out = True
                break
    finally:
        # Whatever ended the loop, no process of the group outlives it.
        _kill_group(proc)
        pump.join(timeout=KILL_GRACE_SECONDS)
        if proc.stdout is not None:
            proc.stdout.close()
    # Lines that arrived while it was being stopped.
    while True:
        try:
            item = lines.get_nowait()
        except queue.Empty:
            break
        if isinstance(item, str):
            log.add(item)
            if reader.feed(item) and on_progress is not None:
                on_progress(reader.progress)
    if timed_out or cancelled:
        exit_code = None
    else:
        exit_code = proc.returncode
    return E2EResult(
        exit_code=exit_code,
        junit=_junit(report_dir),
        log=log.text(),
        progress=reader.progress,
        timed_out=timed_out,
        cancelled=cancelled,
        command=argv,
    )


def _junit(report_dir: Path) -> bytes | None:
    """The JUnit file it wrote: ginkgo's --junit-report, else the framework's junit_*.xml."""
    candidates = [report_dir / JUNIT_NAME, *sorted(report_dir.glob("junit*.xml"))]
    for path in candidates:
        try:
            if path.is_file() and not path.is_symlink():
                if path.stat().st_size > JUNIT_MAX_BYTES:
                    return None
                return path.read_bytes()
        except OSError:
            continue
    return None
