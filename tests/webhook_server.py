"""A real local HTTP server that receives webhooks, answering a scripted list of statuses."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookServer:
    def __init__(self, statuses: list[int] | None = None) -> None:
        self.statuses = list(statuses or [])  # answered in order; 200 once exhausted
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.received.append(json.loads(body))
                owner.headers.append(dict(self.headers))
                status = owner.statuses.pop(0) if owner.statuses else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"nope")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> WebhookServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
