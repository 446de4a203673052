"""Kubernetes API calls with bounded retries of transient errors.

Every battery call to a cluster goes through `Kube.call`: transient failures (5xx, 429,
connection resets, timeouts) are retried with exponential backoff, a bounded number of
times; after that the cause is raised. Connection-level failures mark the cluster
unreachable so the rest of a run fails fast instead of waiting every timeout again.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any, TypeVar

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})

_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    urllib3.exceptions.HTTPError,  # MaxRetryError, ProtocolError, timeouts, NewConnectionError
    ConnectionError,
    socket.timeout,
    TimeoutError,
    http.client.HTTPException,
)


class KubeError(Exception):
    """A Kubernetes API call failed for good; the message names the cause."""


class ClusterUnreachable(KubeError):
    """The API server did not answer (connection refused/reset, timeouts) after retries."""


class ApiCallFailed(KubeError):
    """The API server kept answering a transient error status after retries."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def api_error_message(exc: ApiException) -> str:
    """`422 Invalid: <the Status message>`, as short as the API server's own words allow."""
    status = getattr(exc, "status", 0) or 0
    reason = getattr(exc, "reason", "") or ""
    message = ""
    body = getattr(exc, "body", None)
    if body:
        # Only a Kubernetes Status object's words are quoted; anything else the server sent (an
        # HTML page, a banner) is not repeated on the public run page.
        try:
            data = json.loads(body)
        except (ValueError, TypeError):
            data = None
        if isinstance(data, dict) and data.get("kind") == "Status":
            message = str(data.get("message") or "")[:300]
            reason = str(data.get("reason") or reason)[:60]
    text = f"{status} {reason}".strip()
    return f"{text}: {message}" if message else text


# OpenSSL's verify codes (x509_vfy.h) -> what they mean for the person holding the kubeconfig.
_VERIFY_CODES = {
    9: "the server's certificate is not valid yet",
    10: "the server's certificate has expired",
    18: "the server's certificate is not signed by the kubeconfig's certificate authority "
    "(certificate-authority-data)",
    19: "the server's certificate is not signed by the kubeconfig's certificate authority "
    "(certificate-authority-data)",
    20: "the server's certificate is not signed by the kubeconfig's certificate authority "
    "(certificate-authority-data)",
    21: "the server's certificate is not signed by the kubeconfig's certificate authority "
    "(certificate-authority-data)",
    62: "the server's certificate is for another host",
    64: "the server's certificate is for another host",
}


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        cur = todo.pop()
        if any(cur is s for s in seen):
            continue
        seen.append(cur)
        todo += [c for c in (cur.__cause__, cur.__context__) if c is not None]
        reason = getattr(cur, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
        todo += [a for a in getattr(cur, "args", ()) if isinstance(a, BaseException)]
    return seen


def tls_failure(exc: BaseException, host: str | None = None) -> str | None:
    """What went wrong in the TLS handshake, in words, or None when it was something else.

    Only what our side found (a verify code, a protocol mismatch) is said; nothing the
    server sent is quoted."""
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            words = _VERIFY_CODES.get(
                cause.verify_code,
                "the server's certificate did not verify against the kubeconfig's certificate "
                "authority",
            )
            if cause.verify_code in (62, 64) and host:
                words += f": it is not valid for {host}"
            return f"TLS: {words}"
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLError):
            text = f"{getattr(cause, 'reason', '') or ''} {cause}".upper()
            if "WRONG_VERSION_NUMBER" in text or "RECORD_LAYER_FAILURE" in text:
                return (
                    "TLS: the server does not speak TLS (is its URL http:// rather than https://?)"
                )
            if isinstance(cause, ssl.SSLEOFError):
                return (
                    "TLS: the server closed the connection during the handshake (did it refuse "
                    "the kubeconfig's client certificate?)"
                )
            if "CERTIFICATE_REQUIRED" in text or "BAD_CERTIFICATE" in text or "UNKNOWN_CA" in text:
                return "TLS: the server refused the kubeconfig's client certificate"
            return "TLS: the handshake with the server failed"
    return None


def is_transient(exc: BaseException) -> bool:
    if tls_failure(exc) is not None:
        return False  # a certificate does not fix itself between two tries
    if isinstance(exc, ApiException):
        # Status 0: the client wrapped a transport error (e.g. SSL) in an ApiException.
        return exc.status in TRANSIENT_STATUSES or not exc.status
    return isinstance(exc, _CONNECTION_ERRORS)


