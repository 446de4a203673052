"""tools/mypy_none_format.py: mypy fails a value that may be None reaching a format spec (issue
36's crash was `f"{item.when:%Y-%m-%d}"` with `when: datetime | None`), and passes the same
code once None is handled. Runs mypy's API on small modules, with the plugin alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "tools" / "mypy_none_format.py"


def _mypy(tmp_path: Path, source: str) -> tuple[int, str]:
    (tmp_path / "mod.py").write_text(textwrap.dedent(source))
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nplugins = {PLUGIN}\n")
    out, err, status = api.run(
        [
            "--config-file",
            str(tmp_path / "mypy.ini"),
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / ".cache"),
            str(tmp_path / "mod.py"),
        ]
    )
    return status, out + err


ISSUE_36 = """
    from dataclasses import dataclass
    from datetime import datetime

    @dataclass
    class Item:
        when: datetime | None

    def why(item: Item) -> str:
        return f"last demonstrated {item.when:%Y-%m-%d}"
"""


def test_the_issue_36_line_is_an_error(tmp_path: Path) -> None:
    status, out = _mypy(tmp_path, ISSUE_36)
    assert status == 1 and "[none-format]" in out and "mod.py:10" in out, out


@pytest.mark.parametrize(
    "line",
    [
        'return f"{item.when:%Y-%m-%d}" if item.when else "no date"',
        'return f"{item.when}"',  # no spec: None formats as "None"
        'return f"{item.when!r:>20}"',  # a conversion: repr() is a str
        'return "{}".format(item.when)',
    ],
)
def test_handled_or_spec_free_formats_pass(tmp_path: Path, line: str) -> None:
    source = ISSUE_36.replace('return f"last demonstrated {item.when:%Y-%m-%d}"', line)
    status, out = _mypy(tmp_path, source)
    assert status == 0, out


@pytest.mark.parametrize(
    "line",
    [
        'return "{:%Y}".format(item.when)',
        'return "{0:%Y} {0}".format(item.when)',
        "return f\"{item.when:{'%Y'}}\"",  # a nested (dynamic) spec
    ],
)
def test_written_out_formats_with_a_spec_fail(tmp_path: Path, line: str) -> None:
    source = ISSUE_36.replace('return f"last demonstrated {item.when:%Y-%m-%d}"', line)
    status, out = _mypy(tmp_path, source)
    assert status == 1 and "[none-format]" in out, out
