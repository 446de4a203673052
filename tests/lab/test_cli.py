"""`python -m lab.server`: serves the profiles of a directory until SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_prints_one_url_per_cluster_and_stops_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text("name: one\nplugin: calico\nkubernetes_version: '1.32.1'\n")
    (tmp_path / "two.yaml").write_text("name: two\nplugin: cilium\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lab.server", "--profiles", str(tmp_path), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().split() for _ in range(2)]
        assert [name for name, _url in lines] == ["one", "two"]
        url = dict(lines)["one"]
        assert url.endswith("/clusters/one")
        req = urllib.request.Request(
            url + "/version", headers={"Authorization": "Bearer lab-one-token"}
        )
        with urllib.request.urlopen(req, timeout=5) as answer:
            assert json.load(answer)["gitVersion"] == "v1.32.1"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


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
