"""Issue 22, finding 2: a token is only as good as its holder. A removed maintainer's token stops
verifying, rejecting and approving at once; deactivation revokes the tokens, audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from dashboard.domain.models import ApiToken, AuditEvent, Submission
from dashboard.domain.roles import MAINTAINERS_GROUP, maintainers_group
from tests import factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db


def _calls(client: Client, token: str) -> list[int]:
    pending = [factories.submission("calico", status=Submission.Status.PENDING) for _ in range(2)]
    cluster = factories.cluster(approved=False)
    return [
        client.post(f"/api/v1/submissions/{pending[0].id}/verify", **auth(token)).status_code,
        client.post(
            f"/api/v1/submissions/{pending[1].id}/reject",
            {"reason": "not ours"},
            content_type="application/json",
            **auth(token),
        ).status_code,
        client.post(f"/api/v1/clusters/{cluster.name}/approve", **auth(token)).status_code,
    ]


def test_a_maintainer_taken_out_of_the_group_loses_the_token_at_once(maintainer, api) -> None:
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    maintainer.groups.remove(maintainers_group())
    codes = _calls(api, token)
    assert all(code in (401, 403) for code in codes), codes
    assert not Submission.objects.filter(status=Submission.Status.VERIFIED).exists()
    revoked = AuditEvent.objects.get(action="token.revoke")
    assert "removed from the maintainers" in revoked.detail["reason"]
    assert ApiToken.objects.get(user=maintainer).revoked


def test_a_deactivated_user_loses_every_token_and_the_revocation_is_audited(
    maintainer, api
) -> None:
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    _, second = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    maintainer.is_active = False
    maintainer.save()
    for t in (token, second):
        assert all(code == 401 for code in _calls(api, t))
    entries = AuditEvent.objects.filter(action="token.revoke")
    assert entries.count() == 2
    assert all(e.actor and "deactivated" in e.detail["reason"] for e in entries)


def test_a_change_that_bypasses_the_signals_still_locks_the_token_out(maintainer, api) -> None:
    """A raw UPDATE (a script, the database shell) revokes nothing; the per-request check holds."""
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    get_user_model().objects.filter(pk=maintainer.pk).update(is_active=False)
    assert all(code == 401 for code in _calls(api, token))
    get_user_model().objects.filter(pk=maintainer.pk).update(is_active=True)
    Group.objects.get(name=MAINTAINERS_GROUP).user_set.through.objects.filter(
        user_id=maintainer.pk
    ).delete()
    assert all(code == 401 for code in _calls(api, token))


def test_emptying_the_group_from_its_side_revokes_too(maintainer, api) -> None:
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    maintainers_group().user_set.clear()
    assert ApiToken.objects.get(user=maintainer).revoked
    assert all(code == 401 for code in _calls(api, token))


def test_a_maintainer_still_in_the_group_keeps_working(maintainer, api) -> None:
    _, token = ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)
    maintainer.groups.remove(Group.objects.create(name="unrelated"))
    assert _calls(api, token) == [200, 200, 200]
    assert not AuditEvent.objects.filter(action="token.revoke").exists()


def test_a_vendor_token_of_a_removed_member_stops(vendor_user, api) -> None:
    vendor = vendor_user.vendors.get()
    _, token = ApiToken.issue(role=ApiToken.Role.VENDOR, vendor=vendor, user=vendor_user)
    assert api.get("/api/v1/catalog/").status_code == 200
    cluster = factories.cluster("owned", owner=vendor)
    url = f"/api/v1/clusters/{cluster.name}/runs/"
    vendor.members.remove(vendor_user)
    response = api.post(url, {"battery": "basic"}, content_type="application/json", **auth(token))
    assert response.status_code == 401
