"""Webhooks go only where cluster servers may (issue 22, finding 6).

The guard's decision for private, link-local and other non-public addresses is tested without
connecting to them (a connection attempt fails the test); live deliveries only ever go to
receivers on 127.0.0.1.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import urllib3
from django.test import Client

from dashboard.domain import notify
from dashboard.domain.models import NotificationChannel, NotificationLog
from kernel.netguard import ServerNotAllowed
from tests.webhook_server import WebhookServer

pytestmark = pytest.mark.django_db


def attempt_to(url: str) -> NotificationLog:
    NotificationChannel.objects.update(enabled=False)  # one channel per attempt
    NotificationChannel.objects.create(kind="webhook", target=url)
    [pk] = notify.emit(f"test:{url}", "schedule.down", {"cluster": "c"})
    notify.attempt(pk)
    return NotificationLog.objects.get(pk=pk)


@pytest.fixture
def no_connections(monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"connected to {args[0]!r}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", refuse)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://10.0.0.5:8080/hook", "private"),
        ("https://192.168.1.10/hook?x=1", "private"),
        ("http://[fd00::1]/hook", "private"),
        ("http://[::ffff:10.1.2.3]/hook", "private"),
        ("http://0.0.0.0:6379/", "unspecified"),
        ("http://2130706433:6379/", "loopback"),  # 127.0.0.1 as one number
        ("http://[::1]:5432/", "loopback"),
    ],
)
def test_the_guard_refuses_non_public_webhook_addresses_without_connecting(
    url, why, settings, no_connections
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ""
    with pytest.raises(ServerNotAllowed, match=why):
        notify.check_webhook(url)
    entry = attempt_to(url)
    assert (entry.status, entry.last_error) == ("retrying", notify.UNDELIVERED)


def test_a_global_address_is_allowed_and_the_request_target_keeps_path_and_query(
    settings, no_connections
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ""
    pin, target = notify.check_webhook("https://8.8.8.8:8443/services/T0/B1?token=x")
    assert (str(pin.address), pin.server.port, target) == (
        "8.8.8.8",
        8443,
        "/services/T0/B1?token=x",
    )
    settings.WEBHOOK_ALLOWED_NETWORKS = "10.0.0.0/8"
    assert str(notify.check_webhook("http://10.0.0.5/h")[0].address) == "10.0.0.5"


def test_webhook_networks_fall_back_to_the_cluster_setting(settings, no_connections) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = None
    settings.CLUSTER_ALLOWED_NETWORKS = "192.168.0.0/16"
    assert notify.check_webhook("http://192.168.3.4/h")[1] == "/h"
    settings.WEBHOOK_ALLOWED_NETWORKS = ""
    with pytest.raises(ServerNotAllowed, match="private"):
        notify.check_webhook("http://192.168.3.4/h")


def test_a_loopback_receiver_gets_nothing_unless_allowed(settings) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ""
    with WebhookServer() as hook:
        entry = attempt_to(hook.url)
        assert hook.received == []
    assert entry.last_error == notify.UNDELIVERED


# --- live receivers on loopback (allowed for these tests) ------------------------------------


@contextmanager
def serve(handler: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            handler(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def raw(behaviour: str) -> Iterator[str]:
    """A TCP listener that accepts and then resets, hangs or drips bytes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            if behaviour == "close":
                conn.close()
            elif behaviour == "drip":
                threading.Thread(target=drip, args=(conn,), daemon=True).start()

    def drip(conn: socket.socket) -> None:
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: yes\r\n":
                if stop.wait(0.4):
                    return
                conn.send(bytes([byte]))
        except OSError:
            pass

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        stop.set()
        thread.join()
        listener.close()
        for conn in held:
            conn.close()


def test_redirects_are_not_followed(settings) -> None:
    with WebhookServer() as target:

        def redirect(h: BaseHTTPRequestHandler) -> None:
            h.send_response(307)
            h.send_header("Location", target.url)
            h.end_headers()

        with serve(redirect) as url:
            entry = attempt_to(url)
        assert target.received == []
    assert entry.last_error == "the webhook answered 307 (redirects are not followed)"


def test_only_the_status_code_is_shown_never_the_receivers_words(settings) -> None:
    def chatty(h: BaseHTTPRequestHandler) -> None:
        h.send_response(500, "Internal-Secret-Reason-Phrase")
        h.send_header("Content-Type", "text/plain")
        h.end_headers()
        h.wfile.write(b"redis at 10.0.0.3:6379 refused AUTH; stack trace follows")

    with serve(chatty) as url:
        entry = attempt_to(url)
    assert entry.last_error == "the webhook answered 500"


def test_every_failure_reads_the_same_so_ports_cannot_be_told_apart(settings) -> None:
    settings.NOTIFY_TIMEOUT_SECONDS = 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/hook"  # nothing listens once closed
    errors = {}
    with raw("close") as resets, raw("hang") as hangs, raw("drip") as drips:
        for name, url in (("closed", closed), ("reset", resets), ("hang", hangs), ("drip", drips)):
            started = time.monotonic()
            errors[name] = attempt_to(url).last_error
            # a receiver dripping bytes is cut off at the total deadline, not per read
            assert time.monotonic() - started < 3, name
    assert set(errors.values()) == {notify.UNDELIVERED}, errors


def test_the_channels_page_refuses_a_webhook_the_guard_refuses(maintainer, settings) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ""
    client = Client()
    client.force_login(maintainer)
    for url, why in (
        ("http://127.0.0.1:6379/", "loopback"),
        ("http://169.254.169.254/latest/", "link-local"),
    ):
        resp = client.post("/schedules/channels/", {"kind": "webhook", "target": url})
        assert resp.status_code == 400 and why in resp.content.decode()
    assert not NotificationChannel.objects.exists()
