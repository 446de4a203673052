"""Uploads through Django's real request handler with the body streamed from disk.

The test client's ``post`` builds the multipart body in memory (and copies it), which
would swamp what these tests measure: the memory one upload adds on the *server* side.
Here the body is written to a temporary file and handed to Django's ``ClientHandler``
(what the test client calls, minus the in-memory payload) as ``wsgi.input``; Django's
multipart parser then streams the file part to its upload handlers as in production.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
import tracemalloc
import uuid
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.test.client import ClientHandler, RequestFactory

BUDGET_BYTES = 64 * 1024 * 1024  # issue 12: peak memory added by one upload


@dataclass
class Measured:
    response: HttpResponse
    peak_bytes: int
    seconds: float

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / (1024 * 1024)

    def json(self) -> Any:
        import json

        return json.loads(self.response.content)


def _body(
    path: str, fields: dict[str, str], filename: str, payload: bytes | str
) -> tuple[str, int]:
    boundary = uuid.uuid4().hex
    with open(path, "wb") as out:
        for name, value in fields.items():
            out.write(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            )
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
        )
        if isinstance(payload, str):  # a file on disk: copy it in 1 MB pieces
            with open(payload, "rb") as source:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
        else:
            out.write(payload)
        out.write(f"\r\n--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", os.path.getsize(path)


def upload(
    token: str,
    payload: bytes | str,
    *,
    filename: str = "junit_01.xml",
    trace: bool = True,
    **fields: str,
) -> Measured:
    """POST /api/v1/submissions/ with ``payload`` (bytes, or a path to stream from).

    tracemalloc slows allocation-heavy code several times over: ``trace=False`` measures
    the time alone (peak_bytes is then 0).
    """
    form = {
        "plugin": "calico",
        "plugin_version": "3.28.0",
        "kubernetes_version": "1.30.2",
        "proxier": "iptables",
        **fields,
    }
    handle, path = tempfile.mkstemp(prefix="upload-", suffix=".body")
    os.close(handle)
    try:
        content_type, length = _body(path, form, filename, payload)
        del payload
        with open(path, "rb") as body:
            # The environ the test client would build (public API: a request's environ).
            environ = (
                RequestFactory()
                .request(
                    PATH_INFO="/api/v1/submissions/",
                    REQUEST_METHOD="POST",
                    CONTENT_TYPE=content_type,
                    CONTENT_LENGTH=str(length),
                    HTTP_AUTHORIZATION=f"Token {token}",
                    **{"wsgi.input": body},
                )
                .environ
            )
            handler = ClientHandler(enforce_csrf_checks=False)
            gc.collect()
            if trace:
                tracemalloc.start()
                tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            started = time.monotonic()
            try:
                response = handler(environ)
                seconds = time.monotonic() - started
                peak = tracemalloc.get_traced_memory()[1] - base if trace else 0
            finally:
                if trace:
                    tracemalloc.stop()
        assert isinstance(response, HttpResponse), response
        return Measured(response, peak, seconds)
    finally:
        os.unlink(path)
