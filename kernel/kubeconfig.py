"""Validate user-supplied kubeconfigs and build API clients from them.

A kubeconfig is untrusted input: besides addresses and credentials it can name commands to
run (`exec`, `auth-provider`) and local files to read (`client-key: /etc/...`). The worker
must never do either on a user's behalf, so only inline credentials are accepted.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import threading
import time
from http import HTTPStatus
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from kernel.bounded import bound_api_client
from kernel.kube import tls_failure
from kernel.netguard import Pin, ServerNotAllowed, check_server, parse_server, pin_api_client

MAX_KUBECONFIG_BYTES = 1_000_000
REACHABILITY_TIMEOUT = 5.0
# The whole check (resolving, connecting, TLS, the answer) ends within this, however slowly a
# server drips its answer.
REACHABILITY_DEADLINE = 10.0
MAX_VERSION_BYTES = 64 * 1024
DEFAULT_REQUEST_TIMEOUT = 30.0
# One phrase for every way of not answering (refused, reset, timed out, a banner, TLS, a cut
# answer): the message never says what listens on a port, or whether anything does.
NOT_A_KUBERNETES_SERVER = (
    "is not reachable, or did not answer GET /version as a Kubernetes API server"
)

# Fields that make the client run a program or call out to a credential plugin.
COMMAND_FIELDS = ("exec", "auth-provider")
# Fields whose value is a path the client would read; each has an inline `-data` twin
# (or, for tokens, the inline `token`).
FILE_FIELDS = (
    "certificate-authority",
    "client-certificate",
    "client-key",
    "tokenFile",
    "token-file",
    "tokenfile",
)
INLINE_DATA_FIELDS = ("certificate-authority-data", "client-certificate-data", "client-key-data")


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says why, for the person who pasted it."""


def parse_kubeconfig(text: str) -> dict[str, Any]:
    """The kubeconfig as a dict, or KubeconfigError when it is not a YAML mapping."""
    if not isinstance(text, str) or not text.strip():
        raise KubeconfigError("the kubeconfig is empty")
    if len(text.encode("utf-8", "replace")) > MAX_KUBECONFIG_BYTES:
        raise KubeconfigError(f"the kubeconfig is larger than {MAX_KUBECONFIG_BYTES} bytes")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # The line number only: PyYAML's message quotes the offending line (a token, a key).
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise KubeconfigError(f"the kubeconfig is not YAML: a syntax error{where}") from None
    if not isinstance(data, dict):
        raise KubeconfigError("the kubeconfig is not YAML mapping (expected apiVersion, clusters…)")
    return data


def _named_entries(data: dict[str, Any], section: str, inner: str) -> dict[str, dict[str, Any]]:
    entries = data.get(section) or []
    if not isinstance(entries, list):
        raise KubeconfigError(f"'{section}' must be a list")
    named: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "name" not in entry:
            raise KubeconfigError(f"every entry of '{section}' needs a name")
        body = entry.get(inner)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise KubeconfigError(f"{section[:-1]} '{entry['name']}': '{inner}' must be a mapping")
        named[str(entry["name"])] = body
    return named


