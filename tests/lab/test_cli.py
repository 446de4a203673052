"""`python -m lab.server`: serves the profiles of a directory until SIGTERM."""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _serve(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lab.server", "--profiles", str(tmp_path / "profiles"), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _profiles(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "one.yaml").write_text(
        "name: one\nplugin: calico\nkubernetes_version: '1.32.1'\n"
    )
    (tmp_path / "profiles" / "two.yaml").write_text("name: two\nplugin: cilium\n")


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0


def test_the_cli_serves_https_with_its_ca_and_writes_a_kubeconfig(tmp_path: Path) -> None:
    _profiles(tmp_path)
    state, kubeconfig = tmp_path / "state", tmp_path / "kubeconfig"
    proc = _serve(
        tmp_path, "--port", "0", "--state-dir", str(state), "--kubeconfig", str(kubeconfig)
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().split() for _ in range(2)]
        assert [name for name, _url in lines] == ["one", "two"]
        url = dict(lines)["one"]
        assert url.startswith("https://127.0.0.1:") and url.endswith("/clusters/one")
        # The CA was generated at the first start and is kept in the state directory.
        assert (state / "ca.crt").exists() and (state / "ca.key").stat().st_mode & 0o077 == 0
        config = yaml.safe_load(kubeconfig.read_text())
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        assert [c["name"] for c in config["contexts"]] == ["one", "two"]
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == "one")
        assert cluster["server"] == url
        ca = base64.b64decode(cluster["certificate-authority-data"])
        assert ca == (state / "ca.crt").read_bytes()
        token = next(u["user"]["token"] for u in config["users"] if u["name"] == "one-admin")
        req = urllib.request.Request(url + "/version", headers={"Authorization": f"Bearer {token}"})
        context = ssl.create_default_context(cadata=ca.decode())
        with urllib.request.urlopen(req, timeout=5, context=context) as answer:
            assert json.load(answer)["gitVersion"] == "v1.32.1"
        # Without the lab's CA the certificate is refused.
        try:
            urllib.request.urlopen(req, timeout=5, context=ssl.create_default_context())
        except urllib.error.URLError as exc:
            assert "CERTIFICATE_VERIFY_FAILED" in str(exc.reason)
        else:
            raise AssertionError("a client without the lab's CA was served")
    finally:
        _stop(proc)
    # A second start keeps the CA: kubeconfigs written earlier stay valid.
    proc = _serve(tmp_path, "--port", "0", "--state-dir", str(state))
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        assert (state / "ca.crt").read_bytes() == ca
    finally:
        _stop(proc)


def test_insecure_http_is_the_explicit_way_to_plain_http(tmp_path: Path) -> None:
    _profiles(tmp_path)
    proc = _serve(tmp_path, "--port", "0", "--insecure-http", "--state-dir", str(tmp_path / "s"))
    try:
        assert proc.stdout is not None
        url = dict(proc.stdout.readline().split() for _ in range(2))["one"]
        assert url.startswith("http://127.0.0.1:")
        req = urllib.request.Request(
            url + "/version", headers={"Authorization": "Bearer lab-one-token"}
        )
        with urllib.request.urlopen(req, timeout=5) as answer:
            assert json.load(answer)["gitVersion"] == "v1.32.1"
        assert not (tmp_path / "s" / "ca.crt").exists()
    finally:
        _stop(proc)


def test_the_cli_refuses_a_bad_profile_with_the_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("name: bad\nplugin: calico\nproxier: userspace\n")
    done = subprocess.run(
        [sys.executable, "-m", "lab.server", "--profiles", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "proxier" in done.stderr


def test_manage_py_lab_writes_a_kubeconfig_with_a_context_per_cluster(tmp_path: Path) -> None:
    from kubernetes import client, config

    _profiles(tmp_path)
    kubeconfig = tmp_path / "var" / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "lab",
            "--profiles",
            str(tmp_path / "profiles"),
            "--port",
            "0",
            "--state-dir",
            str(tmp_path / "state"),
            "--kubeconfig",
            str(kubeconfig),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[0].startswith(f"kubeconfig {kubeconfig}") and "--context one" in lines[0]
        assert lines[1].startswith("lab cluster one: https://127.0.0.1:"), lines
        data = yaml.safe_load(kubeconfig.read_text())
        assert [c["name"] for c in data["contexts"]] == ["one", "two"]
        for name, version in (("one", "v1.32.1"), ("two", None)):
            api = config.new_client_from_config_dict(data, context=name)
            got = client.VersionApi(api).get_code().git_version
            assert got == version or (version is None and got.startswith("v1."))
    finally:
        _stop(proc)
