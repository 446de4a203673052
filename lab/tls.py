"""The lab's own certificate authority: HTTPS for the API server, client certificates for users.

A real cluster has a CA of its own (kubeadm writes /etc/kubernetes/pki/ca.crt); clients trust
the server because the kubeconfig carries that CA (`certificate-authority-data`), and a
kind-style admin authenticates with a client certificate signed by it (CN kubernetes-admin,
O system:masters). The lab does the same:

- `LabCA.load_or_create(DIR)` generates the CA (ECDSA P-256, with `cryptography`) at the first
  start and keeps it in DIR (`var/lab/` for `manage.py lab` and `python -m lab.server`), so the
  kubeconfigs written earlier stay valid across restarts; `LabCA.ephemeral()` is one CA per
  process, kept in memory (tests);
- `server_certificate(hosts)` is the API server's certificate for the lab's host names and
  addresses (127.0.0.1, ::1, localhost and whatever the lab listens or is reached at);
- `client_certificate(user, groups)` is a user's certificate: the API server reads the user
  from the CN and the groups from the O fields, as kube-apiserver's x509 authenticator does.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
CERT_DAYS = 365
DEFAULT_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _san(hosts: list[str] | tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(h for h in hosts if h):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


class LabCA:
    """A CA that signs the lab's server certificate and its users' client certificates."""

    _process_ca: LabCA | None = None
    _process_lock = threading.Lock()

    def __init__(self, cert_pem: bytes, key_pem: bytes) -> None:
        self.cert_pem = cert_pem
        self.cert = x509.load_pem_x509_certificate(cert_pem)
        key = serialization.load_pem_private_key(key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the lab CA key must be an EC key")
        self.key = key
        self.key_pem = key_pem
        self._server_certs: dict[tuple[str, ...], KeyPair] = {}
        self._client_certs: dict[tuple[str, tuple[str, ...]], KeyPair] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ creation

    @classmethod
    def generate(cls, common_name: str = "lab-ca", days: int = CA_DAYS) -> LabCA:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "sctp-dashboard lab"),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    @classmethod
    def load_or_create(cls, directory: str | Path) -> LabCA:
        """The CA kept in DIR (ca.crt, ca.key), generated there at the first start."""
        directory = Path(directory)
        cert_path, key_path = directory / "ca.crt", directory / "ca.key"
        if cert_path.exists() and key_path.exists():
            try:
                return cls(cert_path.read_bytes(), key_path.read_bytes())
            except ValueError as exc:
                raise ValueError(f"{directory}: the lab CA cannot be read: {exc}") from exc
        directory.mkdir(parents=True, exist_ok=True)
        ca = cls.generate()
        # The key first, private; each file appears whole (written aside, then renamed).
        _write_atomic(key_path, ca.key_pem, 0o600)
        _write_atomic(cert_path, ca.cert_pem, 0o644)
        return ca

    @classmethod
    def ephemeral(cls) -> LabCA:
        """One CA for this process, in memory (tests start many labs)."""
        with cls._process_lock:
            if cls._process_ca is None:
                cls._process_ca = cls.generate("lab-ca (ephemeral)")
            return cls._process_ca

    # ------------------------------------------------------------------ certificates

    def _sign(
        self,
        subject: x509.Name,
        *,
        usage: x509.ObjectIdentifier,
        hosts: tuple[str, ...] = (),
        not_before: datetime.datetime | None = None,
        not_after: datetime.datetime | None = None,
    ) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before or now - datetime.timedelta(minutes=5))
            .not_valid_after(not_after or now + datetime.timedelta(days=CERT_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False
            )
        )
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def server_certificate(
        self,
        hosts: list[str] | tuple[str, ...] = DEFAULT_HOSTS,
        *,
        not_before: datetime.datetime | None = None,
        not_after: datetime.datetime | None = None,
    ) -> KeyPair:
        """kube-apiserver's serving certificate for these host names and addresses."""
        wanted = tuple(dict.fromkeys(hosts))
        custom = not_before is not None or not_after is not None
        with self._lock:
            if not custom and wanted in self._server_certs:
                return self._server_certs[wanted]
            pair = self._sign(
                x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
                usage=ExtendedKeyUsageOID.SERVER_AUTH,
                hosts=wanted,
                not_before=not_before,
                not_after=not_after,
            )
            if not custom:
                self._server_certs[wanted] = pair
            return pair

    def client_certificate(
        self, user: str = "kubernetes-admin", groups: tuple[str, ...] = ("system:masters",)
    ) -> KeyPair:
        """A user's client certificate: CN is the user, each O a group (kubeadm's admin.conf)."""
        with self._lock:
            found = self._client_certs.get((user, groups))
            if found is None:
                attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
                attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
                found = self._sign(x509.Name(attrs), usage=ExtendedKeyUsageOID.CLIENT_AUTH)
                self._client_certs[(user, groups)] = found
            return found

    def server_context(self, pair: KeyPair) -> ssl.SSLContext:
        """The server side: this certificate, and client certificates of this CA accepted."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # ssl loads a chain from files only: a private temporary directory, gone at once.
        with tempfile.TemporaryDirectory(prefix="lab-tls-") as tmp:
            cert_file, key_file = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            key_file.touch(mode=0o600)
            key_file.write_bytes(pair.key_pem)
            cert_file.write_bytes(pair.cert_pem)
            context.load_cert_chain(cert_file, key_file)
        context.load_verify_locations(cadata=self.cert_pem.decode())
        # Optional, as on kube-apiserver: a client without a certificate uses a token instead.
        context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["http/1.1"])
        return context


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def peer_identity(cert: dict[str, Any] | None) -> tuple[str, tuple[str, ...]] | None:
    """(user, groups) from a verified peer certificate as `SSLSocket.getpeercert()` gives it."""
    if not cert:
        return None
    user, groups = "", []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    return (user, tuple(groups)) if user else None
