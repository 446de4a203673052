"""The SCTP test battery: the KEP-614 Test Plan run against a live cluster.

Plain Python, no Django: the Celery task turns a `BatteryReport` into model rows.

    report = run_battery(api_client, spec, "all", run_id, on_result=..., on_progress=...)
"""

from __future__ import annotations

import importlib
from typing import Any

# Attributes load on first use (PEP 562): `import workers.battery.implemented` or `.nodeparse`
# must not pull in the kubernetes client and every check.
_LAZY = {
    "BatteryReport": "workers.battery.base",
    "ClusterSpec": "workers.battery.base",
    "TestOutcome": "workers.battery.base",
    "Timeouts": "workers.battery.base",
    "BASIC_KEYS": "workers.battery.registry",
    "BATTERIES": "workers.battery.registry",
    "CONNECTIVITY_KEYS": "workers.battery.registry",
    "REGISTRY": "workers.battery.registry",
    "run_battery": "workers.battery.runner",
    "sweep_namespaces": "workers.battery.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    try:
        return importlib.import_module(f"workers.battery.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'workers.battery' has no attribute {name!r}") from None


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
