"""Server-side request forgery through cluster registration, closed (issue 12, finding 2).

Each test registers through the API (or the page) and asserts the refusal, that nothing was
stored, and what the answer did not reveal. The servers here are real sockets on the loopback;
the resolver is the one seam faked (no DNS here), where a test needs a host name.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import yaml

from dashboard.domain.models import AuditEvent, Cluster, Run
from tests.conftest import auth
from tests.kubeconfigs import token_kubeconfig

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("inside_one_window")]

TOKEN = "ssrf-test-token"
VERSION = b'{"major":"1","minor":"31","gitVersion":"v1.31.2"}'


class Scripted:
    """A TCP server on 127.0.0.1 answering every connection with `script(conn)`; counts them."""

    def __init__(self, script) -> None:
        self.script = script
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits: list[bytes] = []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                request = conn.recv(65536)
                self.hits.append(request)
                self.script(conn, request)
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@contextmanager
def scripted(script) -> Iterator[Scripted]:
    server = Scripted(script)
    try:
        yield server
    finally:
        server.close()


def http_answer(status: str, body: bytes, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{extra}Connection: close\r\n\r\n"
    ).encode() + body


def version_ok(conn: socket.socket, request: bytes) -> None:
    conn.sendall(http_answer("200 OK", VERSION))


def kubeconfig(server: str) -> str:
    return token_kubeconfig(server, TOKEN)


def register(client, token: str, server: str, name: str = "calico-prod"):
    return client.post(
        "/api/v1/clusters/",
        {
            "name": name,
            "plugin": "calico",
            "proxier": "iptables",
            "kubeconfig": kubeconfig(server),
        },
        **auth(token),
    )


def refused_and_nothing_stored(resp, status: int = 400) -> str:
    assert resp.status_code == status, resp.content
    assert not Cluster.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="cluster.").exists()
    return resp.json()["error"]


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "127.1",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "0.0.0.0",
        "0",
    ],
)
def test_loopback_in_any_spelling_is_refused_and_never_contacted(
    client, vendor_token, settings, host
):
    settings.CLUSTER_ALLOWED_NETWORKS = ""
    with scripted(version_ok) as server:
        message = refused_and_nothing_stored(
            register(client, vendor_token, f"http://{host}:{server.port}")
        )
        time.sleep(0.1)
        assert server.hits == []
    assert "not allowed" in message and ("loopback" in message or "unspecified" in message)


@pytest.mark.parametrize(
    "server",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]:6443",
        "https://10.0.0.1:6443",
        "https://172.16.5.4",
        "https://192.168.1.1:6443",
        "http://224.0.0.1",
        "http://[ff02::1]",
        "http://100.64.0.1",
        "http://[fd00::1]",
        "http://[::ffff:169.254.169.254]",
    ],
)
def test_link_local_private_multicast_and_shared_addresses_are_refused(
    client, vendor_token, settings, server
):
    settings.CLUSTER_ALLOWED_NETWORKS = ""
    started = time.monotonic()
    message = refused_and_nothing_stored(register(client, vendor_token, server))
    assert time.monotonic() - started < 2  # refused before any connection attempt
    assert "not allowed" in message


def test_a_network_listed_in_cluster_allowed_networks_is_allowed(client, vendor_token, settings):
    settings.CLUSTER_ALLOWED_NETWORKS = "10.0.0.0/8, 127.0.0.0/8"
    with scripted(version_ok) as server:
        resp = register(client, vendor_token, f"http://127.0.0.1:{server.port}")
    assert resp.status_code == 201, resp.content
    assert resp.json()["kubernetes_version"] == "1.31.2"


@pytest.mark.parametrize(
    "suffix", ["#", "/#/healthz", "?x=", "/api?", "/%2e%2e/admin", "/../admin"]
)
def test_path_query_and_fragment_games_are_refused(client, vendor_token, suffix):
    with scripted(version_ok) as server:
        message = refused_and_nothing_stored(
            register(client, vendor_token, f"http://127.0.0.1:{server.port}{suffix}")
        )
        assert server.hits == []
    assert "server" in message


def test_user_info_in_the_server_is_refused_and_never_stored_or_logged(client, vendor_token):
    with scripted(version_ok) as server:
        resp = register(
            client, vendor_token, f"http://admin:hunter2-secret@127.0.0.1:{server.port}"
        )
        assert server.hits == []
    message = refused_and_nothing_stored(resp)
    assert "hunter2-secret" not in message and "password" in message


def test_an_error_answer_gives_its_status_and_never_its_body(client, vendor_token):
    def leak(conn: socket.socket, request: bytes) -> None:
        conn.sendall(
            http_answer(
                "500 INTERNAL-SECRET-REASON", b'{"message":"INTERNAL-SECRET-BODY db=10.1.2.3"}'
            )
        )

    with scripted(leak) as server:
        resp = register(client, vendor_token, f"http://127.0.0.1:{server.port}")
        assert len(server.hits) == 1
    message = refused_and_nothing_stored(resp)
    assert "HTTP 500 Internal Server Error" in message
    assert "SECRET" not in resp.content.decode() and "10.1.2.3" not in resp.content.decode()


def test_a_banner_and_a_closed_port_give_the_same_answer(client, vendor_token):
    """An SSH or Redis banner is never quoted, and its port cannot be told from a closed one."""

    def banner(conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"SSH-2.0-OpenSSH_SECRET-BANNER\r\n-ERR redis SECRET\r\n")

    with scripted(banner) as server:
        open_message = refused_and_nothing_stored(
            register(client, vendor_token, f"http://127.0.0.1:{server.port}")
        )
        open_port = server.port
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    closed_message = refused_and_nothing_stored(
        register(client, vendor_token, f"http://127.0.0.1:{closed_port}")
    )
    assert "SECRET" not in open_message
    assert open_message.replace(str(open_port), "PORT") == closed_message.replace(
        str(closed_port), "PORT"
    )


def test_a_truncated_answer_is_a_clean_400(client, vendor_token):
    def cut(conn: socket.socket, request: bytes) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
            b'{"gitVersion": "v1.'
        )

    with scripted(cut) as server:
        message = refused_and_nothing_stored(
            register(client, vendor_token, f"http://127.0.0.1:{server.port}")
        )
    assert "did not answer GET /version as a Kubernetes API server" in message


def test_the_check_has_an_overall_deadline_however_slowly_the_server_drips(
    client, vendor_token, monkeypatch
):
    from kernel import kubeconfig as kc

    assert (
        kc.REACHABILITY_DEADLINE == 10.0
    )  # the product's deadline; shortened below to keep the test fast
    monkeypatch.setattr(kc, "REACHABILITY_DEADLINE", 2.0)

    def drip(conn: socket.socket, request: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        for _ in range(40):  # a byte every 0.3 s: never a read timeout, never an end
            time.sleep(0.3)
            conn.sendall(b"a")

    with scripted(drip) as server:
        started = time.monotonic()
        message = refused_and_nothing_stored(
            register(client, vendor_token, f"http://127.0.0.1:{server.port}")
        )
        took = time.monotonic() - started
    assert took < 3.5, f"the check took {took:.1f} s"
    assert "within 2 s" in message


def test_a_host_name_is_resolved_once_and_the_connection_pinned_to_the_checked_address(
    client, vendor_token, monkeypatch
):
    """DNS rebinding: the name answers an allowed address to the check, then the metadata address."""
    from kernel import netguard

    answers = ["127.0.0.1", "169.254.169.254", "169.254.169.254"]
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return [answers[min(len(asked) - 1, 2)]]

    monkeypatch.setattr(netguard, "_getaddrinfo", resolver)
    with scripted(version_ok) as server:
        resp = register(client, vendor_token, f"http://rebind.example.test:{server.port}")
        assert resp.status_code == 201, resp.content
        # The server got the request (the name itself resolves nowhere: the address was pinned),
        # with the name in the Host header.
        assert len(server.hits) == 1 and b"Host: rebind.example.test" in server.hits[0]
    assert asked == ["rebind.example.test"]


def test_a_name_with_any_refused_address_is_refused(client, vendor_token, monkeypatch, settings):
    from kernel import netguard

    settings.CLUSTER_ALLOWED_NETWORKS = ""
    monkeypatch.setattr(netguard, "_getaddrinfo", lambda host, port: ["93.184.215.14", "127.0.0.1"])
    refused_and_nothing_stored(register(client, vendor_token, "https://mixed.example.test:6443"))


def test_a_proxy_url_in_the_kubeconfig_is_refused(client, vendor_token):
    with scripted(version_ok) as proxy:
        config = yaml.safe_load(kubeconfig("https://93.184.215.14:6443"))
        config["clusters"][0]["cluster"]["proxy-url"] = f"http://127.0.0.1:{proxy.port}"
        resp = client.post(
            "/api/v1/clusters/",
            {
                "name": "calico-prod",
                "plugin": "calico",
                "proxier": "iptables",
                "kubeconfig": yaml.safe_dump(config),
            },
            **auth(vendor_token),
        )
        assert proxy.hits == []
    assert "proxy-url" in refused_and_nothing_stored(resp)


def test_a_redirect_is_not_followed(client, vendor_token):
    with scripted(version_ok) as target:

        def redirect(conn: socket.socket, request: bytes, port: int = target.port) -> None:
            conn.sendall(
                http_answer("302 Found", b"", f"Location: http://127.0.0.2:{port}/version\r\n")
            )

        with scripted(redirect) as server:
            message = refused_and_nothing_stored(
                register(client, vendor_token, f"http://127.0.0.1:{server.port}")
            )
        assert target.hits == []
    assert "HTTP 302" in message


@pytest.mark.django_db(transaction=True)
def test_at_run_time_the_server_is_checked_again_and_refused(vendor_token, settings):
    """The worker's client: a server allowed at registration but not any more is never contacted."""
    from dashboard.domain.runs import request_run
    from tests import factories
    from workers import runner

    with scripted(version_ok) as server:
        plugin = factories.vendor("Calico vendor", ("calico",)).plugins.get()
        cluster = Cluster.objects.create(
            name="was-allowed",
            plugin=plugin,
            proxier="iptables",
            kubeconfig=kubeconfig(f"http://127.0.0.1:{server.port}"),
        )
        settings.CLUSTER_ALLOWED_NETWORKS = ""
        run = request_run(cluster, "basic", dispatch_on_commit=False)
        runner.execute(run.pk)
        assert server.hits == []
    run = Run.objects.get(pk=run.pk)
    assert run.state == Run.State.ERROR and "not allowed" in run.error and "loopback" in run.error
    assert str(server.port) not in run.error  # the run page is public: the server is not named


