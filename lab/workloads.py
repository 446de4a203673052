"""What a pod *does*, read from its containers' command/args/env (the image is ignored)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# (protocol, port) pairs, protocol upper-case like the Kubernetes API spells it.
Listen = tuple[str, int]


@dataclass(frozen=True)
class Connect:
    host: str
    port: int
    protocol: str  # "SCTP" | "TCP" | "UDP"


@dataclass
class Workload:
    """long_running pods become Running; the others run once and end Succeeded/Failed."""

    long_running: bool
    listens: set[Listen] = field(default_factory=set)
    connect: Connect | None = None
    hostexec: str | None = None  # the shell command of a node inspection pod
    nsenter: bool = False  # the inspection enters PID 1's mount namespace (else: chroot)
    bad_usage: str | None = None  # a one-shot that cannot even start (log line)
    curl: str | None = None  # a one-shot `curl URL` (netexec /dial, kube-proxy /proxyMode)
    netexec: bool = False  # answers netexec's "hostname" request on every port it serves
    prober: Prober | None = None  # a long-lived probing loop (the battery's netpol model pods)


@dataclass(frozen=True)
class Prober:
    """`while true; … for t in TARGETS; do agnhost connect "$t" …; done; sleep S; done`: every
    round probes each target and logs `round N start`, `probe N T ok|fail …`, `round N done`."""

    targets: tuple[Connect, ...]
    interval: float


def _argv(container: dict[str, Any]) -> list[str]:
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    # The agnhost entrypoint is /agnhost; `command: ["/agnhost", "porter"]` means the same.
    if argv and argv[0].rsplit("/", 1)[-1] == "agnhost":
        argv = argv[1:]
    return argv


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _porter(container: dict[str, Any]) -> set[Listen]:
    listens: set[Listen] = set()
    for env in container.get("env") or []:
        name = str(env.get("name", ""))
        match = re.fullmatch(r"SERVE_(SCTP_|TLS_)?PORT_(\d+)", name)
        if match:
            proto = "SCTP" if match.group(1) == "SCTP_" else "TCP"
            listens.add((proto, int(match.group(2))))
    return listens


def _netexec(argv: list[str]) -> set[Listen]:
    listens: set[Listen] = set()
    http = _flag(argv, "http-port")
    listens.add(("TCP", int(http) if http and http.isdigit() else 8080))
    for flag, proto in (("udp-port", "UDP"), ("sctp-port", "SCTP")):
        value = _flag(argv, flag)
        # netexec's default for these is -1: "do not serve".
        if value and value.isdigit():
            listens.add((proto, int(value)))
    return listens


def _parse_connect(argv: list[str]) -> Connect | str:
    """`connect HOST:PORT --protocol=sctp --timeout=5s`; a str is an agnhost usage error."""
    positional = [a for a in argv[1:] if not a.startswith("-")]
    # `--protocol sctp` (space separated) leaves "sctp" among the positionals.
    proto_value = _flag(argv, "protocol") or "tcp"
    positional = [a for a in positional if a not in (proto_value, _flag(argv, "timeout"))]
    if not positional or ":" not in positional[0]:
        return "Error: the connect subcommand needs HOST:PORT"
    host, _, port = positional[0].rpartition(":")
    if not port.isdigit():
        return f"Error: invalid port in {positional[0]}"
    proto = proto_value.upper()
    if proto not in ("TCP", "UDP", "SCTP"):
        return f"Error: unsupported protocol {proto_value}"
    return Connect(host=host.strip("[]"), port=int(port), protocol=proto)


_PROBER_LOOP = re.compile(
    r'for t in ([^;]+); do.*agnhost connect "\$t" --protocol=(\w+).*sleep ([0-9.]+); done'
)


def _shell_prober(script: str) -> Prober | None:
    if "while true" not in script or 'echo "round $n start"' not in script:
        return None
    found = _PROBER_LOOP.search(script)
    if not found:
        return None
    targets = []
    for target in found.group(1).split():
        host, _, port = target.rpartition(":")
        if not port.isdigit():
            return None
        targets.append(Connect(host.strip("[]"), int(port), found.group(2).upper()))
    return Prober(tuple(targets), float(found.group(3)))


def _shell_connect(script: str) -> list[str] | None:
    """Find `/agnhost connect …` inside a shell loop like upstream's legacy NetworkPolicy client."""
    match = re.search(r"(?:/agnhost|agnhost)\s+connect\s+([^;&|]*)", script)
    if not match:
        return None
    return ["connect", *shlex.split(match.group(1))]


