"""Where the dashboard may connect on a vendor's behalf: cluster servers are checked, then pinned.

A kubeconfig's `server` is a URL someone outside the project typed. Without care the web and
the worker would connect wherever it points: the loopback (Redis, the database, the lab),
the cloud's metadata address, the private network. So a server is

- parsed strictly: http(s), a host, an optional port and path prefix; no user info, query or
  fragment (a `#` or `?` would pick another path than the client's);
- resolved once (odd IPv4 forms such as `127.1`, `2130706433` or `0x7f.1` resolve like the
  system resolver reads them, IPv6-mapped IPv4 addresses are judged by the IPv4 address);
- refused when any address it resolves to is loopback, link-local, private, multicast,
  unspecified or otherwise not global, unless it lies inside `CLUSTER_ALLOWED_NETWORKS`;
- and connected to at the checked address only (`pin_api_client`): the hostname is kept for
  the Host header, TLS SNI and certificate verification, so DNS answering differently a
  second later (rebinding) changes nothing, and a redirect or a proxy cannot lead elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from kernel import config

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

RESOLVE_TIMEOUT = 5.0
# A path prefix (API servers behind a proxy: https://rancher.example/k8s/clusters/c-1): plain
# segments only, no dot segments, no escapes.
_PATH_RE = re.compile(r"^(/[A-Za-z0-9._~!$&'()*+,;=:@-]*)*$")


class ServerNotAllowed(ValueError):
    """The server URL is malformed or points where the dashboard must not connect."""


@dataclass(frozen=True)
class Server:
    scheme: str
    host: str  # as written (a hostname or an IP literal, without brackets)
    port: int
    path: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path}"


@dataclass(frozen=True)
class Words:
    """How refusals name what was checked: a cluster's server (the default) or a webhook."""

    url: str = "the server URL"
    host: str = "the server"
    refused: str = "where clusters may not be (CLUSTER_ALLOWED_NETWORKS lists the exceptions)"


SERVER_WORDS = Words()


def parse_server(text: str, words: Words = SERVER_WORDS, *, request_target: bool = False) -> Server:
    """The URL's parts, or ServerNotAllowed naming what is wrong (never echoing it).

    A cluster's server URL may carry a path prefix of plain segments and no query; with
    `request_target` (a webhook) the path and query are the request target, kept in `path`.
    """
    text = str(text or "").strip()
    if any(c.isspace() or ord(c) < 32 or c == "\\" for c in text):
        raise ServerNotAllowed(f"{words.url} contains spaces or control characters")
    if not request_target and ("?" in text or "#" in text):
        raise ServerNotAllowed(f"{words.url} may not have a query ('?') or fragment ('#')")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ServerNotAllowed(f"{words.url} is not a valid http(s) URL") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServerNotAllowed(f"{words.host} is not an http(s) URL with a host")
    if "@" in parts.netloc:
        raise ServerNotAllowed(f"{words.url} may not carry a user name or password")
    if request_target:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    else:
        path = parts.path.rstrip("/")
        if path and (
            not _PATH_RE.match(path) or any(seg in (".", "..") for seg in path.split("/"))
        ):
            raise ServerNotAllowed(f"{words.url}'s path may only hold plain segments")
    host = parts.hostname.rstrip(".")
    if not host:
        raise ServerNotAllowed(f"{words.host} is not an http(s) URL with a host")
    return Server(parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path)


def allowed_networks(value: Any = None) -> list[IPNetwork]:
    """CLUSTER_ALLOWED_NETWORKS as networks (a comma-separated string or a list of CIDRs);
    without a value, the configured one (kernel/config.py)."""
    if value is None:
        value = config.current().cluster_allowed_networks
    items = value.split(",") if isinstance(value, str) else list(value or [])
    networks = []
    for item in items:
        item = str(item).strip()
        if item:
            networks.append(ipaddress.ip_network(item, strict=False))
    return networks