def test_registration_is_rate_limited_on_the_api_and_the_page(
    client, vendor_token, vendor_user, settings
):
    settings.CLUSTER_REGISTER_RATE_LIMIT = "2/3600"
    settings.CLUSTER_ALLOWED_NETWORKS = ""
    with scripted(version_ok) as server:
        for _ in range(2):
            assert register(client, vendor_token, "http://10.0.0.1").status_code == 400
        resp = register(client, vendor_token, f"http://127.0.0.1:{server.port}")
        assert resp.status_code == 429 and "too many cluster registrations" in resp.json()["error"]
        assert resp["Retry-After"]

        page = client.__class__()
        page.force_login(vendor_user)
        data = {
            "name": "calico-page",
            "plugin": "calico",
            "proxier": "iptables",
            "kubeconfig_text": kubeconfig(f"http://127.0.0.1:{server.port}"),
        }
        other_address = {"REMOTE_ADDR": "192.0.2.7"}  # the API's attempts counted 127.0.0.1 already
        assert (
            page.post("/clusters/new/", data, **other_address).status_code == 400
        )  # refused: loopback
        assert page.post("/clusters/new/", data, **other_address).status_code == 400
        resp = page.post("/clusters/new/", data, **other_address)
        assert resp.status_code == 429 and b"Too many cluster registrations" in resp.content
        assert server.hits == []
    assert not Cluster.objects.exists()


