"""No lab module reaches into another object's private names (issue 20, "No god modules").

A name starting with `_` is private to the object (or module) that defines it: code may use
`self._x` and `cls._x`, and `super()._x` for the method it overrides, and nothing else.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lab

LAB = Path(lab.__file__).parent
ATTR_FUNCTIONS = ("getattr", "setattr", "hasattr", "delattr")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def private_reaches(source: str, filename: str = "<string>") -> list[str]:
    """`file:line: expression` for each private name used on something other than self/cls."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTR_FUNCTIONS
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
            and not _own(node.args[0])
        ):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


def test_no_lab_module_reaches_into_private_names() -> None:
    found = []
    for path in sorted(LAB.rglob("*.py")):
        found += private_reaches(path.read_text(), str(path.relative_to(LAB.parent)))
    assert found == []


def test_the_check_finds_a_planted_reach() -> None:
    planted = (
        "def advance(cluster, store):\n"
        "    cluster._emit('pods', 'MODIFIED', {})\n"
        "    state = getattr(cluster, '_rbac_state', None)\n"
        "    return store._derived, state\n"
    )
    assert private_reaches(planted, "planted.py") == [
        "planted.py:2: cluster._emit",
        "planted.py:3: getattr(cluster, '_rbac_state', None)",
        "planted.py:4: store._derived",
    ]


def test_the_check_allows_an_objects_own_private_names() -> None:
    own = (
        "class Store:\n"
        "    def __init__(self):\n"
        "        self._derived = {}\n"
        "    @classmethod\n"
        "    def make(cls):\n"
        "        return cls._build()\n"
        "    def render(self):\n"
        "        return super()._render(), self.__class__, getattr(self, '_derived')\n"
    )
    assert private_reaches(own) == []