_URL = re.compile(r"""['"]?(https?://[^'"\s]+)['"]?""")


def _curl_url(argv: list[str]) -> str | None:
    """The URL of `curl [flags] URL` (flags with a value are skipped, quotes stripped)."""
    if not argv or argv[0].rsplit("/", 1)[-1] != "curl":
        return None
    for arg in argv[1:]:
        found = _URL.fullmatch(arg)
        if found:
            return found.group(1)
    return None


def _shell_curl(script: str) -> str | None:
    match = re.search(r"\bcurl\b[^;&|]*?" + _URL.pattern, script)
    return match.group(1) if match else None


def read_container(container: dict[str, Any]) -> Workload:
    argv = _argv(container)
    url = _curl_url(argv)
    if url is not None:
        return Workload(long_running=False, curl=url)
    if argv[:2] == ["chroot", "/rootfs"] and len(argv) >= 5 and argv[3] == "-c":
        return Workload(long_running=False, hostexec=argv[4])
    if argv[:1] == ["nsenter"] and "--" in argv:
        rest = argv[argv.index("--") + 1 :]
        if len(rest) >= 3 and rest[0] in ("sh", "/bin/sh", "bash") and rest[1] == "-c":
            return Workload(long_running=False, hostexec=rest[2], nsenter=True)
        return Workload(long_running=False, hostexec=" ".join(rest), nsenter=True)
    if argv[:2] in (["sh", "-c"], ["/bin/sh", "-c"]) and len(argv) >= 3:
        prober = _shell_prober(argv[2])
        if prober is not None:
            return Workload(long_running=True, prober=prober)
        inner = _shell_connect(argv[2])
        shell_url = _shell_curl(argv[2]) if inner is None else None
        if shell_url is not None:
            return Workload(long_running=False, curl=shell_url)
        if inner is not None:
            argv = inner
        else:
            # `sleep`/`while true` style keep-alives; a pod with an unknown script stays up.
            return Workload(long_running=True)
    if not argv:
        return Workload(long_running=True)
    sub = argv[0]
    if sub == "porter":
        return Workload(long_running=True, listens=_porter(container))
    if sub == "netexec":
        return Workload(long_running=True, listens=_netexec(argv), netexec=True)
    if sub == "connect":
        parsed = _parse_connect(argv)
        if isinstance(parsed, str):
            return Workload(long_running=False, bad_usage=parsed)
        return Workload(long_running=False, connect=parsed)
    # pause, sleep infinity, test-webserver…: up and serving nothing the lab tracks.
    return Workload(long_running=True)


def read_pod(spec: dict[str, Any]) -> Workload:
    """A pod is one-shot when its first container is; servers add up over all containers."""
    containers = spec.get("containers") or []
    workloads = [read_container(c) for c in containers]
    if not workloads:
        return Workload(long_running=True)
    first = workloads[0]
    listens: set[Listen] = set()
    for workload in workloads:
        listens |= workload.listens
    return Workload(
        netexec=any(w.netexec for w in workloads),
        curl=first.curl,
        long_running=first.long_running,
        listens=listens,
        connect=first.connect,
        hostexec=first.hostexec,
        nsenter=first.nsenter,
        bad_usage=first.bad_usage,
        prober=next((w.prober for w in workloads if w.prober is not None), None),
    )
