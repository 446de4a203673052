"""The slow suites run one worker each under `make test` (tests/xdist_groups.py): a pytest run
of its own, on a tree of its own, with the same xdist options as the Makefile's, tells on which
worker each test ran."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
XDIST = ("-n", "4", "--dist", "loadgroup")  # as the Makefile runs the suite

RECORD = """
import os
from pathlib import Path

def record(name):
    Path(os.environ["GROUPS_OUT"], name).write_text(os.environ.get("PYTEST_XDIST_WORKER", "-"))
"""


def suite_module(marker: str | None, count: int) -> str:
    mark = f"pytestmark = pytest.mark.{marker}\n" if marker else ""
    return (
        f"import time\nimport pytest\nfrom record import record\n{mark}\n"
        f"@pytest.mark.parametrize('i', range({count}))\n"
        f"def test_it(i):\n    time.sleep(0.05)\n    record('{marker or 'plain'}-' + str(i))\n"
    )


def test_each_slow_suite_runs_on_one_worker_while_the_rest_spread(tmp_path: Path) -> None:
    tree, out = tmp_path / "tree", tmp_path / "out"
    tree.mkdir()
    out.mkdir()
    (tree / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    guest: g\n    drills: d\n    browser: b\n"
    )
    (tree / "record.py").write_text(RECORD)
    (tree / "conftest.py").write_text(
        "from tests.xdist_groups import SlowSuiteGroups\n\n"
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(SlowSuiteGroups(), 'slow-suite-groups')\n"
    )
    for marker in ("guest", "drills", "browser", None):
        (tree / f"test_{marker or 'plain'}.py").write_text(suite_module(marker, 8))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *XDIST, "."],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{ROOT}:{tree}", "GROUPS_OUT": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    workers: dict[str, set[str]] = {}
    for path in out.iterdir():
        workers.setdefault(path.name.split("-")[0], set()).add(path.read_text())
    assert {name: len(ran_on) for name, ran_on in workers.items() if name != "plain"} == {
        "guest": 1,
        "drills": 1,
        "browser": 1,
    }
    # Where the other tests go is the scheduler's choice (under load one worker may take them
    # all), so nothing is asserted of it.
    assert len(workers["plain"]) >= 1
