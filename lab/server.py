"""The lab HTTP server: many emulated Kubernetes API servers behind one port.

Cluster NAME lives under `/clusters/NAME`; see docs/lab-protocol.md for what it answers.
Run it standalone with `python -m lab.server --profiles lab/profiles --port 8081`.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from lab import rbac
from lab.cluster import KIND_OF, Cluster
from lab.daemonsets import configmaps, daemonsets
from lab.errors import ApiError
from lab.profiles import load_profiles, validate_profile
from lab.watch import WatchStream, check_list_resource_version, is_watch

_NS = r"(?P<ns>[a-z0-9.-]+)"
_NAME = r"(?P<name>[^/]+)"
LIST_KIND = {"pods": "PodList", "services": "ServiceList", "networkpolicies": "NetworkPolicyList"}
LIST_API_VERSION = {"pods": "v1", "services": "v1", "networkpolicies": "networking.k8s.io/v1"}
PREFIX = {"pods": "/api/v1", "services": "/api/v1", "networkpolicies": "/apis/networking.k8s.io/v1"}

Handler = Callable[[Cluster, dict[str, str], dict[str, list[str]], Any], tuple[int, Any]]


def _list(
    kind: str, api_version: str, items: list[dict[str, Any]], cluster: Cluster
) -> dict[str, Any]:
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {"resourceVersion": str(cluster.resource_version)},
        "items": items,
    }


# The kind and apiVersion of each list's items, for watch events (list items carry neither).
ITEM_TYPE = {
    "pods": ("Pod", "v1"),
    "services": ("Service", "v1"),
    "networkpolicies": ("NetworkPolicy", "networking.k8s.io/v1"),
    "namespaces": ("Namespace", "v1"),
    "nodes": ("Node", "v1"),
    "endpoints": ("Endpoints", "v1"),
    "endpointslices": ("EndpointSlice", "discovery.k8s.io/v1"),
}


def _list_or_watch(
    resource: str,
    list_kind: str,
    api_version: str,
    cluster: Cluster,
    namespace: str | None,
    query: dict[str, list[str]],
    produce: Callable[[], list[dict[str, Any]]],
) -> tuple[int, Any]:
    """A list answer, or with ?watch=true the watch stream of the same collection."""
    if is_watch(query):
        kind, item_version = ITEM_TYPE[resource]
        snapshot = [
            {
                "kind": kind,
                "apiVersion": item_version,
                **{k: v for k, v in item.items() if k not in ("kind", "apiVersion")},
            }
            for item in produce()
        ]
        return 200, WatchStream(cluster, resource, namespace, query, snapshot, _ROUTER.stopping)
    check_list_resource_version(cluster, query)
    return 200, _list(list_kind, api_version, produce(), cluster)


def _q(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


class _Router:
    def __init__(self) -> None:
        self.routes: list[tuple[re.Pattern[str], dict[str, Handler]]] = []
        # Set per request by the handler thread: the serving lab's stop event (ends watches).
        self._local = threading.local()

    @property
    def stopping(self) -> threading.Event:
        return self._local.stopping

    def add(self, pattern: str, **methods: Handler) -> None:
        self.routes.append((re.compile(f"^{pattern}/?$"), methods))

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        for regex, methods in self.routes:
            found = regex.match(path)
            if found:
                if method not in methods:
                    raise ApiError(
                        405,
                        "the server does not allow this method on the requested resource",
                        reason="MethodNotAllowed",
                    )
                return methods[method], found.groupdict()
        raise ApiError(404, "the server could not find the requested resource")


def _build_router() -> _Router:
    r = _Router()
    r.add("/version", GET=lambda c, a, q, b: (200, c.version()))
    r.add("/(healthz|readyz|livez)", GET=lambda c, a, q, b: (200, "ok"))
    r.add(
        "/api",
        GET=lambda c, a, q, b: (
            200,
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": "172.18.0.2:6443"}
                ],
            },
        ),
    )
    r.add(
        "/api/v1/nodes",
        GET=lambda c, a, q, b: (
            200,
            _list(
                "NodeList",
                "v1",
                [
                    c.render_node(n, in_list=True)
                    for n in c.nodes
                    if _labels_ok(q, c.render_node(n))
                ],
                c,
            ),
        ),
    )

    def get_node(c: Cluster, a: dict[str, str], q: Any, b: Any) -> tuple[int, Any]:
        node = c.node_by_name(a["name"])
        if node is None:
            raise ApiError(
                404, f'nodes "{a["name"]}" not found', details={"name": a["name"], "kind": "nodes"}
            )
        return 200, c.render_node(node)

    r.add(f"/api/v1/nodes/{_NAME}", GET=get_node)
    r.add(
        "/api/v1/namespaces",
        GET=lambda c, a, q, b: _list_or_watch(
            "namespaces",
            "NamespaceList",
            "v1",
            c,
            None,
            q,
            lambda: [
                {k: v for k, v in ns.items() if k not in ("kind", "apiVersion")}
                for ns in c.list_namespaces(_q(q, "labelSelector"))
            ],
        ),
        POST=lambda c, a, q, b: (201, c.create_namespace(_body(b))),
    )
    r.add(
        f"/api/v1/namespaces/{_NAME}",
        GET=lambda c, a, q, b: (200, c.get_namespace(a["name"])),
        DELETE=lambda c, a, q, b: (200, c.delete_namespace(a["name"])),
    )
    for kind in KIND_OF:
        _add_kind(r, kind)
    r.add(
        f"/api/v1/namespaces/{_NS}/pods/{_NAME}/log",
        GET=lambda c, a, q, b: (200, _Text(c.pod_log(a["ns"], a["name"], _q(q, "container")))),
    )
    r.add(
        f"/api/v1/namespaces/{_NS}/endpoints",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpoints",
            "EndpointsList",
            "v1",
            c,
            a["ns"],
            q,
            lambda: c.list_endpoints(a["ns"], _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/api/v1/namespaces/{_NS}/endpoints/{_NAME}",
        GET=lambda c, a, q, b: (200, _endpoints(c, a["ns"], a["name"])),
    )
    r.add(
        "/api/v1/endpoints",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpoints",
            "EndpointsList",
            "v1",
            c,
            None,
            q,
            lambda: c.list_endpoints(None, _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/apis/discovery.k8s.io/v1/namespaces/{_NS}/endpointslices",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpointslices",
            "EndpointSliceList",
            "discovery.k8s.io/v1",
            c,
            a["ns"],
            q,
            lambda: c.list_endpointslices(a["ns"], _q(q, "labelSelector")),
        ),
    )
    r.add(
        f"/apis/discovery.k8s.io/v1/namespaces/{_NS}/endpointslices/{_NAME}",
        GET=lambda c, a, q, b: (200, c.get_endpointslice(a["ns"], a["name"])),
    )
    r.add(
        "/apis/discovery.k8s.io/v1/endpointslices",
        GET=lambda c, a, q, b: _list_or_watch(
            "endpointslices",
            "EndpointSliceList",
            "discovery.k8s.io/v1",
            c,
            None,
            q,
            lambda: c.list_endpointslices(None, _q(q, "labelSelector")),
        ),
    )
    # The CNI's and kube-proxy's DaemonSets (lab/daemonsets.py), read to detect the CNI.
    r.add(
        "/apis/apps/v1/daemonsets",
        GET=lambda c, a, q, b: (200, _list("DaemonSetList", "apps/v1", daemonsets(c), c)),
    )
    r.add(
        f"/apis/apps/v1/namespaces/{_NS}/daemonsets",
        GET=lambda c, a, q, b: (200, _list("DaemonSetList", "apps/v1", daemonsets(c, a["ns"]), c)),
    )
    # The ConfigMaps that say a CNI's mode and kube-proxy's (lab/daemonsets.py).
    r.add(
        f"/api/v1/namespaces/{_NS}/configmaps",
        GET=lambda c, a, q, b: (200, _list("ConfigMapList", "v1", configmaps(c, a["ns"]), c)),
    )
    return r


def _add_kind(r: _Router, k: str) -> None:
    """The routes of one kind of object (a function, so that each route's lambdas keep their kind)."""
    prefix = PREFIX[k]
    r.add(
        f"{prefix}/namespaces/{_NS}/{k}",
        GET=lambda c, a, q, b: _list_or_watch(
            k,
            LIST_KIND[k],
            LIST_API_VERSION[k],
            c,
            a["ns"],
            q,
            lambda: _checked_ns(
                c, a["ns"], lambda: c.list_objects(k, a["ns"], _q(q, "labelSelector"))
            ),
        ),
        POST=lambda c, a, q, b: (201, c.create(k, a["ns"], _body(b))),
    )
    r.add(
        f"{prefix}/namespaces/{_NS}/{k}/{_NAME}",
        GET=lambda c, a, q, b: (200, c.get(k, a["ns"], a["name"])),
        DELETE=lambda c, a, q, b: (200, c.delete(k, a["ns"], a["name"])),
    )
    r.add(
        f"{prefix}/{k}",
        GET=lambda c, a, q, b: _list_or_watch(
            k,
            LIST_KIND[k],
            LIST_API_VERSION[k],
            c,
            None,
            q,
            lambda: c.list_objects(k, None, _q(q, "labelSelector")),
        ),
    )


class _Text(str):
    """A plain-text answer (pod logs)."""


def _labels_ok(query: dict[str, list[str]], obj: dict[str, Any]) -> bool:
    from lab.labels import matches_query

    return matches_query(_q(query, "labelSelector"), obj["metadata"].get("labels"))


def _checked_ns(
    cluster: Cluster, namespace: str, produce: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    # Listing in a missing namespace answers an empty list on a real server, not 404.
    return produce()


def _endpoints(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    if (namespace, name) not in cluster.objects["services"]:
        raise ApiError(
            404, f'endpoints "{name}" not found', details={"name": name, "kind": "endpoints"}
        )
    return cluster.render_endpoints((namespace, name))


def _body(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return raw


_ROUTER = _build_router()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body leave in one write: separate small writes on a keep-alive connection
    # meet Nagle + delayed ACK and cost ~40 ms per request.
    wbufsize = -1
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib signature
        if self.server.lab.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:  # http.server's names
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def _send(self, code: int, payload: Any) -> None:
        if isinstance(payload, _Text) or isinstance(payload, str):
            data, ctype = str(payload).encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        _ROUTER._local.stopping = self.server.lab.stopping
        try:
            code, payload = self._dispatch(method, raw)
        except ApiError as err:
            code, payload = err.code, err.status()
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            # A body of the wrong shape (a string where an object belongs): a real server fails
            # to decode it; answer a Status instead of dropping the connection.
            refused = ApiError(
                400, f"the request body could not be decoded: {type(exc).__name__}: {exc}"
            )
            code, payload = refused.code, refused.status()
        if isinstance(payload, WatchStream):
            self._stream(payload)
        else:
            self._send(code, payload)

    def _stream(self, watch: WatchStream) -> None:
        """Newline-delimited JSON events in HTTP/1.1 chunks, one flush per event."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for event in watch.lines():
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _dispatch(self, method: str, raw: bytes) -> tuple[int, Any]:
        lab = self.server.lab
        url = urlsplit(self.path)
        found = re.match(r"^/clusters/([^/]+)(/.*)?$", url.path)
        if not found:
            raise ApiError(404, "no such lab cluster; use /clusters/NAME")
        name, rest = unquote(found.group(1)), found.group(2) or "/"
        cluster = lab.clusters.get(name)
        if cluster is None:
            raise ApiError(404, f'lab cluster "{name}" not found')
        who = rbac.authenticate(cluster, self.headers.get("Authorization"))
        faults = cluster.faults
        if faults["api_timeout"]:
            # Hang like an overloaded apiserver; stop() wakes us so shutdown stays quick.
            lab.stopping.wait(float(faults["api_timeout_s"]))
            raise ApiError(
                504,
                "Timeout: request did not complete within the allotted timeout",
                reason="Timeout",
            )
        with cluster.lock:
            if faults["api_error_rate"] and cluster.fault_rng.random() < faults["api_error_rate"]:
                if cluster.fault_rng.random() < 0.25:
                    raise ApiError(
                        503,
                        "the server is currently unable to handle the request",
                        reason="ServiceUnavailable",
                    )
                raise ApiError(500, "Internal error occurred: etcdserver: request timed out")
            query = parse_qs(url.query)
            rbac.authorize(cluster, who, method, rest, query)  # 403 as the RBAC authorizer words it
            if (
                rest.startswith("/apis/discovery.k8s.io/v1/")
                and not cluster.serves_endpointslices()
            ):
                raise ApiError(404, "the server could not find the requested resource")
            body: Any = None
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError as exc:
                    raise ApiError(400, f"the request body is not valid JSON: {exc}") from exc
            served = rbac.serve(cluster, method, rest, body)  # RBAC objects and TokenRequest
            if served is not None:
                return served
            handler, args = _ROUTER.match(method, rest)
            cluster.advance()
            return handler(cluster, args, query, body)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    lab: LabServer


class LabServer:
    """Serves one emulated cluster per profile; `start()` runs it on a background thread."""

    def __init__(
        self,
        profiles: list[dict[str, Any]],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        verbose: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.verbose = verbose
        self.stopping = threading.Event()
        self.clusters: dict[str, Cluster] = {}
        for profile in profiles:
            checked = validate_profile(profile, f"<profile {profile.get('name', '?')}>")
            if checked["name"] in self.clusters:
                raise ValueError(f"<profile {checked['name']}>: field name is used twice")
            self.clusters[checked["name"]] = Cluster(checked)
            rbac.state_of(self.clusters[checked["name"]])  # a bad role file fails here, not later
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> LabServer:
        self._httpd = _HTTPServer((self.host, self.port), _RequestHandler)
        self._httpd.lab = self
        self.port = self._httpd.server_address[1]
        # A short poll interval keeps stop() fast (shutdown waits for the next poll).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="lab-server", daemon=True
        )
        self._thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def cluster_url(self, name: str) -> str:
        self.cluster(name)
        return f"{self.base_url}/clusters/{name}"

    def cluster(self, name: str) -> Cluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise KeyError(f"no lab cluster named {name!r}") from None

    def kubeconfig(self, name: str) -> dict[str, Any]:
        token = self.cluster(name).profile["token"]
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.cluster_url(name)}}],
            "users": [{"name": f"{name}-admin", "user": {"token": token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
            "current-context": name,
            "preferences": {},
        }

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LabServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.server", description="Serve emulated Kubernetes clusters."
    )
    parser.add_argument("--profiles", required=True, help="directory of profile YAML files")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    try:
        profiles = load_profiles(args.profiles)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    lab = LabServer(profiles, host=args.host, port=args.port, verbose=args.verbose).start()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    for name in lab.clusters:
        print(f"{name} {lab.cluster_url(name)}", flush=True)
    done.wait()
    lab.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
