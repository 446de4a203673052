"""The few settings the kernel obeys, handed to it by whoever runs it.

The kernel reads no Django settings. In the dashboard's processes the domain copies them here at
start and again whenever a setting changes (dashboard/domain/kernel_settings.py); the in-cluster
agent, which runs without Django, keeps these defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_CALL_SECONDS = 60.0


@dataclass(frozen=True)
class Config:
    # CIDRs a cluster's API server may resolve into although loopback, private or link-local
    cluster_allowed_networks: str = ""
    # the largest answer and the longest call a cluster's API server is given (kernel/bounded.py)
    response_max_bytes: int = DEFAULT_MAX_BYTES
    call_deadline_seconds: float = DEFAULT_CALL_SECONDS


_current = Config()


def current() -> Config:
    return _current


def configure(**values: Any) -> Config:
    """Replaces the named settings (the others stay); answers the new configuration."""
    global _current
    _current = dataclasses.replace(_current, **values)
    return _current
