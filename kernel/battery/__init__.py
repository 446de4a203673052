"""The SCTP test battery: the KEP-614 Test Plan run against a live cluster.

Plain Python, no Django: the Celery task turns a `BatteryReport` into model rows.

    report = run_battery(api_client, spec, "all", run_id, on_result=..., on_progress=...)
"""

from __future__ import annotations

import importlib
from typing import Any

# Attributes load on first use (PEP 562): `import kernel.battery.implemented` or `.nodeparse`
# must not pull in the kubernetes client and every check.
_LAZY = {
    "BatteryReport": "kernel.battery.base",
    "ClusterSpec": "kernel.battery.base",
    "TestOutcome": "kernel.battery.base",
    "Timeouts": "kernel.battery.base",
    "BASIC_KEYS": "kernel.battery.registry",
    "BATTERIES": "kernel.battery.registry",
    "CONNECTIVITY_KEYS": "kernel.battery.registry",
    "REGISTRY": "kernel.battery.registry",
    "run_battery": "kernel.battery.runner",
    "sweep_namespaces": "kernel.battery.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    try:
        return importlib.import_module(f"kernel.battery.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'kernel.battery' has no attribute {name!r}") from None


__all__ = [
    "BASIC_KEYS",
    "BATTERIES",
    "CONNECTIVITY_KEYS",
    "REGISTRY",
    "BatteryReport",
    "ClusterSpec",
    "TestOutcome",
    "Timeouts",
    "run_battery",
    "sweep_namespaces",
]
