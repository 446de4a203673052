"""The maintainers' schedule pages: who may see them, forms with CSRF, redirect after POST."""

from __future__ import annotations

import pytest
from django.test import Client
from django_celery_beat.models import PeriodicTask

from dashboard.domain import schedules as ops
from dashboard.domain.models import NotificationChannel, Schedule
from tests import factories
from tests.conftest import auth

pytestmark = pytest.mark.django_db

PAGES = [
    "/schedules/",
    "/schedules/new/",
    "/schedules/channels/",
    "/clusters/calico-a/schedules/",
    "/clusters/calico-a/schedules/new/",
]


@pytest.fixture
def cluster():
    return factories.cluster("calico-a")


@pytest.fixture
def as_maintainer(maintainer) -> Client:
    client = Client()
    client.force_login(maintainer)
    return client


@pytest.mark.parametrize("path", PAGES)
def test_anonymous_visitors_are_sent_to_the_login(cluster, path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", PAGES)
def test_vendors_are_refused(cluster, vendor_user, path: str) -> None:
    client = Client()
    client.force_login(vendor_user)
    assert client.get(path).status_code == 403


def test_a_vendor_cannot_pause_or_delete_a_schedule(cluster, vendor_user) -> None:
    s = ops.create_schedule(cluster, battery="basic", interval_minutes=60, grace_minutes=10)
    client = Client()
    client.force_login(vendor_user)
    assert client.post(f"/schedules/{s.pk}/pause/").status_code == 403
    assert client.post(f"/schedules/{s.pk}/delete/").status_code == 403
    assert Schedule.objects.get(pk=s.pk).enabled


def test_a_maintainer_token_does_not_open_the_pages(cluster, maintainer_token) -> None:
    response = Client().get("/schedules/", **auth(maintainer_token))
    assert response.status_code == 302


def test_a_maintainer_creates_edits_pauses_resumes_and_deletes_a_schedule(
    cluster, as_maintainer
) -> None:
    response = as_maintainer.post(
        "/clusters/calico-a/schedules/new/",
        {"battery": "basic", "interval_minutes": "30", "grace_minutes": "5"},
    )
    assert response.status_code == 302 and response["Location"] == "/clusters/calico-a/schedules/"
    s = Schedule.objects.get()
    assert (s.cluster, s.battery, s.interval_minutes, s.grace_minutes) == (cluster, "basic", 30, 5)
    page = as_maintainer.get("/schedules/")
    assert page.status_code == 200
    assert f'data-schedule="{s.pk}" data-state="new"' in page.content.decode()

    response = as_maintainer.post(
        f"/schedules/{s.pk}/edit/",
        {"battery": "all", "interval_minutes": "90", "grace_minutes": "15"},
    )
    assert response.status_code == 302
    s.refresh_from_db()
    assert (s.battery, s.interval_minutes) == ("all", 90)
    assert PeriodicTask.objects.get(pk=s.periodic_task_id).interval.every == 90

    assert (
        as_maintainer.post(f"/schedules/{s.pk}/pause/", {"next": "/clusters/calico-a/schedules/"})[
            "Location"
        ]
        == "/clusters/calico-a/schedules/"
    )
    assert not PeriodicTask.objects.get(pk=s.periodic_task_id).enabled
    assert (
        as_maintainer.post(f"/schedules/{s.pk}/resume/", {"next": "https://evil.example/"})[
            "Location"
        ]
        == "/schedules/"
    )
    assert PeriodicTask.objects.get(pk=s.periodic_task_id).enabled

    assert as_maintainer.get(f"/schedules/{s.pk}/delete/").status_code == 200
    assert as_maintainer.post(f"/schedules/{s.pk}/delete/").status_code == 302
    assert (
        not Schedule.objects.exists()
        and not PeriodicTask.objects.filter(task="workers.tasks.run_schedule").exists()
    )


def test_a_bad_schedule_form_is_shown_again_with_its_errors(cluster, as_maintainer) -> None:
    response = as_maintainer.post(
        "/schedules/new/",
        {"cluster": "calico-a", "battery": "basic", "interval_minutes": "1", "grace_minutes": "5"},
    )
    assert response.status_code == 400
    assert "greater than or equal to 5" in response.content.decode()
    assert not Schedule.objects.exists()


def test_pause_answers_only_post(cluster, as_maintainer) -> None:
    s = ops.create_schedule(cluster, battery="basic", interval_minutes=60, grace_minutes=10)
    assert as_maintainer.get(f"/schedules/{s.pk}/pause/").status_code == 405


def test_the_forms_enforce_csrf(cluster, maintainer) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(maintainer)
    data = {"battery": "basic", "interval_minutes": "30", "grace_minutes": "5"}
    assert client.post("/clusters/calico-a/schedules/new/", data).status_code == 403
    assert not Schedule.objects.exists()
    page = client.get("/clusters/calico-a/schedules/new/")
    token = page.context["csrf_token"]
    assert (
        client.post(
            "/clusters/calico-a/schedules/new/", {**data, "csrfmiddlewaretoken": str(token)}
        ).status_code
        == 302
    )
    assert Schedule.objects.count() == 1


def test_the_login_form_enforces_csrf(maintainer) -> None:
    client = Client(enforce_csrf_checks=True)
    assert (
        client.post("/login/", {"username": "maria", "password": "maria-password"}).status_code
        == 403
    )


def test_a_maintainer_adds_toggles_and_deletes_a_notification_channel(as_maintainer) -> None:
    bad = as_maintainer.post(
        "/schedules/channels/", {"kind": "webhook", "target": "file:///etc/passwd"}
    )
    assert bad.status_code == 400 and not NotificationChannel.objects.exists()
    assert (
        as_maintainer.post(
            "/schedules/channels/", {"kind": "webhook", "target": "https://hooks.example/x"}
        ).status_code
        == 302
    )
    channel = NotificationChannel.objects.get()
    as_maintainer.post(f"/schedules/channels/{channel.pk}/toggle/")
    channel.refresh_from_db()
    assert not channel.enabled
    assert as_maintainer.get("/schedules/channels/").status_code == 200
    as_maintainer.post(f"/schedules/channels/{channel.pk}/delete/")
    assert not NotificationChannel.objects.exists()
