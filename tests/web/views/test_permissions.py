"""Each role against each page action: allowed, 403, or a redirect to log in. Checked on the server."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dashboard.domain.models import Run, SignOff, Submission
from tests import factories

pytestmark = pytest.mark.django_db

LOGIN = "login"
ROLES = ["anonymous", "vendor", "other_vendor", "maintainer", "admin"]

# action -> (method, url template, expected per role in ROLES order)
ACTIONS: dict[str, tuple[str, str, list[int | str]]] = {
    "browse readiness": ("get", "/", [200, 200, 200, 200, 200]),
    "browse matrix": ("get", "/matrix/", [200, 200, 200, 200, 200]),
    "browse a cluster": ("get", "/clusters/calico-a/", [200, 200, 200, 200, 200]),
    "browse a submission": ("get", "/submissions/{sub}/", [200, 200, 200, 200, 200]),
    "open the upload form": ("get", "/submissions/new/", [LOGIN, 200, 200, 403, 403]),
    "upload results": ("post", "/submissions/new/", [LOGIN, 400, 403, 403, 403]),
    "run now": ("post", "/clusters/calico-a/run/", [LOGIN, 302, 403, 302, 302]),
    "download a submission": ("get", "/submissions/{sub}/download/", [LOGIN, 403, 403, 200, 200]),
    "verify a submission": ("post", "/submissions/{sub}/review/", [LOGIN, 403, 403, 302, 302]),
    "open review": ("get", "/review/", [LOGIN, 403, 403, 200, 200]),
    "export the report": ("get", "/review/report.md", [LOGIN, 403, 403, 200, 200]),
    "sign off": ("post", "/review/signoff/", [LOGIN, 403, 403, 302, 302]),
}

CASES = [
    (action, role, expected[i])
    for action, (_m, _u, expected) in ACTIONS.items()
    for i, role in enumerate(ROLES)
]


@pytest.fixture
def users(vendor_user, other_vendor_user, maintainer):
    admin = get_user_model().objects.create_superuser("root", password="root-password")
    return {
        "anonymous": None,
        "vendor": vendor_user,
        "other_vendor": other_vendor_user,
        "maintainer": maintainer,
        "admin": admin,
    }


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr("dashboard.domain.runs.dispatch", lambda run_id: True)


@pytest.mark.parametrize(
    ("action", "role", "expected"), CASES, ids=[f"{a} as {r}" for a, r, _ in CASES]
)
def test_each_role_gets_what_it_may(action: str, role: str, expected: object, users) -> None:
    factories.cluster("calico-a", owner=factories.vendor("Calico vendor", ("calico",)))
    sub = factories.submission("calico", status="pending_review")
    client = Client()
    if users[role] is not None:
        client.force_login(users[role])
    method, url, _ = ACTIONS[action]
    data = {
        "action": "verify",
        "battery": "basic",
        "from_stage": "alpha",
        "to_stage": "beta",
        "comment": "ok",
        "plugin": "calico",
        "plugin_version": "1",
        "kubernetes_version": "1.30.0",
        "proxier": "iptables",
    }
    response = getattr(client, method)(url.format(sub=sub.id), data if method == "post" else None)
    if expected == LOGIN:
        assert response.status_code == 302 and response["Location"].startswith("/login/?next=")
    else:
        assert response.status_code == expected, response.content[:500]
    # A refused action changed nothing.
    if response.status_code != 302 or expected == LOGIN:
        assert not Run.objects.exists() and not SignOff.objects.exists()
        assert Submission.objects.get(pk=sub.pk).status == "pending_review"


def test_forms_without_a_csrf_token_are_refused(maintainer) -> None:
    sub = factories.submission("calico", status="pending_review")
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    assert client.post(f"/submissions/{sub.id}/review/", {"action": "verify"}).status_code == 403
    assert (
        client.post(
            "/review/signoff/", {"from_stage": "alpha", "to_stage": "beta", "comment": "x"}
        ).status_code
        == 403
    )
    assert (
        Submission.objects.get(pk=sub.pk).status == "pending_review"
        and not SignOff.objects.exists()
    )


def test_every_form_on_the_pages_carries_a_csrf_token(client: Client, maintainer) -> None:
    sub = factories.submission("calico", status="pending_review")
    factories.cluster("calico-a")
    client.force_login(maintainer)
    for url in ("/review/", f"/submissions/{sub.id}/", "/clusters/calico-a/"):
        body = client.get(url).content.decode()
        assert body.count('method="post"') == body.count('name="csrfmiddlewaretoken"') > 0, url


def test_every_refusal_is_the_styled_page_and_logs_no_traceback(
    client: Client, vendor_user, caplog
) -> None:
    client.force_login(vendor_user)
    for url in ("/schedules/", "/review/", "/audit/", "/schedules/channels/"):
        response = client.get(url)
        assert (
            response.status_code == 403
            and b'class="error-page" data-status="403"' in response.content
        ), url
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(vendor_user)
    response = csrf.post("/submissions/new/", {})
    assert response.status_code == 403 and b'data-status="403"' in response.content
    assert not [r for r in caplog.records if r.exc_info], "a refusal logged a traceback"


def test_a_raised_permission_denied_is_styled_and_logged_without_traceback(rf) -> None:
    import logging

    from django.core.exceptions import PermissionDenied

    from dashboard.logfilters import RefusalWithoutTraceback

    try:
        raise PermissionDenied("no")
    except PermissionDenied:
        import sys

        record = logging.LogRecord(
            "django.request", logging.WARNING, __file__, 1, "Forbidden: /x/", (), sys.exc_info()
        )
    assert RefusalWithoutTraceback().filter(record) and record.exc_info is None
    body = Client().get("/no/such/page/")
    assert body.status_code == 404 and b'data-status="404"' in body.content


def test_a_raised_permission_denied_renders_the_styled_page(rf) -> None:
    from django.contrib.auth.models import AnonymousUser
    from django.core.exceptions import PermissionDenied
    from django.views.defaults import permission_denied

    request = rf.get("/somewhere/")
    request.user = AnonymousUser()
    response = permission_denied(request, PermissionDenied("Only maintainers may look here."))
    assert response.status_code == 403
    assert (
        b'data-status="403"' in response.content
        and b"Only maintainers may look here." in response.content
    )
