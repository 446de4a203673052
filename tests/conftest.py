"""Shared fixtures: named users per role, tokens, the API client."""

from __future__ import annotations

import copy
import os
import re
import secrets
import time
import uuid
from typing import Any

import pytest
import time_machine
from cryptography.fernet import Fernet
from django.conf import settings as dj_settings
from django.contrib.auth import get_user_model
from django.db import DatabaseError
from django.test import Client

from dashboard.domain import heads
from dashboard.domain.catalog import seed
from dashboard.domain.models import ApiToken, CatalogTest, Plugin
from dashboard.domain.roles import maintainers_group
from tests import factories
from tests.xdist_groups import SlowSuiteGroups

# The lab listens on the loopback, where cluster servers are refused unless allowed
# (kernel/netguard.py): the suite allows exactly that, here and in the processes it starts.
LAB_NETWORKS = "127.0.0.0/8"
os.environ.setdefault("CLUSTER_ALLOWED_NETWORKS", LAB_NETWORKS)

# The suite's own keys, generated per session (pytest-django runs tests with DEBUG off, where
# nothing is derived from the built-in SECRET_KEY): for this process and those it starts.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("FIELD_ENCRYPTION_KEY", Fernet.generate_key().decode())
os.environ.setdefault("AUDIT_CHAIN_KEY", secrets.token_hex(32))
dj_settings.SECRET_KEY = os.environ["SECRET_KEY"]
dj_settings.FIELD_ENCRYPTION_KEY = os.environ["FIELD_ENCRYPTION_KEY"]
dj_settings.AUDIT_CHAIN_KEY = os.environ["AUDIT_CHAIN_KEY"]


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(SlowSuiteGroups(), "slow-suite-groups")


