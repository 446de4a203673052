"""Production settings and the docker compose file (which cannot run here: no Docker engine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {
        k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }  # a test-only escape
    full.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_mode_passes_check_deploy_without_warnings():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY="k" * 20 + "-production-secret-key-with-enough-entropy-3f9a1c7e",
        ALLOWED_HOSTS="sctp.example.org",
        FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_mode_without_a_field_encryption_key_fails_check_deploy():
    result = manage(
        "check",
        "--deploy",
        DEBUG="false",
        SECRET_KEY="k" * 20 + "-production-secret-key-with-enough-entropy-3f9a1c7e",
        ALLOWED_HOSTS="sctp.example.org",
        FIELD_ENCRYPTION_KEY="",
    )
    assert result.returncode != 0
    assert (
        "dashboard.E001" in result.stderr + result.stdout
        and "FIELD_ENCRYPTION_KEY" in result.stderr
    )


def test_development_defaults_do_fail_check_deploy():
    result = manage("check", "--deploy", "--fail-level", "WARNING", DEBUG="true")
    assert result.returncode != 0


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_every_service_with_a_healthcheck():
    services = compose()["services"]
    assert {"web", "worker", "beat", "redis", "postgres"} <= set(services)
    for name in ("web", "worker", "beat", "redis", "postgres"):
        assert "healthcheck" in services[name], name


def test_compose_keeps_the_database_on_a_named_volume():
    data = compose()
    volumes = data["services"]["postgres"]["volumes"]
    named = [v.split(":")[0] for v in volumes if not v.startswith((".", "/"))]
    assert named and set(named) <= set(data["volumes"])


def test_compose_commands_match_the_project_entry_points():
    services = compose()["services"]
    assert "celery -A dashboard worker" in services["worker"]["command"]
    assert "celery -A dashboard beat" in services["beat"]["command"]
    assert "dashboard.wsgi:application" in services["web"]["command"]
    assert "manage.py migrate" in services["web"]["command"]
    lab = services.get("lab")
    if lab:
        assert "manage.py lab" in lab["command"] and "--register" in lab["command"]


def test_compose_environment_names_only_settings_that_exist():
    settings_src = (ROOT / "dashboard" / "settings.py").read_text()
    known = set(re.findall(r'env(?:_bool|_int)?\("([A-Z_]+)"', settings_src))
    services = compose()["services"]
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert set(env) <= known, set(env) - known
        assert (
            env["DATABASE_URL"].startswith("postgres://")
            and "@postgres:5432/" in env["DATABASE_URL"]
        )
        assert env["CELERY_BROKER_URL"] == env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["DEBUG"] == "false"
    pg = services["postgres"]["environment"]
    url = services["web"]["environment"]["DATABASE_URL"]
    assert url.endswith(f"/{pg['POSTGRES_DB']}") and url.startswith(
        f"postgres://{pg['POSTGRES_USER']}:"
    )


def test_compose_services_wait_for_healthy_dependencies():
    services = compose()["services"]
    for name in ("web", "worker", "beat"):
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == deps["redis"]["condition"] == "service_healthy"
