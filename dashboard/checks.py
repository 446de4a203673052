"""System checks of this project's own settings (`manage.py check --deploy`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=True)
def field_encryption_key(app_configs: Any, **kwargs: Any) -> list[Error]:
    """Production needs its own FIELD_ENCRYPTION_KEY: the development fallback derives the key
    from SECRET_KEY, so rotating SECRET_KEY (or leaking it) would expose or lose every secret."""
    if settings.DEBUG or (settings.FIELD_ENCRYPTION_KEY or "").strip():
        return []
    return [
        Error(
            "FIELD_ENCRYPTION_KEY is not set: with DEBUG=false kubeconfigs and webhook secrets must be "
            "encrypted with a key of their own",
            hint="python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
            id="dashboard.E001",
        )
    ]
