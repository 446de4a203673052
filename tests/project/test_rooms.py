"""Rooms: the battery and the lab import nothing from the dashboard; the web process renders
pages without importing the battery or the kubernetes client; `workers` imports without Celery.
Layers import downward only (an allowed-imports table), and every vocabulary key is spelled once
(the checkers: tests/rooms.py; their planted violations: tests/fixtures/rooms/)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests import rooms

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("room", ["kernel", "lab"])
def test_the_kernel_and_the_lab_import_nothing_from_the_dashboard_or_the_workers(room):
    offenders = {
        str(p.relative_to(ROOT)): sorted(
            n for n in imports_of(p) if n.split(".")[0] in ("dashboard", "workers")
        )
        for p in (ROOT / room).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "PATH": "/usr/bin:/bin",
            "DATABASE_URL": "sqlite:///:memory:",
            "HOME": "/tmp",
        },
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_the_vocabulary_the_probe_and_the_battery_catalog_load_without_django_or_celery():
    loaded = run(
        "import sys, kernel.vocabulary, kernel.battery.implemented, kernel.probe; "
        "print(sorted(m for m in ('django', 'celery', 'kubernetes') if m in sys.modules))"
    )
    assert loaded == "[]"


def test_every_kernel_module_loads_without_django_or_celery():
    modules = sorted(rooms.module_name(ROOT, p) for p in rooms.source_files(ROOT, ["kernel"]))
    loaded = run(
        f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in ('django', 'celery', 'dashboard', 'workers') if m in sys.modules))"
    )
    assert loaded == "[]"


def test_the_web_process_renders_pages_without_the_battery_or_the_kubernetes_client():
    loaded = run(
        "import sys, django; django.setup()\n"
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from django.test import Client\n"
        "c = Client()\n"
        "for url in ('/', '/matrix/', '/clusters/', '/api/v1/readiness/', '/badge/calico.svg', '/submissions/'):\n"
        "    assert c.get(url).status_code == 200, url\n"
        "print(sorted(m for m in ('kubernetes', 'kernel.battery.runner', 'kernel.battery.registry', 'workers.tasks')"
        " if m in sys.modules))"
    )
    assert loaded == "[]"


# --- Layers import downward only (issue 20) -------------------------------------------------
#
# Every module of kernel/, dashboard/, workers/, lab/ and manage.py belongs to the layer of the longest
# prefix below; a layer imports only the layers ALLOWED for it (function-level imports count;
# `if TYPE_CHECKING:` imports do not), and never the third-party packages FORBIDDEN for it.

LAYERS: dict[str, str] = {
    # vocabulary: plain Python every layer may import (the lab too): keys, statuses, CNI table
    "kernel.vocabulary": "vocabulary",
    "kernel.cni": "vocabulary",
    # kernel: Django-free; the battery, Kubernetes access, the probe, the agent
    "kernel": "kernel",
    # domain: models and rules (the Django app labelled `dashboard`)
    "dashboard.domain": "domain",
    # web: views, API, template tags, middleware, admin
    "dashboard.web": "web",
    # tasks: the Celery app (kept where Django projects keep it) and its Redis transport, the
    # Celery tasks, leases, the runner
    "dashboard.celery": "tasks",
    "dashboard.broker": "tasks",
    "workers": "tasks",
    # commands: entry points for operators (manage.py COMMAND)
    "dashboard.domain.management": "commands",
    "workers.management": "commands",
    # project: the composition root (settings, URLs, WSGI, the Celery app, manage.py)
    "dashboard": "project",
    "manage": "project",
    # lab: the emulated clusters, standalone
    "lab": "lab",
    # tools: tests and benchmarks may import every layer; no layer imports them
    "tests": "tools",
    "bench": "tools",
}
ALLOWED: dict[str, set[str]] = {
    "vocabulary": {"vocabulary"},
    "kernel": {"kernel", "vocabulary"},
    "domain": {"domain", "kernel", "vocabulary"},
    "tasks": {"tasks", "domain", "kernel", "vocabulary"},
    "web": {"web", "domain", "vocabulary"},
    "commands": {"commands", "domain", "tasks", "kernel", "vocabulary", "lab"},
    "project": {"project", "web", "domain", "tasks", "kernel", "vocabulary"},
    "lab": {"lab", "vocabulary"},
    "tools": set(),
}
DJANGO_AND_CELERY = {
    "django",
    "rest_framework",
    "drf_spectacular",
    "django_filters",
    "django_celery_beat",
    "celery",
    "kombu",
}
FORBIDDEN_OUTSIDE: dict[str, set[str]] = {
    "vocabulary": DJANGO_AND_CELERY | {"kubernetes"},
    "kernel": DJANGO_AND_CELERY,
    "web": {"kubernetes"},
    "lab": DJANGO_AND_CELERY,
}
SOURCE = ("kernel", "dashboard", "workers", "lab", "manage")


def violations_in(root: Path) -> set[tuple[str, str]]:
    return rooms.layer_violations(
        rooms.all_imports(root, SOURCE), LAYERS, ALLOWED, FORBIDDEN_OUTSIDE
    )


def cycles_in(root: Path) -> set[tuple[str, str]]:
    imports = rooms.all_imports(root, SOURCE)
    return set().union(*(rooms.package_cycles(imports, depth) for depth in range(1, 7)))


def test_layers_import_downward_only():
    assert violations_in(ROOT) == set(), "imports that break the layer table (see LAYERS)"


def test_no_two_packages_import_each_other():
    assert cycles_in(ROOT) == set()


def test_the_domain_sends_tasks_through_its_port_never_through_the_celery_app():
    imports = rooms.all_imports(ROOT, SOURCE)
    domain = [i for i in imports if rooms.layer_of(i.module, LAYERS) == "domain"]
    assert [i for i in domain if i.imported.startswith(("dashboard.celery", "workers.tasks"))] == []
    senders = {i.module for i in domain if i.imported == "dashboard.domain.tasks_port"}
    assert {
        "dashboard.domain.runs",
        "dashboard.domain.notify",
        "dashboard.domain.publication",
    } <= senders


ROOMS_FIXTURE = ROOT / "tests" / "fixtures" / "rooms"


def test_the_layer_checker_catches_what_is_planted_in_the_fixture_tree():
    """Each import marked PLANTED in tests/fixtures/rooms breaks the table; nothing else there
    does (the TYPE_CHECKING import, the port, relative imports, downward imports)."""
    assert violations_in(ROOMS_FIXTURE) == {
        ("kernel.battery", "django.conf"),
        ("dashboard.domain.notify", "dashboard.celery"),
        ("dashboard.domain.agent_runs", "workers.runner"),
        ("dashboard.web.views.page", "kubernetes"),
        ("dashboard.web.views.page", "kernel.battery"),
        ("lab.server", "dashboard.domain.models"),
    }
    # the domain's call into the runner closes a loop with the runner's import of the domain
    assert cycles_in(ROOMS_FIXTURE) == {
        ("dashboard", "workers"),
        ("dashboard.domain", "workers.runner"),
    }


# --- Every key spelled once (issue 20) ------------------------------------------------------
#
# A catalog key, a criterion key or a conformance extra is spelled (a Python string equal to
# it, or the key in quotes in a template) in its home module only; elsewhere it is named from
# there. Prose that mentions a key is not a spelling of it.

KEY_HOME = "kernel/vocabulary.py"  # the one vocabulary module
SPELLING_SOURCE = ("kernel", "dashboard", "workers", "lab")
TEMPLATES = ("templates",)


def vocabulary_keys() -> tuple[str, ...]:
    from kernel.vocabulary import Criterion, Extra, Key

    return (*Key, *Criterion, *Extra)


def misspellings(root: Path) -> set[tuple[str, str]]:
    found = rooms.spellings(root, vocabulary_keys(), SPELLING_SOURCE, TEMPLATES)
    return {(path, key) for path, key in found if path != KEY_HOME}


def test_every_key_is_spelled_once():
    assert misspellings(ROOT) == set()


def test_the_spelling_checker_catches_what_is_planted_in_the_fixture_tree():
    assert misspellings(ROOMS_FIXTURE) == {
        ("dashboard/domain/policy.py", "pod-to-service"),
        ("templates/front/page.html", "pod-to-pod"),
    }
    # the home spells them, and is not reported
    assert ("kernel/vocabulary.py", "pod-to-pod") in rooms.spellings(
        ROOMS_FIXTURE, vocabulary_keys(), SPELLING_SOURCE, TEMPLATES
    )


def test_the_catalog_is_built_from_the_vocabulary():
    from dashboard.domain.catalog import CATALOG, TRANSITIONS
    from kernel.vocabulary import Criterion, Key, battery_of

    assert [entry["key"] for entry in CATALOG] == list(Key)
    assert all(entry["battery"] == battery_of(entry["key"]) for entry in CATALOG)
    assert [key for t in TRANSITIONS for key, _title in t["criteria"]] == list(Criterion)
