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
from typing import Any
from urllib.parse import urlparse

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from workers.kube import api_error_message

MAX_KUBECONFIG_BYTES = 1_000_000
REACHABILITY_TIMEOUT = 5.0
DEFAULT_REQUEST_TIMEOUT = 30.0

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
        raise KubeconfigError(f"the kubeconfig is not YAML: {exc}") from exc
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
    parsed = urlparse(str(server))
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise KubeconfigError(f"cluster '{cluster_name}': server '{server}' is not an http(s) URL")
    return {"context": current, "cluster": cluster_name, "user": user_name, "server": str(server)}


def validate_kubeconfig(text: str, check_reachable: bool = True) -> dict[str, Any]:
    """Check a kubeconfig; return {context, cluster, user, server[, kubernetes_version]}.

    With `check_reachable`, GET /version with the kubeconfig's credentials and a short
    timeout; an HTTP error status or a connection error is reported in the message.
    """
    data = parse_kubeconfig(text)
    summary = _check_structure(data)
    if check_reachable:
        api = _client_from_dict(data, REACHABILITY_TIMEOUT)
        try:
            # Raw JSON: the client's strict models reject a /version answer missing fields.
            response = k8s.VersionApi(api).get_code(
                _request_timeout=REACHABILITY_TIMEOUT, _preload_content=False
            )
        except ApiException as exc:
            if exc.status:
                raise KubeconfigError(
                    f"server {summary['server']} answered GET /version with HTTP "
                    f"{api_error_message(exc)}"
                ) from exc
            raise KubeconfigError(
                f"server {summary['server']} is not reachable: {exc.reason}"
            ) from exc
        except Exception as exc:  # urllib3 wraps every transport failure differently
            raise KubeconfigError(
                f"server {summary['server']} is not reachable: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            api.close()
        try:
            answer = json.loads(response.data)
            summary["kubernetes_version"] = answer.get("gitVersion")
            # The lab (any emulator) says so; the evidence policy never counts its runs.
            summary["emulated"] = answer.get("emulated") is True
        except (ValueError, AttributeError) as exc:
            raise KubeconfigError(
                f"server {summary['server']} answered GET /version with something that is "
                "not a Kubernetes version"
            ) from exc
    return summary


def _client_from_dict(data: dict[str, Any], request_timeout: float) -> k8s.ApiClient:
    # type.__call__ bypasses the client's "copy the global default" metaclass, so settings
    # of one cluster never leak into another's client.
    configuration = type.__call__(k8s.Configuration)
    # Our own retry policy (workers.kube) decides what to retry; urllib3's internal retries
    # would multiply every timeout by four.
    configuration.retries = False
    try:
        api = k8s_config.new_client_from_config_dict(
            config_dict=data, persist_config=False, client_configuration=configuration
        )
    except Exception as exc:  # the loader raises ConfigException, ValueError, TypeError…
        raise KubeconfigError(f"the kubernetes client rejected the kubeconfig: {exc}") from exc
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
    """An ApiClient for the kubeconfig's current context (validated, not contacted)."""
    data = parse_kubeconfig(text)
    _check_structure(data)
    return _client_from_dict(data, request_timeout)
