"""Shared fixtures: named users per role, tokens, the API client."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dashboard.models import ApiToken
from dashboard.roles import maintainers_group
from tests import factories


@pytest.fixture
def maintainer(db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("maria", password="maria-password")
    user.groups.add(maintainers_group())
    return user


@pytest.fixture
def vendor_user(db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("victor", password="victor-password")
    v = factories.vendor("Calico vendor", ("calico",))
    v.members.add(user)
    return user


@pytest.fixture
def other_vendor_user(db):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("olga", password="olga-password")
    v = factories.vendor("Cilium vendor", ("cilium",))
    v.members.add(user)
    return user


@pytest.fixture
def vendor_token(db) -> str:  # type: ignore[no-untyped-def]
    _, token = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=factories.vendor("Calico vendor", ("calico",)))
    return token


@pytest.fixture
def other_vendor_token(db) -> str:  # type: ignore[no-untyped-def]
    _, token = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=factories.vendor("Cilium vendor", ("cilium",)))
    return token


@pytest.fixture
def maintainer_token(maintainer) -> str:  # type: ignore[no-untyped-def]
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    return token


@pytest.fixture
def api(db) -> Client:  # type: ignore[no-untyped-def]
    return Client()


def auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Token {token}"}
