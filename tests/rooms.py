"""The checkers behind tests/project/test_rooms.py: which layer a module belongs to, what it
imports, and where a vocabulary key is spelled. Plain `ast`, so a planted violation in a fixture
tree (tests/fixtures/rooms/) is caught exactly as one in the project would be."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# The packages that are the project's source (tests and bench are tools: they may import every
# layer, and no layer imports them).
SOURCE_PACKAGES = ("kernel", "dashboard", "workers", "lab")
TOOLS = ("tests", "bench")
SKIPPED_DIRS = ("migrations", "rootfs", "__pycache__")


@dataclass(frozen=True, order=True)
class Import:
    module: str  # the importing module, dotted
    imported: str  # what it imports, dotted (relative imports resolved)
    line: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(root: Path, packages: Iterable[str]) -> Iterator[Path]:
    for package in packages:
        base = root / package
        candidates = [base.with_suffix(".py")] if not base.is_dir() else base.rglob("*.py")
        for path in sorted(candidates):
            if path.exists() and not any(part in SKIPPED_DIRS for part in path.parts):
                yield path


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node, except what sits under `if TYPE_CHECKING:` (never imported at run time)."""
    for child in ast.iter_child_nodes(node):
        if _type_checking_only(child):
            for orelse in getattr(child, "orelse", []):
                yield orelse
                yield from _walk(orelse)
            continue
        yield child
        yield from _walk(child)


def imports_in(root: Path, path: Path, modules: set[str] | None = None) -> list[Import]:
    """Module-level and function-level imports of one file; `from . import x` names the
    submodule x when there is one (`modules`), else the package."""
    me = module_name(root, path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: list[Import] = []
    for node in _walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend(Import(me, alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                named = sub if modules is not None and sub in modules else target
                out.append(Import(me, named, node.lineno))
    return out


def all_imports(root: Path, packages: Iterable[str] = SOURCE_PACKAGES) -> list[Import]:
    files = list(source_files(root, packages))
    modules = {module_name(root, p) for p in files}
    return sorted({i for p in files for i in imports_in(root, p, modules)})


def layer_of(module: str, layers: Mapping[str, str]) -> str | None:
    """The layer of the longest prefix of `module` in the table (None: not ours, third party)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        layer = layers.get(".".join(parts[:end]))
        if layer is not None:
            return layer
    return None


def layer_violations(
    imports: Iterable[Import],
    layers: Mapping[str, str],
    allowed: Mapping[str, set[str]],
    forbidden_outside: Mapping[str, set[str]],
) -> set[tuple[str, str]]:
    """(importer, imported) pairs that go where the table does not allow: to a layer the
    importer's may not import, or to a third-party package its layer must not touch."""
    found: set[tuple[str, str]] = set()
    for imp in imports:
        mine = layer_of(imp.module, layers)
        if mine is None:
            continue
        theirs = layer_of(imp.imported, layers)
        top = imp.imported.split(".")[0]
        if theirs is not None:
            if theirs not in allowed[mine]:
                found.add((imp.module, imp.imported))
        elif top in forbidden_outside.get(mine, set()):
            found.add((imp.module, imp.imported))
    return found


def package_cycles(imports: Iterable[Import], depth: int) -> set[tuple[str, str]]:
    """Pairs of packages (module names cut to `depth` parts) that import each other."""
    edges = set()
    for imp in imports:
        a = ".".join(imp.module.split(".")[:depth])
        b = ".".join(imp.imported.split(".")[:depth])
        if a != b:
            edges.add((a, b))
    return {(a, b) for a, b in edges if (b, a) in edges and a < b}


# --- spelled once ---------------------------------------------------------------------------


def string_literals(path: Path) -> Iterator[tuple[str, int]]:
    """The string constants of a Python file (docstrings and f-string parts included)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno


QUOTED = re.compile(r"""(["'])([a-z0-9][a-z0-9_-]*)\1""")


def spellings(
    root: Path, keys: Iterable[str], python_dirs: Iterable[str], template_dirs: Iterable[str]
) -> set[tuple[str, str]]:
    """(file, key) for each file that spells a key: a Python string constant equal to it, or
    the key in quotes in a template."""
    wanted = set(keys)
    found: set[tuple[str, str]] = set()
    for path in source_files(root, python_dirs):
        where = str(path.relative_to(root))
        found.update((where, value) for value, _ in string_literals(path) if value in wanted)
    for folder in template_dirs:
        for path in sorted((root / folder).rglob("*.html")):
            where = str(path.relative_to(root))
            found.update((where, m[2]) for m in QUOTED.finditer(path.read_text()) if m[2] in wanted)
    return found
