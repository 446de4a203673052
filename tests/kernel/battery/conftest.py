"""Fixtures: a real lab server per test, reached through the real kubernetes client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from kernel.battery import BatteryReport, run_battery
from kernel.kubeconfig import api_client_from_kubeconfig
from lab.server import LabServer
from tests.battery_specs import FAST, profile, spec_for


class Lab:
    def __init__(self, server: LabServer, prof: dict[str, Any]) -> None:
        self.server = server
        self.profile = prof
        self.api = api_client_from_kubeconfig(
            yaml.safe_dump(server.kubeconfig(prof["name"])), request_timeout=FAST.request
        )

    @property
    def cluster(self) -> Any:
        return self.server.cluster(self.profile["name"])

    def run(self, battery: str = "all", run_id: str = "run-1", **kwargs: Any) -> BatteryReport:
        spec = kwargs.pop("spec", None) or spec_for(self.profile)
        return run_battery(self.api, spec, battery, run_id, **kwargs)

    def battery_namespaces(self) -> list[str]:
        return [name for name in self.cluster.namespaces if name.startswith("sctp-battery-")]


@pytest.fixture
def start_lab() -> Iterator[Callable[..., Lab]]:
    started: list[Lab] = []

    def start(**changes: Any) -> Lab:
        prof = profile(**changes)
        lab = Lab(LabServer([prof]).start(), prof)
        started.append(lab)
        return lab

    yield start
    for lab in started:
        lab.api.close()
        lab.server.stop()