def _is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, _CONNECTION_ERRORS) or (isinstance(exc, ApiException) and not exc.status)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ApiException) and exc.status:
        return api_error_message(exc)
    tls = tls_failure(exc)
    if tls is not None:
        return tls
    if isinstance(exc, ApiException):
        return api_error_message(exc)
    # The class says what happened (refused, timed out, cut off); its text may quote what the
    # peer sent (http.client's BadStatusLine repeats a banner), so it is not shown.
    cause = exc
    while isinstance(cause, urllib3.exceptions.MaxRetryError) and cause.reason is not None:
        cause = cause.reason
    inner = (
        next((a for a in cause.args if isinstance(a, BaseException)), None)
        if isinstance(cause, urllib3.exceptions.ProtocolError)
        else None
    )
    name = type(cause).__name__
    return f"{name} ({type(inner).__name__})" if inner is not None else name


class Kube:
    """The typed API groups of one cluster plus the retry policy the battery needs."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        request_timeout: float = 30.0,
        tries: int = 4,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_client = api_client
        self.core = k8s.CoreV1Api(api_client)
        self.networking = k8s.NetworkingV1Api(api_client)
        self.discovery = k8s.DiscoveryV1Api(api_client)
        self.apps = k8s.AppsV1Api(api_client)
        self.version_api = k8s.VersionApi(api_client)
        self.request_timeout = request_timeout
        self.tries = max(1, tries)
        self.backoff = backoff
        self.sleep = sleep
        # Set once a call gave up on connection errors; later calls then try only once.
        self.unreachable: str | None = None
        # Set once an answer broke a limit (too large, too slow, malformed): later calls fail.
        self.broken: str | None = None

    def server_version(self) -> str:
        """gitVersion from GET /version (read raw: strict models reject partial answers)."""
        return str(self.version_info().get("gitVersion") or "")

    def version_info(self) -> dict[str, Any]:
        """GET /version as sent, with fields the client's model drops (the lab's `emulated`)."""
        data = json.loads(self.call_raw(self.version_api.get_code) or b"{}")
        return data if isinstance(data, dict) else {}

    def call_raw(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        """`call` without the client's models (`_preload_content=False`): the body as sent."""
        response = self.call(fn, *args, _preload_content=False, **kwargs)
        return bytes(response.data or b"")

    def call(
        self,
        fn: Callable[..., T],
        *args: Any,
        adopt: Callable[[], T] | None = None,
        **kwargs: Any,
    ) -> T:
        """Call `fn(*args, **kwargs)` with the request timeout, retrying transient errors.

        `adopt` covers retried creates: when a retry answers 409 AlreadyExists, the first try
        went through despite its error, so the existing object is read back instead.
        Non-transient API errors (4xx) are raised at once as `ApiException`.
        """
        kwargs.setdefault("_request_timeout", self.request_timeout)
        if self.broken:
            raise ClusterUnreachable(self.broken)
        tries = 1 if self.unreachable else self.tries
        last: BaseException | None = None
        for attempt in range(tries):
            if attempt:
                self.sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                return fn(*args, **kwargs)
            except ApiException as exc:
                if exc.status == 409 and attempt and adopt is not None:
                    return adopt()
                tls = None if exc.status else tls_failure(exc)
                if tls is not None:
                    # The client wraps a failed handshake as status 0; a certificate does not
                    # fix itself between two tries.
                    self.unreachable = tls
                    raise ClusterUnreachable(f"cluster unreachable: {tls}") from exc
                if not is_transient(exc):
                    raise
                last = exc
            except KubeError as exc:
                # A limit on the cluster's answers broke (kernel.bounded): not retried, and the
                # rest of the run does not ask this cluster again.
                self.unreachable = self.broken = str(exc)
                raise ClusterUnreachable(str(exc)) from None
            except _CONNECTION_ERRORS as exc:
                last = exc
                if tls_failure(exc) is not None:
                    break  # a certificate does not fix itself between two tries
            log.info("transient API error (try %d/%d): %s", attempt + 1, tries, _describe(last))
        assert last is not None
        cause = _describe(last)
        if _is_connection_error(last):
            self.unreachable = cause
            if tls_failure(last) is not None:
                raise ClusterUnreachable(f"cluster unreachable: {cause}") from last
            raise ClusterUnreachable(f"cluster unreachable after {tries} tries: {cause}") from last
        status = getattr(last, "status", 0) or 0
        raise ApiCallFailed(f"API kept failing after {tries} tries: {cause}", status) from last
