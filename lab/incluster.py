"""One lab cluster as a pod inside it sees its API server: HTTPS at the root of host:port.

In a pod, the kubernetes client reads KUBERNETES_SERVICE_HOST/PORT and the ServiceAccount's
token and CA under /var/run/secrets/kubernetes.io/serviceaccount, and speaks HTTPS to
`https://HOST:PORT/` (no `/clusters/NAME` prefix). `InClusterEndpoint` serves one cluster of a
running LabServer that way, with a fresh self-signed certificate, and writes the token and CA
files into a directory, so the agent (`kernel.agent`) runs against the lab exactly as it
would in a vendor's cluster.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from lab.server import LabServer, _HTTPServer, _RequestHandler


class _RootHandler(_RequestHandler):
    cluster_name = ""

    def _dispatch(self, method: str, raw: bytes) -> tuple[int, Any]:
        self.path = f"/clusters/{self.cluster_name}{self.path}"
        return super()._dispatch(method, raw)


def self_signed(host: str, directory: Path) -> tuple[Path, Path]:
    """A certificate for `host` (an IP address) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver (lab)")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(host)), x509.DNSName("kubernetes.default.svc")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "apiserver.crt", directory / "apiserver.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class InClusterEndpoint:
    """HTTPS at the root for cluster `name` of `lab`; `environ()` and `sa_dir` for the pod."""

    def __init__(
        self, lab: LabServer, name: str, token: str | None = None, host: str = "127.0.0.1"
    ) -> None:
        self.lab, self.name, self.host = lab, name, host
        self.token = token or lab.cluster(name).profile["token"]
        self._tmp = tempfile.TemporaryDirectory(prefix="lab-incluster-")
        self.sa_dir = Path(self._tmp.name) / "serviceaccount"
        self.sa_dir.mkdir()
        cert, key = self_signed(host, Path(self._tmp.name))
        (self.sa_dir / "ca.crt").write_bytes(cert.read_bytes())
        (self.sa_dir / "token").write_text(self.token)
        (self.sa_dir / "namespace").write_text("sctp-battery")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        handler = type("Handler", (_RootHandler,), {"cluster_name": name})
        self._httpd = _HTTPServer((host, 0), handler)
        self._httpd.lab = lab
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="lab-incluster", daemon=True
        )

    def environ(self) -> dict[str, str]:
        return {"KUBERNETES_SERVICE_HOST": self.host, "KUBERNETES_SERVICE_PORT": str(self.port)}

    def __enter__(self) -> InClusterEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
        self._tmp.cleanup()
