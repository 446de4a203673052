"""Fixtures for the lab tests: a running LabServer and real `kubernetes` clients against it
(the clients and object builders: tests/lab/kube.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lab.server import LabServer
from tests.lab.kube import Kube, connect_kube, profile


@pytest.fixture
def make_kube() -> Iterator[Any]:
    """`make_kube(**profile_overrides)` starts a one-cluster lab and returns its Kube."""
    started: list[LabServer] = []

    def factory(name: str = "c1", **overrides: Any) -> Kube:
        lab = LabServer([profile(name, **overrides)]).start()
        started.append(lab)
        return connect_kube(lab, name)

    yield factory
    for lab in started:
        lab.stop()


@pytest.fixture
def kube(make_kube: Any) -> Kube:
    return make_kube()
