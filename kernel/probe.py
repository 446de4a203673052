"""Node preflight for SCTP, and a tiny SCTP/TCP/UDP echo server and client.

``python -m kernel.probe check [--json] [--load]`` answers, on a Kubernetes node or in a
hostNetwork pod, whether SCTP can work there: is ``sctp.ko`` available, loaded, loadable (or
disabled by modprobe configuration); can an SCTP socket be opened (plain ``socket`` and
pysctp); does conntrack and ipvs know SCTP; which kube-proxy rules exist for SCTP. It exits 0
when SCTP is usable (or will be as soon as a socket loads the module), 1 when it is not, and 2
when it cannot tell, always with the reason. Only a socket that opens, or an sctp.ko that is
found on disk, makes SCTP available: with no module tree and no modinfo, and no socket tried,
the answer is UNKNOWN, never LOADABLE.

It never loads ``sctp.ko`` by itself unless asked with ``--load``: opening an SCTP socket makes
the kernel load the module, and KEP-614's basic tests require that nothing loads it behind the
operator's back. So when the module is on disk but not loaded, the socket test is skipped.

``serve --port P`` and ``connect HOST:PORT`` are the probe's two ends for traffic tests (used in
the kernel guest): the client prints ``OK``, or ``TIMEOUT`` / ``REFUSED`` / ``OTHER: …`` like
agnhost's ``connect``, and exits non-zero on failure.

Only the standard library, pysctp (optional) and ``kernel.battery.nodeparse`` are imported,
so the module runs on a bare node with python3 and in the guest.

The battery's runner never runs it (issue 40, item 11): it reaches nodes only through hostexec
pods that run the node's own tools and parses their output with ``kernel.battery.nodeparse``,
the same parsers this probe uses; a node has no copy of this file to run.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

IPPROTO_SCTP = getattr(socket, "IPPROTO_SCTP", 132)
ECHO_PAYLOAD = b"sctp-dashboard-probe"
PROXY_MODE_URL = "http://localhost:10249/proxyMode"

# Tools' output are read with the battery's own parsers, so the guest tests check them on real
# output. Imported lazily: a missing module must not stop the socket checks.


def _nodeparse() -> Any:
    # deferred: the probe also runs where only it and the node parsers are copied (the guest)
    from kernel.battery import nodeparse

    return nodeparse


# ---------------------------------------------------------------- facts


@dataclass
class ModuleFacts:
    kernel: str
    builtin: bool = False  # compiled into the kernel (modules.builtin)
    available: bool | None = None  # a sctp.ko on disk; None when /lib/modules is unreadable
    path: str | None = None
    loaded: bool = False  # /proc/modules (or lsmod) lists sctp
    in_kernel: bool = False  # /proc/net/protocols lists SCTP: loaded or built in
    disabled_by: str | None = None  # e.g. "install sctp /bin/true" in modprobe config
    load_attempt: str | None = None  # what --load did


@dataclass
class SocketFacts:
    attempted: bool = False
    skipped_reason: str | None = None
    plain_stream: str | None = None  # "ok" or "errno N (ENAME): text"
    plain_seqpacket: str | None = None
    pysctp: str | None = None
    pysctp_version: str | None = None


@dataclass
class ConntrackFacts:
    present: bool = False  # /proc/net/nf_conntrack or nf_conntrack sysctls
    sctp_sysctls: list[str] = field(default_factory=list)
    sctp_entries: int | None = None


@dataclass
class IpvsFacts:
    loaded: bool = False  # /proc/net/ip_vs exists
    module_available: bool | None = None
    sctp_services: list[dict[str, Any]] = field(default_factory=list)
    source: str | None = None  # "ipvsadm" or "/proc/net/ip_vs"


@dataclass
class ProxierFacts:
    proxy_mode: str | None = None
    iptables_sctp_rules: list[str] = field(default_factory=list)
    ipvs_sctp_services: list[dict[str, Any]] = field(default_factory=list)
    nft_sctp_elements: list[list[Any]] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)  # tool -> "ok" | "absent" | error


@dataclass
class Report:
    verdict: str  # usable | loadable | unavailable | unknown
    reason: str
    module: ModuleFacts
    sockets: SocketFacts
    conntrack: ConntrackFacts
    ipvs: IpvsFacts
    proxier: ProxierFacts

    @property
    def ok(self) -> bool:
        return self.verdict in ("usable", "loadable")


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def _run(cmd: list[str], timeout: float = 10.0) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return 127, ""
    except subprocess.TimeoutExpired:
        return 124, ""
    return proc.returncode, proc.stdout + proc.stderr


def _errno_text(exc: OSError) -> str:
    code = exc.errno or 0
    name = errno.errorcode.get(code, "?")
    return f"errno {code} ({name}): {exc.strerror or exc}"


def module_facts(modules_root: str = "/lib/modules") -> ModuleFacts:
    kernel = platform.release()
    facts = ModuleFacts(kernel=kernel)
    protocols = _read("/proc/net/protocols") or ""
    facts.in_kernel = any(line.split()[:1] == ["SCTP"] for line in protocols.splitlines())
    proc_modules = _read("/proc/modules")
    if proc_modules is not None:
        facts.loaded = any(line.split()[:1] == ["sctp"] for line in proc_modules.splitlines())
    elif shutil.which("lsmod"):
        code, out = _run(["lsmod"])
        facts.loaded = code == 0 and bool(_nodeparse().sctp_module_loaded(out))
    moddir = Path(modules_root) / kernel
    builtin = _read(moddir / "modules.builtin")
    if builtin is not None:
        facts.builtin = any(re.search(r"/sctp\.ko$", line) for line in builtin.splitlines())
    if moddir.is_dir():
        found = sorted(moddir.glob("kernel/net/sctp/sctp.ko*"))
        if not found:
            found = sorted(moddir.rglob("sctp.ko*"))
        facts.available = bool(found) or facts.builtin
        facts.path = str(found[0]) if found else None
    elif shutil.which("modinfo"):
        # No module tree for this kernel (e.g. a VM image without /lib/modules): modinfo
        # gives the same answer modprobe would.
        code, out = _run(["modinfo", "-F", "filename", "sctp"])
        facts.available = code == 0 and bool(out.strip())
        facts.path = out.strip().splitlines()[0] if facts.available else None
    if facts.loaded or facts.builtin:
        facts.available = True
    if shutil.which("modprobe") and not facts.loaded and not facts.builtin:
        # A dry run shows what loading would do: CIS-hardened nodes use "install sctp /bin/true".
        code, out = _run(["modprobe", "-n", "-v", "sctp"])
        for line in out.splitlines():
            if line.startswith("install ") and re.search(r"/bin/(true|false)\b", line):
                facts.disabled_by = line.strip()
        if facts.disabled_by is None:
            code, conf = _run(["modprobe", "-c"])
            if code == 0 and re.search(r"^blacklist\s+sctp\s*$", conf, re.MULTILINE):
                facts.disabled_by = "blacklist sctp (no autoload on first socket)"
    return facts


def load_module(facts: ModuleFacts) -> None:
    code, out = _run(["modprobe", "sctp"], timeout=30)
    facts.load_attempt = (
        "modprobe sctp: ok" if code == 0 else f"modprobe sctp failed ({code}): {out.strip()}"
    )
    proc_modules = _read("/proc/modules") or ""
    facts.loaded = any(line.split()[:1] == ["sctp"] for line in proc_modules.splitlines())
    protocols = _read("/proc/net/protocols") or ""
    facts.in_kernel = any(line.split()[:1] == ["SCTP"] for line in protocols.splitlines())


def _try_socket(kind: int) -> str:
    try:
        sock = socket.socket(socket.AF_INET, kind, IPPROTO_SCTP)
    except OSError as exc:
        return _errno_text(exc)
    sock.close()
    return "ok"


def socket_facts(module: ModuleFacts, force: bool) -> SocketFacts:
    facts = SocketFacts()
    try:
        import sctp  # deferred: pysctp is optional

        facts.pysctp_version = _pysctp_version()
    except ImportError as exc:
        sctp = None
        facts.pysctp = f"not importable: {exc}"
    # Opening an SCTP socket loads sctp.ko when it is on disk: only do it when that cannot
    # change the node (already in the kernel, or nothing to load) or when asked to.
    harmless = module.in_kernel or module.loaded or module.available is False
    if not (harmless or force):
        facts.skipped_reason = (
            "not attempted: opening an SCTP socket would load sctp.ko "
            "(run with --load to load it and test)"
        )
        return facts
    facts.attempted = True
    facts.plain_stream = _try_socket(socket.SOCK_STREAM)
    facts.plain_seqpacket = _try_socket(socket.SOCK_SEQPACKET)
    if sctp is not None:
        try:
            sk = sctp.sctpsocket_tcp(socket.AF_INET)
        except OSError as exc:
            facts.pysctp = _errno_text(exc)
        else:
            sk.close()
            facts.pysctp = "ok"
    return facts


def _pysctp_version() -> str | None:
    try:
        return version("pysctp")
    except Exception:  # metadata is optional: the guest unzips the wheel
        return None


def conntrack_facts() -> ConntrackFacts:
    facts = ConntrackFacts()
    sysctl_dir = Path("/proc/sys/net/netfilter")
    facts.present = (
        Path("/proc/net/nf_conntrack").exists() or (sysctl_dir / "nf_conntrack_max").exists()
    )
    if sysctl_dir.is_dir():
        facts.sctp_sysctls = sorted(p.name for p in sysctl_dir.glob("nf_conntrack_sctp_*"))
    table = _read("/proc/net/nf_conntrack")
    if table is not None:
        facts.sctp_entries = sum(1 for line in table.splitlines() if " sctp " in f" {line} ")
    return facts


def _proc_ip_vs_sctp(text: str) -> list[dict[str, Any]]:
    """SCTP virtual services from /proc/net/ip_vs (hex addresses), for nodes without ipvsadm."""
    services: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("TCP", "UDP", "SCTP") and ":" in parts[1]:
            current = None
            if parts[0] == "SCTP":
                current = {
                    "vip": _hexaddr(parts[1])[0],
                    "port": _hexaddr(parts[1])[1],
                    "scheduler": parts[2],
                    "reals": [],
                }
                services.append(current)
        elif current is not None and len(parts) >= 3 and parts[0] == "->" and ":" in parts[1]:
            ip, port = _hexaddr(parts[1])
            current["reals"].append([ip, port, parts[2]])
    return services


def _hexaddr(text: str) -> tuple[str, int]:
    host, port = text.rsplit(":", 1)
    if len(host) == 8:
        ip = ".".join(str(int(host[i : i + 2], 16)) for i in range(0, 8, 2))
    else:
        ip = host
    return ip, int(port, 16)


def ipvs_facts(modules: ModuleFacts, modules_root: str = "/lib/modules") -> IpvsFacts:
    facts = IpvsFacts(loaded=Path("/proc/net/ip_vs").exists())
    moddir = Path(modules_root) / modules.kernel
    if moddir.is_dir():
        facts.module_available = bool(list(moddir.glob("kernel/net/netfilter/ipvs/ip_vs.ko*")))
    if facts.loaded:
        # ipvsadm reads through netlink; /proc/net/ip_vs is the fallback without the tool.
        text = _read("/proc/net/ip_vs") or ""
        facts.sctp_services = _proc_ip_vs_sctp(text)
        facts.source = "/proc/net/ip_vs"
    return facts


def proxier_facts(ipvs_loaded: bool) -> ProxierFacts:
    import urllib.request  # slow to import; only the check needs it

    parse = _nodeparse()
    facts = ProxierFacts()
    try:
        with urllib.request.urlopen(PROXY_MODE_URL, timeout=1) as answer:
            facts.proxy_mode = parse.proxy_mode(answer.read(200).decode(errors="replace"))
    except OSError:
        facts.proxy_mode = None
    for tool, cmd in (
        ("iptables-save", ["iptables-save"]),
        ("ipvsadm", ["ipvsadm", "-Ln"]),
        ("nft", ["nft", "list", "ruleset"]),
    ):
        if shutil.which(cmd[0]) is None:
            facts.tools[tool] = "absent"
            continue
        if tool == "ipvsadm" and not ipvs_loaded:
            # ipvsadm would load ip_vs just to list nothing; don't change the node.
            facts.tools[tool] = "skipped: ip_vs not loaded"
            continue
        code, out = _run(cmd)
        if code != 0:
            facts.tools[tool] = f"exit {code}: {out.strip()[:200]}"
            continue
        facts.tools[tool] = "ok"
        if tool == "iptables-save":
            facts.iptables_sctp_rules = list(parse.iptables_sctp_rules(out))
        elif tool == "ipvsadm":
            facts.ipvs_sctp_services = [_ipvs_dict(s) for s in parse.ipvs_sctp_services(out)]
        else:
            facts.nft_sctp_elements = [list(e) for e in parse.nft_sctp_service_elements(out)]
    return facts


def _ipvs_dict(service: Any) -> dict[str, Any]:
    if hasattr(service, "_asdict"):
        data = dict(service._asdict())
    elif hasattr(service, "__dataclass_fields__"):
        data = asdict(service)
    else:
        data = dict(vars(service))
    data["reals"] = [list(r) for r in data.get("reals", [])]
    return data


def check(load: bool = False, modules_root: str = "/lib/modules") -> Report:
    module = module_facts(modules_root)
    if load and not module.in_kernel and not module.loaded:
        load_module(module)
    sockets = socket_facts(module, force=load)
    conntrack = conntrack_facts()
    ipvs = ipvs_facts(module, modules_root)
    proxier = proxier_facts(ipvs.loaded)
    verdict, reason = _verdict(module, sockets)
    return Report(verdict, reason, module, sockets, conntrack, ipvs, proxier)


def _verdict(module: ModuleFacts, sockets: SocketFacts) -> tuple[str, str]:
    if sockets.attempted:
        if sockets.plain_stream == "ok":
            how = (
                "built into the kernel"
                if module.builtin
                else ("sctp.ko loaded" if module.loaded else "SCTP in the kernel")
            )
            return "usable", f"an SCTP socket opens ({how})"
        reason = f"cannot open an SCTP socket: {sockets.plain_stream}"
        if module.available is False:
            reason += f"; no sctp.ko for kernel {module.kernel}"
        elif module.available is None:
            reason += f"; no module directory for kernel {module.kernel} to look for sctp.ko"
        if module.disabled_by:
            reason += f"; disabled by modprobe config ({module.disabled_by})"
        if module.load_attempt and "failed" in module.load_attempt:
            reason += f"; {module.load_attempt}"
        return "unavailable", reason
    if module.disabled_by:
        return "unavailable", f"sctp.ko is on disk but disabled: {module.disabled_by}"
    if module.available is not True:
        # Nothing showed a module: no module tree for this kernel, no modinfo, and the socket
        # test was skipped (it could load one, if there is one). Unknown is unknown.
        return "unknown", (
            f"cannot tell: no module directory for kernel {module.kernel} and no modinfo to "
            "look for sctp.ko, and no SCTP socket was tried (it would load the module if one "
            "exists; run with --load to find out)"
        )
    where = f" ({module.path})" if module.path else ""
    return "loadable", (
        f"sctp.ko is available{where} but not loaded; the first SCTP socket will load it"
    )


# ---------------------------------------------------------------- output


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "unknown"}[value]


def render(report: Report) -> str:
    m, s, c, i, p = report.module, report.sockets, report.conntrack, report.ipvs, report.proxier
    lines = [
        f"SCTP on this node: {report.verdict.upper()} - {report.reason}",
        f"  kernel            {m.kernel}",
        f"  sctp.ko           available: {_yes(m.available)}"
        + (f" ({m.path})" if m.path else "")
        + f", built in: {_yes(m.builtin)}"
        + f", loaded: {_yes(m.loaded)}, SCTP in /proc/net/protocols: {_yes(m.in_kernel)}",
    ]
    if m.disabled_by:
        lines.append(f"  disabled          {m.disabled_by}")
    if m.load_attempt:
        lines.append(f"  --load            {m.load_attempt}")
    if s.attempted:
        lines.append(
            f"  socket            SOCK_STREAM: {s.plain_stream}; SOCK_SEQPACKET: "
            f"{s.plain_seqpacket}; pysctp {s.pysctp_version or ''}: {s.pysctp}"
        )
    else:
        lines.append(f"  socket            {s.skipped_reason}")
    sysctls = ", ".join(c.sctp_sysctls[:3]) + (" …" if len(c.sctp_sysctls) > 3 else "")
    lines.append(
        f"  conntrack         present: {_yes(c.present)}, SCTP sysctls: "
        f"{len(c.sctp_sysctls)}{' (' + sysctls + ')' if sysctls else ''}"
        + (f", SCTP entries: {c.sctp_entries}" if c.sctp_entries is not None else "")
    )
    lines.append(
        f"  ipvs              ip_vs loaded: {_yes(i.loaded)}, module on disk: "
        f"{_yes(i.module_available)}, SCTP virtual services: {len(i.sctp_services)}"
    )
    lines.append(f"  kube-proxy mode   {p.proxy_mode or 'unknown (no answer on :10249)'}")
    lines.append("  proxier tools     " + ", ".join(f"{k}: {v}" for k, v in p.tools.items()))
    lines.append(
        f"  SCTP rules        iptables: {len(p.iptables_sctp_rules)}, "
        f"ipvs services: {len(p.ipvs_sctp_services)}, nft service elements: "
        f"{len(p.nft_sctp_elements)}"
    )
    for rule in p.iptables_sctp_rules[:10]:
        lines.append(f"    {rule}")
    for svc in p.ipvs_sctp_services:
        lines.append(
            f"    ipvs SCTP {svc['vip']}:{svc['port']} {svc.get('scheduler')} "
            f"-> {', '.join(f'{r[0]}:{r[1]} {r[2]}' for r in svc['reals'])}"
        )
    for element in p.nft_sctp_elements:
        lines.append(f"    nft {element[0]} . sctp . {element[1]} : {element[2]}")
    return "\n".join(lines)


def to_json(report: Report) -> dict[str, Any]:
    data = asdict(report)
    data["ok"] = report.ok
    return data


# ---------------------------------------------------------------- echo server and client


def _sctp_stream_socket() -> Any:
    """A one-to-one SCTP socket, through pysctp when it is installed."""
    try:
        import sctp  # deferred: pysctp is optional
    except ImportError:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
    return sctp.sctpsocket_tcp(socket.AF_INET)


def _reply(data: bytes, name: str) -> bytes:
    # The echo carries the server's name so a client behind a virtual IP sees which backend
    # answered (load balancing is visible, not assumed).
    return data + (b" from " + name.encode() if name else b"")


def _serve_stream(sock: Any, stop: threading.Event, name: str) -> None:
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        try:
            conn.settimeout(5)
            data = conn.recv(4096)
            if data:
                conn.send(_reply(data, name))
        except OSError:
            pass
        finally:
            conn.close()


def _serve_udp(sock: socket.socket, stop: threading.Event, name: str) -> None:
    sock.settimeout(0.2)
    while not stop.is_set():
        try:
            data, peer = sock.recvfrom(4096)
        except TimeoutError:
            continue
        except OSError:
            return
        sock.sendto(_reply(data, name), peer)


def serve(
    host: str,
    port: int,
    protocols: list[str],
    ready_file: str | None,
    duration: float | None,
    name: str = "",
) -> int:
    stop = threading.Event()
    threads: list[threading.Thread] = []
    sockets: list[Any] = []
    for proto in protocols:
        if proto == "udp":
            sock: Any = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        elif proto == "tcp":
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        else:
            sock = _sctp_stream_socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            print(f"cannot bind {proto} {host}:{port}: {_errno_text(exc)}", file=sys.stderr)
            stop.set()
            for t in threads:
                t.join()
            return 1
        if proto != "udp":
            sock.listen(16)
        sockets.append(sock)
        target = _serve_udp if proto == "udp" else _serve_stream
        threads.append(threading.Thread(target=target, args=(sock, stop, name), daemon=True))
    for t in threads:
        t.start()
    print(f"serving {','.join(protocols)} on {host}:{port}", flush=True)
    if ready_file:
        Path(ready_file).write_text("ready\n")
    if threading.current_thread() is threading.main_thread():  # signals only reach the main thread
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
    deadline = None if duration is None else time.monotonic() + duration
    while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
        stop.wait(0.2)
    stop.set()
    # Join before exit: a thread still running at interpreter shutdown can abort it.
    for t in threads:
        t.join()
    for sock in sockets:
        sock.close()
    return 0


def connect(target: str, protocol: str, timeout: float) -> tuple[int, str]:
    """Echo once through HOST:PORT; returns (exit status, OK|TIMEOUT|REFUSED|DNS|OTHER: …).

    A named server's reply makes it ``OK from NAME``.
    """
    host, _, port_text = target.rpartition(":")
    try:
        port = int(port_text)
        addr = socket.gethostbyname(host.strip("[]"))
    except (ValueError, OSError):
        return 1, "DNS"
    if protocol == "udp":
        sock: Any = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    elif protocol == "tcp":
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    else:
        try:
            sock = _sctp_stream_socket()
        except OSError as exc:
            return 1, f"OTHER: {_errno_text(exc)}"
    sock.settimeout(timeout)
    try:
        sock.connect((addr, port))
        sock.send(ECHO_PAYLOAD)
        reply = sock.recv(4096)
    except TimeoutError:
        return 1, "TIMEOUT"
    except ConnectionRefusedError:
        return 1, "REFUSED"
    except OSError as exc:
        if exc.errno == errno.ECONNREFUSED:
            return 1, "REFUSED"
        if exc.errno in (errno.ETIMEDOUT, errno.EHOSTUNREACH):
            return 1, "TIMEOUT"
        return 1, f"OTHER: {_errno_text(exc)}"
    finally:
        sock.close()
    if not reply.startswith(ECHO_PAYLOAD):
        return 1, f"OTHER: unexpected reply {reply[:40]!r}"
    return 0, "OK" + reply[len(ECHO_PAYLOAD) :].decode(errors="replace")


def _duration(text: str) -> float:
    return float(text[:-1]) if text.endswith("s") else float(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernel.probe", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="node preflight: can SCTP work here?")
    p_check.add_argument("--json", action="store_true", help="print one JSON object")
    p_check.add_argument(
        "--load", action="store_true", help="load sctp.ko if needed and test a socket"
    )
    p_check.add_argument("--modules-root", default="/lib/modules", help=argparse.SUPPRESS)
    p_serve = sub.add_parser("serve", help="echo server")
    p_serve.add_argument("--port", type=int, required=True)
    p_serve.add_argument("--host", default="0.0.0.0")
    p_serve.add_argument("--protocols", default="sctp", help="comma-separated: sctp,tcp,udp")
    p_serve.add_argument("--ready-file", help="written once every socket listens")
    p_serve.add_argument("--duration", type=float, help="stop after this many seconds")
    p_serve.add_argument("--name", default="", help="added to every reply: OK from NAME")
    p_connect = sub.add_parser(
        "connect", help="echo client: prints OK, TIMEOUT, REFUSED, DNS or OTHER"
    )
    p_connect.add_argument("target", help="HOST:PORT")
    p_connect.add_argument("--protocol", default="sctp", choices=("sctp", "tcp", "udp"))
    p_connect.add_argument("--timeout", default="5s", type=_duration)
    p_connect.add_argument(
        "--count",
        type=int,
        default=1,
        help="connect this many times, one line each; fails if any fails",
    )
    args = parser.parse_args(argv)

    if args.command == "check":
        report = check(load=args.load, modules_root=args.modules_root)
        if args.json:
            print(json.dumps(to_json(report), indent=2))
        else:
            print(render(report))
        return 0 if report.ok else (2 if report.verdict == "unknown" else 1)
    if args.command == "serve":
        protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
        bad = [p for p in protocols if p not in ("sctp", "tcp", "udp")]
        if bad or not protocols:
            parser.error(f"unknown protocols {bad}")
        return serve(args.host, args.port, protocols, args.ready_file, args.duration, args.name)
    worst = 0
    for _ in range(max(1, args.count)):
        status, word = connect(args.target, args.protocol, args.timeout)
        print(word, flush=True)
        worst = max(worst, status)
    return worst


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