def _refuse_unsafe_fields(kind: str, name: str, body: dict[str, Any]) -> None:
    if kind == "cluster" and "proxy-url" in body:
        raise KubeconfigError(
            f"cluster '{name}' uses 'proxy-url'; the dashboard reaches cluster servers directly"
        )
    for key in COMMAND_FIELDS:
        if key in body:
            raise KubeconfigError(
                f"{kind} '{name}' uses '{key}', which would run a command on the worker; "
                "use an inline token or client certificate instead"
            )
    for key in FILE_FIELDS:
        if key in body:
            twin = f"{key}-data" if f"{key}-data" in INLINE_DATA_FIELDS else "token"
            raise KubeconfigError(
                f"{kind} '{name}' uses '{key}', which would read a file on the worker; "
                f"paste the content inline as '{twin}'"
            )
    for key in INLINE_DATA_FIELDS:
        if key in body:
            try:
                base64.b64decode(str(body[key]), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise KubeconfigError(f"{kind} '{name}': '{key}' is not base64") from exc


def _check_structure(data: dict[str, Any]) -> dict[str, Any]:
    clusters = _named_entries(data, "clusters", "cluster")
    users = _named_entries(data, "users", "user")
    contexts = _named_entries(data, "contexts", "context")
    # Every entry is checked, not only the current one, so switching contexts later
    # cannot bring an exec plugin or file path back in.
    for name, body in clusters.items():
        _refuse_unsafe_fields("cluster", name, body)
    for name, body in users.items():
        _refuse_unsafe_fields("user", name, body)

    current = data.get("current-context")
    if not current:
        raise KubeconfigError("the kubeconfig has no current-context")
    if current not in contexts:
        raise KubeconfigError(f"current-context '{current}' is not among the contexts")
    context = contexts[current]
    cluster_name, user_name = context.get("cluster"), context.get("user")
    if not cluster_name or cluster_name not in clusters:
        raise KubeconfigError(
            f"context '{current}' names cluster '{cluster_name}', which is missing"
        )
    if not user_name or user_name not in users:
        raise KubeconfigError(f"context '{current}' names user '{user_name}', which is missing")
    server = clusters[cluster_name].get("server")
    if not server:
        raise KubeconfigError(f"cluster '{cluster_name}' has no server")
    try:
        parsed = parse_server(str(server))
    except ServerNotAllowed as exc:
        raise KubeconfigError(f"cluster '{cluster_name}': {exc}") from None
    return {"context": current, "cluster": cluster_name, "user": user_name, "server": parsed.url}


def validate_kubeconfig(text: str, check_reachable: bool = True) -> dict[str, Any]:
    """Check a kubeconfig; return {context, cluster, user, server[, kubernetes_version, emulated]}.

    With `check_reachable`, the server is resolved and judged (kernel.netguard), then asked
    GET /version with the kubeconfig's credentials at the checked address, all within
    REACHABILITY_DEADLINE. Errors give the HTTP status or one fixed phrase, never the answer.
    """
    data = parse_kubeconfig(text)
    summary = _check_structure(data)
    if check_reachable:
        summary.update(_ask_version(data, summary["server"]))
    return summary


def _ask_version(data: dict[str, Any], server: str) -> dict[str, Any]:
    deadline = time.monotonic() + REACHABILITY_DEADLINE
    pin = checked_server(server, timeout=REACHABILITY_TIMEOUT)
    api = _client_from_dict(data, REACHABILITY_TIMEOUT, pin)
    remaining = max(0.5, deadline - time.monotonic())
    watchdog = threading.Timer(remaining, pin.abort)
    watchdog.daemon = True
    watchdog.start()
    try:
        status, body = _get_version(api, remaining)
    except Exception as exc:  # urllib3 wraps every transport failure differently
        tls = None if pin.aborted else tls_failure(exc, pin.server.host)
        if tls is not None:
            raise KubeconfigError(f"server {server} cannot be trusted: {tls}") from exc
        within = f" within {REACHABILITY_DEADLINE:.0f} s" if pin.aborted else ""
        raise KubeconfigError(f"server {server} {NOT_A_KUBERNETES_SERVER}{within}") from exc
    finally:
        watchdog.cancel()
        api.close()
    if pin.aborted:  # cut off by the deadline, whatever the client made of the rest
        raise KubeconfigError(
            f"server {server} {NOT_A_KUBERNETES_SERVER} within {REACHABILITY_DEADLINE:.0f} s"
        )
    if status != 200:
        try:  # the standard phrase, not the server's own (which is the server's text)
            phrase = f" {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = ""
        raise KubeconfigError(
            f"server {server} answered GET /version with HTTP {status}{phrase}; a Kubernetes API "
            "server answers 200 with its version to these credentials"
        )
    try:
        answer = json.loads(body)
        version = answer.get("gitVersion")
    except (ValueError, AttributeError):
        version = None
    if not isinstance(version, str) or not version:
        raise KubeconfigError(
            f"server {server} answered GET /version with something that is not a Kubernetes version"
        )
    return {"kubernetes_version": version[:40], "emulated": answer.get("emulated") is True}


def _get_version(api: k8s.ApiClient, timeout: float) -> tuple[int, bytes]:
    """GET /version: the status and at most MAX_VERSION_BYTES of the body (an error's is not read)."""
    params = api.param_serialize(
        method="GET",
        resource_path="/version/",
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*params, _request_timeout=(min(REACHABILITY_TIMEOUT, timeout), timeout))
    raw = response.response
    try:
        if raw.status != 200:
            return raw.status, b""
        body = raw.read(MAX_VERSION_BYTES + 1, decode_content=True)
        if len(body) > MAX_VERSION_BYTES:
            raise ValueError("the /version answer is too long")
        return raw.status, body
    finally:
        raw.release_conn() if raw.status == 200 else raw.close()


def checked_server(
    server: str, timeout: float = REACHABILITY_TIMEOUT, *, name_it: bool = True
) -> Pin:
    """The server resolved once and allowed (kernel.netguard), or KubeconfigError saying why.

    `name_it` False leaves the URL out of the message (run errors are public on the run page).
    """
    try:
        return check_server(server, timeout=timeout)
    except ServerNotAllowed as exc:
        raise KubeconfigError(
            f"{f'server {server}' if name_it else 'the cluster server'} is not allowed: {exc}"
        ) from None


def _client_from_dict(data: dict[str, Any], request_timeout: float, pin: Pin) -> k8s.ApiClient:
    # type.__call__ bypasses the client's "copy the global default" metaclass, so settings
    # of one cluster never leak into another's client.
    configuration = type.__call__(k8s.Configuration)
    # Our own retry policy (kernel.kube) decides what to retry; urllib3's internal retries
    # would multiply every timeout by four (and False also means: never follow a redirect).
    configuration.retries = False
    try:
        api = k8s_config.new_client_from_config_dict(
            config_dict=data, persist_config=False, client_configuration=configuration
        )
    except Exception as exc:  # the loader raises ConfigException, ValueError, TypeError…
        raise KubeconfigError(
            f"the kubernetes client rejected the kubeconfig: {type(exc).__name__}"
        ) from None
    try:
        pin_api_client(api, pin)
    except ServerNotAllowed as exc:
        api.close()
        raise KubeconfigError(str(exc)) from None
    _default_request_timeout(api, request_timeout)
    return api


def _default_request_timeout(api: k8s.ApiClient, seconds: float) -> None:
    """Give every request of `api` a timeout unless the caller passes its own.

    Without it urllib3 waits forever on an API server that accepts and never answers.
    """
    request = api.rest_client.request

    @functools.wraps(request)
    def with_timeout(*args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("_request_timeout"):
            kwargs["_request_timeout"] = seconds
        return request(*args, **kwargs)

    api.rest_client.request = with_timeout  # type: ignore[method-assign]


def api_client_from_kubeconfig(
    text: str, request_timeout: float = DEFAULT_REQUEST_TIMEOUT
) -> k8s.ApiClient:
    """An ApiClient for the kubeconfig's current context (validated, not contacted).

    Its server is resolved and judged again now (run time), and the client connects to that
    address only: a DNS name that pointed at a public address at registration and at the
    loopback today is refused today.
    """

    data = parse_kubeconfig(text)
    summary = _check_structure(data)
    api = _client_from_dict(data, request_timeout, checked_server(summary["server"], name_it=False))
    bound_api_client(api)  # every answer bounded in size, time and form (kernel/bounded.py)
    return api


def pinned_kubeconfig(text: str) -> dict[str, Any]:
    """The kubeconfig's current context as a new kubeconfig for a program we start (upstream's
    e2e.test), pinned as api_client_from_kubeconfig pins our own client: its server is the
    address resolved and judged now (kernel.netguard), the hostname kept for TLS as
    `tls-server-name`, one cluster, one user, one context. The program then cannot be pointed
    elsewhere by DNS, another context or a proxy; the user's credentials were checked inline
    only (no exec plugin, no file), so it runs nothing and reads nothing on our behalf.
    """
    data = parse_kubeconfig(text)
    summary = _check_structure(data)
    pin = checked_server(summary["server"], name_it=False)
    clusters = _named_entries(data, "clusters", "cluster")
    users = _named_entries(data, "users", "user")
    source = clusters[summary["cluster"]]
    address = str(pin.address)
    host = f"[{address}]" if ":" in address else address
    server = pin.server
    cluster: dict[str, Any] = {"server": f"{server.scheme}://{host}:{server.port}{server.path}"}
    for key in ("certificate-authority-data", "insecure-skip-tls-verify"):
        if key in source:
            cluster[key] = source[key]
    if server.scheme == "https" and (source.get("tls-server-name") or server.host != address):
        cluster["tls-server-name"] = str(source.get("tls-server-name") or server.host)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "pinned", "cluster": cluster}],
        "users": [{"name": "pinned", "user": dict(users[summary["user"]])}],
        "contexts": [{"name": "pinned", "context": {"cluster": "pinned", "user": "pinned"}}],
        "current-context": "pinned",
    }