@contextmanager
def tls_version_server(hostname: str) -> Iterator[tuple[int, str]]:
    """An HTTPS /version server with a self-signed certificate for `hostname`; yields (port, CA data)."""
    import base64
    import datetime
    import ssl
    import tempfile
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    today = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(today - datetime.timedelta(days=1))
        .not_valid_after(today + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Host", ""))
            self.send_response(200)
            self.send_header("Content-Length", str(len(VERSION)))
            self.end_headers()
            self.wfile.write(VERSION)

        def log_message(self, *args) -> None:
            pass

    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as bundle:
        bundle.write(
            pem
            + key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        bundle.flush()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(bundle.name)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd.server_address[1], base64.b64encode(pem).decode()
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_pinning_keeps_tls_sni_and_hostname_verification(client, vendor_token, monkeypatch):
    from kernel import netguard

    monkeypatch.setattr(netguard, "_getaddrinfo", lambda host, port: ["127.0.0.1"])
    with tls_version_server("api.example.test") as (port, ca):

        def tls_kubeconfig(host: str) -> str:
            config = yaml.safe_load(kubeconfig(f"https://{host}:{port}"))
            config["clusters"][0]["cluster"]["certificate-authority-data"] = ca
            return yaml.safe_dump(config)

        ok = client.post(
            "/api/v1/clusters/",
            {
                "name": "calico-tls",
                "plugin": "calico",
                "proxier": "iptables",
                "kubeconfig": tls_kubeconfig("api.example.test"),
            },
            **auth(vendor_token),
        )
        assert ok.status_code == 201, ok.content
        # Same address, another name: the certificate does not match it, so the check fails.
        wrong = client.post(
            "/api/v1/clusters/",
            {
                "name": "calico-tls2",
                "plugin": "calico",
                "proxier": "iptables",
                "kubeconfig": tls_kubeconfig("other.example.test"),
            },
            **auth(vendor_token),
        )
        assert wrong.status_code == 400
        # Refused for what it is (the certificate names another host), in words.
        assert "certificate is for another host" in wrong.json()["error"]
        assert "other.example.test" in wrong.json()["error"]
    assert list(Cluster.objects.values_list("name", flat=True)) == ["calico-tls"]
