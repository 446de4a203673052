"""Issue 40, item 11: `kernel/probe.py` is the node-side CLI of the kernel guest, not the
runner's. The runner reaches nodes only through hostexec pods running the node's own tools
(`lsmod`, `iptables-save`, `ipvsadm`, `nft`), parsed by `kernel.battery.nodeparse`, which the
probe shares; a node has no copy of our code (nor, often, python3) to run. So the battery never
imports the probe, and every subcommand the probe keeps is one the guest's checks run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_the_battery_and_the_workers_never_import_the_probe():
    for folder in ("kernel/battery", "workers"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            assert "kernel.probe" not in _imports(path), path


def test_every_subcommand_of_the_probe_is_run_by_the_kernel_guest():
    source = (ROOT / "kernel" / "probe.py").read_text(encoding="utf-8")
    subcommands = set(re.findall(r'sub\.add_parser\(\s*"([a-z]+)"', source))
    assert subcommands == {"check", "serve", "connect"}
    script = (ROOT / "lab" / "guest" / "checks" / "sctp_paths.sh").read_text(encoding="utf-8")
    assert 'PROBE="python3 -S -m kernel.probe"' in script
    assert "$PROBE check --json" in script
    assert "$PROBE serve --port" in script
    assert "$PROBE connect 127.0.0.1:7000" in script
