"""The SCTP test battery: the KEP-614 Test Plan run against a live cluster.

Plain Python, no Django: the Celery task turns a `BatteryReport` into model rows.

    report = run_battery(api_client, spec, "all", run_id, on_result=..., on_progress=...)
"""

from __future__ import annotations

from workers.battery.base import BatteryReport, ClusterSpec, TestOutcome, Timeouts
from workers.battery.registry import BASIC_KEYS, BATTERIES, CONNECTIVITY_KEYS, REGISTRY
from workers.battery.runner import run_battery, sweep_namespaces

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
