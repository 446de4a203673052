"""System checks of this project's own settings, and the refusal to serve on unsafe keys.

With DEBUG off the keys must be the deployment's own: a SECRET_KEY that is not the built-in
development one (nor a placeholder, and 50+ characters), and a FIELD_ENCRYPTION_KEY of valid
Fernet keys (nothing is derived from SECRET_KEY then). `manage.py check` (and so `migrate` and
`runserver`) fails otherwise, and the web (dashboard/wsgi.py), workers and beat
(dashboard/celery.py) refuse to start, naming what is wrong.
"""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import Error, Tags, register
from django.core.exceptions import ImproperlyConfigured

FERNET_HINT = (
    "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
)
SECRET_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
PLACEHOLDER = "change-me"


def _valid_fernet(key: str) -> bool:
    if PLACEHOLDER in key.lower():
        return False
    try:
        Fernet(key.encode())
    except (ValueError, TypeError):
        return False
    return True


def key_problems() -> list[Error]:
    """What is wrong with the keys for serving with DEBUG off (nothing when DEBUG is on)."""
    if settings.DEBUG:
        return []
    problems = []
    secret = settings.SECRET_KEY or ""
    if (
        secret == getattr(settings, "DEV_SECRET_KEY", None)
        or PLACEHOLDER in secret.lower()
        or len(secret) < 50
    ):
        problems.append(
            Error(
                "SECRET_KEY is the built-in development key, a placeholder or shorter than 50 "
                "characters: with DEBUG=false it must be this deployment's own secret",
                hint=SECRET_HINT,
                id="dashboard.E003",
            )
        )
    keys = [k.strip() for k in (settings.FIELD_ENCRYPTION_KEY or "").split(",") if k.strip()]
    if not keys:
        problems.append(
            Error(
                "FIELD_ENCRYPTION_KEY is not set: with DEBUG=false kubeconfigs and webhook secrets "
                "must be encrypted with a key of their own (none is derived from SECRET_KEY)",
                hint=FERNET_HINT,
                id="dashboard.E001",
            )
        )
    elif not all(_valid_fernet(k) for k in keys):
        problems.append(
            Error(
                "FIELD_ENCRYPTION_KEY is not a list of valid Fernet keys (a placeholder such as "
                "CHANGE-ME-a-fernet-key, or a key that is not 32 url-safe base64-encoded bytes)",
                hint=FERNET_HINT,
                id="dashboard.E002",
            )
        )
    return problems


@register(Tags.security)
def production_keys(app_configs: Any, **kwargs: Any) -> list[Error]:
    """Registered for every `check` (not only --deploy): migrate and runserver refuse too."""
    return key_problems()


def refuse_unsafe_keys() -> None:
    """Called where a server process starts: raises, naming every problem, on unsafe keys."""
    problems = key_problems()
    if problems:
        raise ImproperlyConfigured(
            "refusing to start with DEBUG=false: "
            + "; ".join(f"{p.msg} ({p.id}; e.g. {p.hint})" for p in problems)
        )
