"""Headless Debian Chromium through Playwright against pytest-django's live_server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.need import unavailable

# Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make between
# browser steps are plain synchronous code, so Django's async guard must stand aside.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent.parent / "var" / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not CHROMIUM.exists():
        unavailable(
            f"no Chromium at {CHROMIUM}: apt-get install -y --no-install-recommends chromium"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
    try:
        yield b
    finally:
        b.close()
        pw.stop()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
    context.set_default_timeout(10_000)
    p = context.new_page()
    try:
        yield p
    finally:
        context.close()


@pytest.fixture
def shot() -> Callable[[object, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def log_in(page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_selector(f"text={username}")
