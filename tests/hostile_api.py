"""A hostile "Kubernetes API server" on 127.0.0.1: it answers every request the same bad way.

Modes: `huge` (an endless JSON body, no length), `huge-declared` (a Content-Length of 300 MB),
`drip` (a header line that never ends, one byte every `pace` seconds), `drip-body` (headers,
then the body a byte at a time), `hang` (reads the request, never answers), `not-utf8` and
`not-json` (a 200 that claims JSON), each carrying BANNER so a test can prove it is never shown.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BANNER = b"HOSTILE-SERVER-BANNER-7f3a"


class HostileApi:
    def __init__(self, mode: str, pace: float = 0.25, huge_bytes: int = 400 * 1024 * 1024) -> None:
        self.mode = mode
        self.pace = pace
        self.huge_bytes = huge_bytes
        self.sent = 0  # body bytes written, all connections together
        self.requests = 0
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def kubeconfig(self, name: str = "hostile") -> str:
        return (
            "apiVersion: v1\nkind: Config\n"
            f"clusters:\n- name: {name}\n  cluster:\n    server: {self.url}\n"
            "users:\n- name: u\n  user:\n    token: not-a-secret\n"
            f"contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: u\n"
            f"current-context: {name}\n"
        )

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> bool:
        conn.settimeout(5)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                piece = conn.recv(65536)
                if not piece:
                    return False
                data += piece
        except OSError:
            return False
        head, _, rest = data.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                want = int(line.split(b":", 1)[1]) - len(rest)
                while want > 0:
                    piece = conn.recv(min(want, 65536))
                    if not piece:
                        break
                    want -= len(piece)
        self.requests += 1
        return True

    def _send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)

    def _serve(self, conn: socket.socket) -> None:
        try:
            while not self.stop.is_set() and self._read_request(conn):
                self._answer(conn)
                if self.mode not in ("not-utf8", "not-json"):
                    return
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _answer(self, conn: socket.socket) -> None:
        mode = self.mode
        if mode in ("huge", "huge-declared"):
            length = f"Content-Length: {300 * 1024 * 1024}\r\n" if mode == "huge-declared" else ""
            self._send(
                conn,
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + length.encode()
                + b"Connection: close\r\n\r\n"
                + b'{"gitVersion": "v1.31.0", "junk": "'
                + BANNER,
            )
            piece = b"a" * 65536
            while self.sent < self.huge_bytes and not self.stop.is_set():
                self._send(conn, piece)
                self.sent += len(piece)
        elif mode == "drip":
            self._send(conn, b"HTTP/1.1 200 OK\r\nX-")
            while not self.stop.wait(self.pace):
                self._send(conn, b"a")
                self.sent += 1
        elif mode == "drip-body":
            self._send(
                conn,
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100000\r\n\r\n",
            )
            while not self.stop.wait(self.pace):
                self._send(conn, b" ")
                self.sent += 1
        elif mode == "hang":
            self.stop.wait(60)
        elif mode in ("not-utf8", "not-json"):
            body = (
                b'{"gitVersion": "v1.31.0", "x": "\xff\xfe' + BANNER + b'"}'
                if mode == "not-utf8"
                else b"<html><body>" + BANNER + b"</body></html>"
            )
            self._send(
                conn,
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body,
            )
        else:
            raise ValueError(mode)

    def __enter__(self) -> HostileApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.listener.close()
        for conn in self.conns:
            try:
                conn.close()
            except OSError:
                pass


@contextmanager
def hostile(mode: str, **kwargs: float) -> Iterator[HostileApi]:
    with HostileApi(mode, **kwargs) as server:  # type: ignore[arg-type]
        yield server
