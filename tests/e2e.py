"""Helpers for end-to-end tests: waiting on the database, a maintainer token, requesting runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.test import Client

from dashboard.domain.models import ApiToken

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, log: Path | None = None) -> T:
    """Polls until the predicate is truthy; a timeout fails the test with the worker's log tail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            tail = log.read_text()[-3000:] if log else ""
            raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tail}")
        time.sleep(0.1)


def maintainer_token(name: str = "e2e-maintainer") -> str:
    from django.contrib.auth import get_user_model

    from dashboard.domain.roles import maintainers_group

    user = get_user_model().objects.create_user(name)
    user.groups.add(maintainers_group())  # a token is only as good as its holder's role
    return ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=user)[1]


def request_run(client: Client, token: str, cluster: str, battery: str) -> int:
    resp = client.post(
        f"/api/v1/clusters/{cluster}/runs/",
        {"battery": battery},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert resp.status_code == 202, resp.content
    return int(resp.json()["run"])
