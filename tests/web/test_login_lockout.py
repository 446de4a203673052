"""Log-in hardening (issue 12, finding 5): one lockout for /login/ and /admin/login/, per user
and per address; Django's password validators on every form that sets a password."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("inside_one_window")]


@pytest.fixture
def boss(db):
    return get_user_model().objects.create_superuser(
        "boss", "boss@example.invalid", "boss-right-password"
    )


def post(
    path: str, username: str, password: str, ip: str = "10.2.2.2", client: Client | None = None
):
    client = client or Client()
    return client, client.post(
        path, {"username": username, "password": password, "next": "/admin/"}, REMOTE_ADDR=ip
    )


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_a_lockout_earned_on_login_holds_on_the_admin_login(boss) -> None:
    for _ in range(10):
        assert post("/login/", "boss", "wrong")[1].status_code == 200
    client, resp = post("/admin/login/", "boss", "boss-right-password")
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    assert "Too many failed log-ins" in resp.content.decode()
    assert not logged_in(client)


def test_a_lockout_earned_on_the_admin_login_holds_on_login(boss) -> None:
    for _ in range(15):
        post("/admin/login/", "boss", "wrong")
    client, resp = post("/login/", "boss", "boss-right-password")
    assert resp.status_code == 429 and not logged_in(client)
    client, resp = post("/admin/login/", "boss", "boss-right-password")
    assert resp.status_code == 429 and not logged_in(client)


def test_one_address_is_locked_out_across_user_names(settings, boss) -> None:
    settings.LOGIN_RATE_LIMIT_IP = "20/900"
    for i in range(20):  # password spraying: one guess per user name
        post("/login/", f"user{i}", "Winter2026!", ip="10.3.3.3")
    client, resp = post("/login/", "boss", "boss-right-password", ip="10.3.3.3")
    assert resp.status_code == 429 and not logged_in(client)
    client, resp = post("/admin/login/", "boss", "boss-right-password", ip="10.3.3.3")
    assert resp.status_code == 429 and not logged_in(client)
    client, resp = post("/login/", "boss", "boss-right-password", ip="10.3.3.4")  # another address
    assert resp.status_code == 302 and logged_in(client)


def test_one_user_is_locked_out_across_addresses(settings, boss) -> None:
    settings.LOGIN_RATE_LIMIT_USER = "6/900"
    for i in range(6):  # a botnet: every guess from another address
        post("/admin/login/" if i % 2 else "/login/", "boss", f"guess-{i}", ip=f"10.4.4.{i}")
    client, resp = post("/login/", "boss", "boss-right-password", ip="10.4.4.200")
    assert resp.status_code == 429 and not logged_in(client)


def test_a_locked_out_password_is_never_checked(boss, monkeypatch) -> None:
    for _ in range(10):
        post("/login/", "boss", "wrong")
    checked = []
    original = get_user_model().check_password

    def checking(self: Any, raw: str) -> bool:
        checked.append(raw)
        return original(self, raw)

    monkeypatch.setattr(get_user_model(), "check_password", checking)
    post("/admin/login/", "boss", "boss-right-password")
    post("/login/", "boss", "boss-right-password")
    assert checked == []


@pytest.mark.parametrize("weak", ["password", "12345678", "87654321", "iloveyou"])
def test_weak_passwords_are_refused_when_a_maintainer_creates_a_user(boss, weak) -> None:
    client = Client()
    client.force_login(boss)
    resp = client.post(
        "/admin/auth/user/add/",
        {"username": "newbie", "password1": weak, "password2": weak, "usable_password": "true"},
    )
    assert resp.status_code == 200  # the form again, with the validator's message
    assert (
        "This password is too common" in resp.content.decode()
        or "entirely numeric" in resp.content.decode()
        or "too similar" in resp.content.decode()
    )
    assert not get_user_model().objects.filter(username="newbie").exists()


def test_weak_passwords_are_refused_on_the_password_change_page(boss) -> None:
    client = Client()
    client.force_login(boss)
    resp = client.post(
        "/admin/password_change/",
        {
            "old_password": "boss-right-password",
            "new_password1": "password",
            "new_password2": "password",
        },
    )
    assert resp.status_code == 200 and "too common" in resp.content.decode()
    boss.refresh_from_db()
    assert boss.check_password("boss-right-password")


def test_the_demo_accounts_are_created_by_code_and_still_log_in() -> None:
    from dashboard.domain.management.commands.demo import DEMO_USERS, Command

    Command().ensure_users()
    username, password = DEMO_USERS[0][0], DEMO_USERS[0][1]
    client, resp = post("/login/", username, password)
    assert resp.status_code == 302 and logged_in(client)
