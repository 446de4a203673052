"""A bounded schemathesis run: every operation of the generated schema, as each role.

Property-based requests (valid and invalid) go through the real WSGI application; each answer
must not be a 5xx, must have a status the schema documents for that operation, the documented
content type, and a body that matches the schema. Bounded (a few examples per operation and
role, no shrinking) so that it stays well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dashboard.domain.models import ApiToken, Submission
from tests import apischema, factories

schema = schemathesis.openapi.from_dict(apischema.openapi())
schema.app = get_wsgi_application()
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
ROLES = ["anonymous", "vendor", "maintainer"]


@pytest.fixture
def world(db, maintainer):
    """Something to find for ids and names the generator may hit, and a token per role."""
    vendor = factories.vendor("Calico vendor", ("calico",))
    cluster = factories.cluster("calico-a", plugin_slug="calico", owner=vendor)
    factories.run(cluster)
    factories.submission("calico", status=Submission.Status.PENDING)
    return {
        "anonymous": None,
        "vendor": ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=vendor)[1],
        "maintainer": ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)[1],
    }


@pytest.fixture
def in_test_transaction(settings):
    """Raw WSGI calls would close the test's connection at each request end, as a server does;
    Django's own test client turns that off the same way. Limits stay out of the way."""
    settings.API_RATE_LIMIT_TOKEN = settings.API_RATE_LIMIT_IP = "100000/60"
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_the_api_keeps_its_schema_for_every_role(case, role, world, in_test_transaction) -> None:
    headers = {"Authorization": f"Token {world[role]}"} if world[role] else {}
    case.call_and_validate(headers=headers, checks=CHECKS)
