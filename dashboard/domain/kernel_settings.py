"""Hands the kernel the settings it obeys (kernel/config.py): at start, and again whenever one
changes (a test's override, `override_settings`), so the kernel never reads Django's settings."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from kernel import config

# Django setting -> the kernel's name for it
KERNEL_SETTINGS = {
    "CLUSTER_ALLOWED_NETWORKS": "cluster_allowed_networks",
    "CLUSTER_RESPONSE_MAX_BYTES": "response_max_bytes",
    "CLUSTER_CALL_DEADLINE_SECONDS": "call_deadline_seconds",
}
CASTS = {"response_max_bytes": int, "call_deadline_seconds": float}


def apply() -> config.Config:
    values: dict[str, Any] = {}
    for setting, name in KERNEL_SETTINGS.items():
        if hasattr(settings, setting):
            value = getattr(settings, setting)
            values[name] = CASTS[name](value) if name in CASTS else (value or "")
    return config.configure(**values)


def on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting in KERNEL_SETTINGS:
        apply()