def _effective(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return address


def refusal(address: IPAddress, networks: list[IPNetwork]) -> str | None:
    """Why the dashboard may not connect to `address`, or None when it may."""
    for candidate in {address, _effective(address)}:
        if any(candidate.version == n.version and candidate in n for n in networks):
            return None
    address = _effective(address)
    for label, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return label
    if not address.is_global:
        return "not public"
    return None


def _getaddrinfo(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def resolve(host: str, port: int, timeout: float = RESOLVE_TIMEOUT) -> list[IPAddress]:
    """Every address `host` resolves to, under a deadline (getaddrinfo has none of its own)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="resolve")
    try:
        found = pool.submit(_getaddrinfo, host, port).result(timeout=max(0.1, timeout))
    except concurrent.futures.TimeoutError as exc:
        raise ServerNotAllowed("the server's host name did not resolve in time") from exc
    except (OSError, UnicodeError) as exc:
        raise ServerNotAllowed("the server's host name does not resolve") from exc
    finally:
        pool.shutdown(wait=False)
    addresses = []
    for text in found:
        try:
            addresses.append(ipaddress.ip_address(text.split("%", 1)[0]))
        except ValueError:
            continue
    if not addresses:
        raise ServerNotAllowed("the server's host name does not resolve")
    return addresses


@dataclass
class Pin:
    """A server checked once: the address every connection of one client goes to."""

    server: Server
    address: IPAddress
    _sockets: list[socket.socket] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    aborted: bool = False

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.aborted:
                _shutdown(sock)

    def interrupt(self) -> None:
        """Ends the connections open now (one call passed its deadline); new ones may follow."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)

    def abort(self) -> None:
        """Ends every connection now (a deadline passed): blocked reads return at once."""
        with self._lock:
            self.aborted = True
            for sock in self._sockets:
                _shutdown(sock)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def check_server(
    text: str,
    networks: list[IPNetwork] | None = None,
    timeout: float = RESOLVE_TIMEOUT,
    words: Words = SERVER_WORDS,
    *,
    request_target: bool = False,
) -> Pin:
    """Parse, resolve once and judge the server; the Pin to connect with, or ServerNotAllowed."""
    server = parse_server(text, words, request_target=request_target)
    networks = allowed_networks() if networks is None else networks
    addresses = resolve(server.host, server.port, timeout)
    for address in addresses:
        why = refusal(address, networks)
        if why:
            raise ServerNotAllowed(f"{words.host} resolves to a {why} address, {words.refused}")
    return Pin(server, addresses[0])


def _pinned_connection(base: type[HTTPConnection], pin: Pin) -> type[HTTPConnection]:
    class PinnedConnection(base):  # type: ignore[valid-type,misc]
        def _new_conn(self) -> socket.socket:
            if pin.aborted:
                raise NewConnectionError(self, "the deadline passed")
            try:
                sock = urllib3.util.connection.create_connection(
                    (str(pin.address), self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, "connect timed out") from exc
            except OSError as exc:
                raise NewConnectionError(self, f"failed to connect: {exc}") from exc
            pin.track(sock)
            return sock

    return PinnedConnection


class PinnedPoolManager(urllib3.PoolManager):
    """A PoolManager that talks to the pinned server only, at its checked address."""

    def __init__(self, pin: Pin, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pin = pin
        http = type(
            "PinnedHTTPPool",
            (HTTPConnectionPool,),
            {"ConnectionCls": _pinned_connection(HTTPConnection, pin)},
        )
        https = type(
            "PinnedHTTPSPool",
            (HTTPSConnectionPool,),
            {"ConnectionCls": _pinned_connection(HTTPSConnection, pin)},
        )
        self.pool_classes_by_scheme = {"http": http, "https": https}

    def _new_pool(self, scheme: str, host: str, port: int, request_context: Any = None) -> Any:
        server = self.pin.server
        if (
            scheme != server.scheme
            or host.strip("[]").rstrip(".").lower() != server.host.lower()
            or port != server.port
        ):
            raise NewConnectionError(None, "refused: not the cluster's checked server")  # type: ignore[arg-type]
        return super()._new_pool(scheme, host, port, request_context)


def pin_api_client(api: Any, pin: Pin) -> None:
    """Makes a kubernetes ApiClient connect only to `pin` (no proxy, no other host)."""
    rest = api.rest_client
    old = rest.pool_manager
    if isinstance(old, urllib3.ProxyManager) or getattr(api.configuration, "proxy", None):
        raise ServerNotAllowed("the kubeconfig names a proxy; clusters are reached directly")
    kwargs = dict(old.connection_pool_kw)
    old.clear()
    rest.pool_manager = PinnedPoolManager(pin, num_pools=4, **kwargs)
