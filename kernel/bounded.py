"""Answers from a cluster's API server, bounded: in size, in time, in form.

A cluster's server is run by someone outside the project (a vendor registers it), so every
answer the workers read from it is treated as hostile input:

- **size**: the body is read in pieces and refused past `CLUSTER_RESPONSE_MAX_BYTES` (a
  `Content-Length` above it is refused before anything is read), so a 300 MB answer costs
  one piece of memory, not 300 MB;
- **time**: every call has a total deadline, `CLUSTER_CALL_DEADLINE_SECONDS`, from sending the
  request to the last byte; a server that drips a byte every few seconds never trips a read
  timeout, so a watchdog ends the call's connections when the deadline passes;
- **form**: a 2xx answer that says it is JSON must be UTF-8 JSON; otherwise the call fails
  with words ("not valid JSON"), never with a decoder's exception name; error bodies that are
  not UTF-8 are dropped (only a Kubernetes Status object's words are ever shown).

The errors name the limit, never the server's bytes. They are `KubeError`s: `kernel.kube.Kube`
ends the run's use of the cluster at the first one (the rest of the run fails fast), and the
run says why. Nothing here imports Django; the limits are the ones handed to the kernel
(kernel/config.py: CLUSTER_RESPONSE_MAX_BYTES and CLUSTER_CALL_DEADLINE_SECONDS).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from kernel import config
from kernel.kube import KubeError

PIECE = 64 * 1024
DEFAULT_MAX_BYTES = config.DEFAULT_MAX_BYTES
DEFAULT_CALL_SECONDS = config.DEFAULT_CALL_SECONDS


class HostileAnswer(KubeError):
    """The cluster's API broke one of the limits; the message names the limit."""


class AnswerTooLarge(HostileAnswer):
    pass


class CallTooSlow(HostileAnswer):
    pass


class MalformedAnswer(HostileAnswer):
    pass


@dataclass(frozen=True)
class Limits:
    max_bytes: int = DEFAULT_MAX_BYTES
    call_seconds: float = DEFAULT_CALL_SECONDS


def configured_limits() -> Limits:
    """The limits handed to the kernel (kernel/config.py: the dashboard's settings, or the
    defaults in the agent)."""
    now = config.current()
    return Limits(now.response_max_bytes, now.call_deadline_seconds)


def too_large(limit: int) -> AnswerTooLarge:
    return AnswerTooLarge(
        f"the cluster's API sent an answer larger than {limit} bytes "
        "(CLUSTER_RESPONSE_MAX_BYTES); it was not read further"
    )


def too_slow(seconds: float) -> CallTooSlow:
    return CallTooSlow(
        f"an API call to the cluster took longer than {seconds:g} s in all "
        "(CLUSTER_CALL_DEADLINE_SECONDS); the connection was closed"
    )


def _read(raw: Any, limits: Limits, deadline: float) -> bytes:
    """The body of urllib3's response, at most limits.max_bytes, before the deadline."""
    length = raw.headers.get("Content-Length") if raw.headers is not None else None
    if length and length.strip().isdigit() and int(length) > limits.max_bytes:
        raw.close()
        raise too_large(limits.max_bytes)
    pieces: list[bytes] = []
    total = 0
    while True:
        piece = raw.read(PIECE, decode_content=True)
        if not piece:
            break
        total += len(piece)
        if total > limits.max_bytes:
            raw.close()
            raise too_large(limits.max_bytes)
        pieces.append(piece)
        if time.monotonic() > deadline:
            raw.close()
            raise too_slow(limits.call_seconds)
    return b"".join(pieces)


def _checked_form(status: int, content_type: str, body: bytes) -> bytes:
    """The body as the client may read it, or MalformedAnswer saying what is wrong in words."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if 200 <= status < 300:
        if not body:
            return body
        if not kind or "json" in kind:
            try:
                json.loads(body.decode("utf-8"))
            except UnicodeDecodeError:
                raise MalformedAnswer(
                    f"the cluster's API sent a malformed answer: {len(body)} bytes that are not "
                    "UTF-8 text where JSON was expected"
                ) from None
            except ValueError:
                raise MalformedAnswer(
                    f"the cluster's API sent a malformed answer: {len(body)} bytes that are not "
                    "valid JSON"
                ) from None
            return body
        # Text (a pod's log, kube-proxy's /proxyMode): undecodable bytes become U+FFFD.
        return body.decode("utf-8", "replace").encode("utf-8")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return b""  # an error's words are shown only from a Status object; these are none
    return body


def _is_watch(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    url = kwargs.get("url") if "url" in kwargs else (args[1] if len(args) > 1 else "")
    query = str(url or "").partition("?")[2].lower()
    return any(part in ("watch=true", "watch=1") for part in query.split("&"))


def _bound_stream(
    raw: Any, limits: Limits, deadline: float, tripped: threading.Event, watchdog: Any
) -> None:
    """Bounds a watch's body as it is streamed: at most limits.max_bytes in all, and the
    call's deadline (the watchdog closes a stream that outlives it); no more than one piece is
    held at a time."""
    stream = raw.stream

    def bounded_stream(amt: Any = None, decode_content: Any = None) -> Any:
        total = 0
        try:
            for piece in stream(amt, decode_content=decode_content):
                total += len(piece)
                if total > limits.max_bytes:
                    raw.close()
                    raise too_large(limits.max_bytes)
                if tripped.is_set() or time.monotonic() > deadline:
                    raw.close()
                    raise too_slow(limits.call_seconds)
                yield piece
        except HostileAnswer:
            raise
        except BaseException:
            if tripped.is_set():
                raise too_slow(limits.call_seconds) from None
            raise
        finally:
            watchdog.cancel()

    raw.stream = bounded_stream


def bound_api_client(api: Any, limits: Limits | None = None) -> None:
    """Bounds every request of a kubernetes ApiClient whose connections are pinned
    (kernel.netguard.PinnedPoolManager): size, total deadline, form (see the module)."""
    rest = api.rest_client
    pin = getattr(rest.pool_manager, "pin", None)
    request = rest.request

    @functools.wraps(request)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        lim = limits or configured_limits()
        deadline = time.monotonic() + lim.call_seconds
        tripped = threading.Event()

        def trip() -> None:
            tripped.set()
            if pin is not None:
                pin.interrupt()  # blocked reads return at once; the pin stays usable

        watchdog = threading.Timer(lim.call_seconds, trip)
        watchdog.daemon = True
        watchdog.start()
        if _is_watch(args, kwargs):
            # A watch is a stream: its events are handed on as they arrive (reading it whole
            # would hold every wait until the server ends the watch), under the same limits.
            try:
                response = request(*args, **kwargs)
            except BaseException:
                watchdog.cancel()
                if tripped.is_set():
                    raise too_slow(lim.call_seconds) from None
                raise
            _bound_stream(response.response, lim, deadline, tripped, watchdog)
            return response
        try:
            response = request(*args, **kwargs)
            raw = response.response
            body = _read(raw, lim, deadline)
        except HostileAnswer:
            raise
        except BaseException as exc:
            if tripped.is_set() or time.monotonic() > deadline:
                raise too_slow(lim.call_seconds) from None
            raise exc
        finally:
            watchdog.cancel()
        if tripped.is_set():
            raise too_slow(lim.call_seconds)
        content_type = str(raw.headers.get("Content-Type") or "") if raw.headers else ""
        body = _checked_form(int(response.status or 0), content_type, body)
        response.data = body  # what RESTResponse.read() hands to the client
        raw._body = body  # what urllib3's .data answers (the _preload_content=False path)
        return response

    rest.request = bounded