# Opt-in suites: collected only when the `-m` expression names their marker (`make guest-proxy`
# runs `-m guestproxy`), so `make test` and CI's `-m 'not realcluster'` leave them out.
OPT_IN_MARKERS = ("guestproxy",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    expression = config.getoption("markexpr") or ""
    left_out = [m for m in OPT_IN_MARKERS if not re.search(rf"\b{m}\b", expression)]
    if not left_out:
        return
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        opt_in = any(item.get_closest_marker(m) for m in left_out)
        (deselected if opt_in else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(autouse=True)
def lab_networks_allowed(settings):
    settings.CLUSTER_ALLOWED_NETWORKS = LAB_NETWORKS


@pytest.fixture(autouse=True)
def own_redis_prefix(settings, monkeypatch):
    """One Redis key prefix per test, for this process and the workers it starts: test runs
    share Redis with each other (and cluster ids repeat after flushes), leases must not meet."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    settings.REDIS_PREFIX = prefix
    monkeypatch.setenv("REDIS_PREFIX", prefix)


@pytest.fixture(autouse=True)
def fresh_cache_namespace(settings):
    """Each test counts rate limits in a cache namespace of its own (Redis outlives tests; never
    cache.clear() there: the cache shares its Redis database with the broker)."""
    prefix = f"test-{uuid.uuid4().hex}"
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = prefix
    settings.CACHES = caches
    # Many log-ins per test: the default PBKDF2 would cost a third of a second each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No refresh tasks sent to a shared broker nobody consumes in tests; readers recompute.
    settings.READINESS_REFRESH_ON_COMMIT = False
    # Tests change evidence from other processes too (workers) and read at once: look every
    # request (the one-second window of production is tested in tests/domain/test_publication.py).
    settings.READINESS_RECHECK_SECONDS = 0
    redis_cache = (
        caches["default"]["BACKEND"].endswith("RedisCache") and caches["default"]["LOCATION"]
    )
    yield
    if redis_cache:
        forget_keys(redis_cache, prefix)
    forget_keys(settings.REDIS_URL, settings.REDIS_PREFIX)  # leases a killed worker left


def forget_keys(url: str, prefix: str) -> None:
    """Deletes what the test (and the workers it started) left under its prefix: nothing stays."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=0.2, socket_timeout=0.5)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    except redis.RedisError:
        pass  # Redis is not there (or a test stopped it): then nothing was left in it either


@pytest.fixture(autouse=True)
def api_answers_match_the_schema(monkeypatch):
    """Every answer of /api/v1/ a test gets through Django's test client is validated against
    the schema generated from the code (tests/apischema.py): the operation, the status and the
    body. A test that expects a refusal still gets a schema-conforming refusal."""
    from tests import apischema

    original = Client.request

    def request(self, **kwargs):
        response = original(self, **kwargs)
        apischema.check_response(response)
        return response

    monkeypatch.setattr(Client, "request", request)


@pytest.fixture(autouse=True)
def seeded_catalog_after_flush(request):
    """A transactional test flushes the database when it ends, the seed migration's rows
    included: it seeds them again when it starts, and so does a test in a transaction that runs
    after one on the same xdist worker (inside its transaction: rolled back with it)."""
    marker = request.node.get_closest_marker("django_db")
    transactional = marker is not None and (
        marker.kwargs.get("transaction") or (marker.args and marker.args[0])
    )
    uses_db = True
    if transactional or "live_server" in request.fixturenames:
        request.getfixturevalue("transactional_db")
        seed(CatalogTest, Plugin)
    elif marker is not None or "db" in request.fixturenames:
        request.getfixturevalue("db")
        if not CatalogTest.objects.exists():
            seed(CatalogTest, Plugin)
    else:
        uses_db = False
    yield
    # Whatever the test did to runs and submissions, the evidence heads (the pre-aggregated
    # rows an evaluation reads) still say what the history says: every code path that changes
    # evidence keeps them up to date (dashboard/domain/heads.py).
    if uses_db and not request.node.get_closest_marker("heads_unchecked"):
        try:
            found = heads.stale()
        except DatabaseError as exc:  # the test closed its connection (a command's exit)
            if "closed" not in str(exc):
                raise
            found = []
        assert found == [], "evidence heads out of date after this test"


@pytest.fixture
def maintainer(db):
    user = get_user_model().objects.create_user("maria", password="maria-password")
    user.groups.add(maintainers_group())
    return user


@pytest.fixture
def vendor_user(db):
    user = get_user_model().objects.create_user("victor", password="victor-password")
    v = factories.vendor("Calico vendor", ("calico",))
    v.members.add(user)
    return user


@pytest.fixture
def other_vendor_user(db):
    user = get_user_model().objects.create_user("olga", password="olga-password")
    v = factories.vendor("Cilium vendor", ("cilium",))
    v.members.add(user)
    return user


@pytest.fixture
def vendor_token(db) -> str:
    _, token = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Calico vendor", ("calico",))
    )
    return token


@pytest.fixture
def other_vendor_token(db) -> str:
    _, token = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=factories.vendor("Cilium vendor", ("cilium",))
    )
    return token


@pytest.fixture
def maintainer_token(maintainer) -> str:
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    return token


@pytest.fixture
def api(db) -> Client:
    return Client()


@pytest.fixture
def memory_cache(settings):
    """A process-local cache for tests that count queries: with the embedded mode's database
    cache every cache read is a query too, with Redis none; a count must not depend on that."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"test-{uuid.uuid4().hex}",
        }
    }


def auth(token: str) -> dict[str, Any]:  # Any: spread into Client.get/post(**extra)
    return {"HTTP_AUTHORIZATION": f"Token {token}"}


@pytest.fixture
def inside_one_window():
    """The limits count in fixed windows: start well inside one, so no test straddles two.
    100 s past the start of the current hour (40 s into a minute), near the real time: the
    certificates made here are checked by OpenSSL against the real clock (a fixed date
    expired them a day later)."""
    now = time.time()
    with time_machine.travel(now - now % 3600 + 100, tick=True):
        yield
