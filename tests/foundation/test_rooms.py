"""Rooms: the battery and the lab import nothing from the dashboard; the web process renders
pages without importing the battery or the kubernetes client; `workers` imports without Celery."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("room", ["workers/battery", "lab"])
def test_the_battery_and_the_lab_import_nothing_from_the_dashboard(room):
    offenders = {
        str(p.relative_to(ROOT)): sorted(n for n in imports_of(p) if n.split(".")[0] == "dashboard")
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
        "import sys, workers.vocabulary, workers.battery.implemented, workers.probe; "
        "print(sorted(m for m in ('django', 'celery', 'kubernetes') if m in sys.modules))"
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
        "print(sorted(m for m in ('kubernetes', 'workers.battery.runner', 'workers.battery.registry', 'workers.tasks')"
        " if m in sys.modules))"
    )
    assert loaded == "[]"
