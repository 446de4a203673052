"""Each test counts its rate limits in a cache namespace of its own (Redis outlives tests)."""

from __future__ import annotations

import copy
import uuid

import pytest


@pytest.fixture(autouse=True)
def fresh_cache_namespace(settings):  # type: ignore[no-untyped-def]
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    # Dozens of log-ins per test: the default PBKDF2 would cost a third of a second each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield
