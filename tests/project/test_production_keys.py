"""Issue 22, finding 9: with DEBUG off nothing starts on the built-in SECRET_KEY or without a
FIELD_ENCRYPTION_KEY of its own; `check --deploy` fails on a default or invalid key; the demo
generates its keys into var/ and reuses them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from dashboard.domain import crypto
from dashboard.domain.management.commands.demo import demo_keys
from tests.project.test_deploy import ROOT, manage

REAL_SECRET = "k" * 20 + "-production-secret-key-with-enough-entropy-3f9a1c7e"


def production_env(tmp_path, **env: str) -> dict[str, str]:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY", "FIELD_ENCRYPTION_KEY")
    }
    full.update(
        DEBUG="false",
        ALLOWED_HOSTS="sctp.example.org",
        VAR_DIR=str(tmp_path),
        CELERY_BROKER_URL="filesystem://",
    )
    full.update(env)
    return full


def start_web(tmp_path, **env: str) -> subprocess.CompletedProcess:
    """What gunicorn does first: import the WSGI application."""
    return subprocess.run(
        [sys.executable, "-c", "import dashboard.wsgi; print('serving')"],
        cwd=ROOT,
        env=production_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_web_refuses_the_built_in_secret_key(tmp_path) -> None:
    result = start_web(tmp_path, FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode())
    assert result.returncode != 0 and "serving" not in result.stdout
    assert "SECRET_KEY" in result.stderr and "dashboard.E003" in result.stderr


def test_the_web_refuses_to_start_without_a_field_encryption_key(tmp_path) -> None:
    result = start_web(tmp_path, SECRET_KEY=REAL_SECRET)
    assert result.returncode != 0 and "FIELD_ENCRYPTION_KEY is not set" in result.stderr


def test_the_web_starts_on_real_keys(tmp_path) -> None:
    result = start_web(
        tmp_path, SECRET_KEY=REAL_SECRET, FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode()
    )
    assert result.returncode == 0, result.stderr
    assert "serving" in result.stdout


def test_the_served_process_has_its_views_loaded_and_kept_out_of_the_collectors_scans(
    tmp_path,
) -> None:
    """dashboard.process.settle(): what the application loaded (its views among it) is frozen,
    so that a full collection does not scan it again in the middle of some request."""
    code = (
        "import gc, sys, dashboard.wsgi; "
        "print(gc.get_freeze_count(), 'dashboard.web.views.matrix' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=production_env(
            tmp_path, SECRET_KEY=REAL_SECRET, FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode()
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    frozen, views = result.stdout.split()
    assert int(frozen) > 10_000 and views == "True"


def test_a_worker_refuses_to_start_on_the_built_in_key(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "-c", "1"],
        cwd=ROOT,
        env=production_env(tmp_path, FIELD_ENCRYPTION_KEY="CHANGE-ME-a-fernet-key"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "refusing to start" in result.stderr and "dashboard.E002" in result.stderr


@pytest.mark.parametrize(
    "key", ["CHANGE-ME-a-fernet-key", "not-base64", "Q0hBTkdFLU1FLWEtZmVybmV0LWtleQ=="]
)
def test_check_deploy_fails_on_an_invalid_fernet_key(key: str) -> None:
    result = manage(
        "check",
        "--deploy",
        DEBUG="false",
        SECRET_KEY=REAL_SECRET,
        ALLOWED_HOSTS="sctp.example.org",
        FIELD_ENCRYPTION_KEY=key,
    )
    assert result.returncode != 0
    assert "dashboard.E002" in result.stderr


def test_check_deploy_fails_on_the_default_secret_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env={
            **env,
            "DEBUG": "false",
            "ALLOWED_HOSTS": "sctp.example.org",
            "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "dashboard.E003" in result.stderr


def test_nothing_is_derived_from_the_secret_key_with_debug_off(settings) -> None:
    settings.DEBUG = False
    settings.FIELD_ENCRYPTION_KEY = ""
    with pytest.raises(ImproperlyConfigured, match="FIELD_ENCRYPTION_KEY is not set"):
        crypto.encrypt("a kubeconfig token")


def test_the_demo_generates_its_keys_into_var_and_reuses_them(tmp_path) -> None:
    first = demo_keys(tmp_path)
    assert set(first) == {"SECRET_KEY", "FIELD_ENCRYPTION_KEY", "AUDIT_CHAIN_KEY"}
    Fernet(first["FIELD_ENCRYPTION_KEY"].encode())
    assert len(first["SECRET_KEY"]) >= 50
    path = tmp_path / "demo-keys.env"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert demo_keys(tmp_path) == first  # the second run decrypts what the first stored
    assert demo_keys(tmp_path / "elsewhere") != first  # per deployment, never a shipped key
