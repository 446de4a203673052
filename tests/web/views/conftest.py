"""Fixtures of the page tests: a world of clusters with some history, a logged-in client; and
headless Chromium through Playwright against pytest-django's live_server (the browser tests,
marked `browser`; what they share with bench/screenshots.py is in tests/chromium.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client

from tests import factories
from tests.chromium import ARGS, CHROMIUM, SCREENSHOTS, SIZES, WAIT_MS
from tests.need import unavailable
from tests.web.views.page_data import grow_history, grow_submissions


@pytest.fixture
def world(db, vendor_user):
    """Two clusters with some history, a verified and a pending submission."""
    calico = factories.vendor("Calico vendor", ("calico",))
    ipt = factories.cluster("calico-iptables", owner=calico)
    ipvs = factories.cluster("cilium-ipvs", plugin_slug="cilium", proxier="ipvs")
    grow_history(ipt, 3)
    grow_history(ipvs, 3)
    factories.schedule(ipt)
    grow_submissions(2)
    return {"ipt": ipt, "ipvs": ipvs}


@pytest.fixture
def login(client: Client) -> Callable[..., Client]:
    def as_user(user) -> Client:
        if user is not None:
            client.force_login(user)
        return client

    return as_user


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
    context.set_default_timeout(WAIT_MS)
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
        # A full-page capture under CI's load (two cores beside the kernel guest's TCG boot) took
        # past the page's 10 s default once; the picture is for the README, not a timing check.
        try:
            page.screenshot(path=str(path), full_page=True, timeout=90_000)
        except Exception as exc:  # playwright's Error
            # Chromium refuses a full-page capture past its largest surface ("Unable to capture
            # screenshot"): the visible part is picture enough for the README.
            if "Unable to capture screenshot" not in str(exc):
                raise
            page.screenshot(path=str(path), timeout=90_000)
        return path

    return take


@pytest.fixture(params=sorted(SIZES))
def sized(request, browser, live_server):
    """A page at each of the two sizes: yields (page, name of the size)."""
    context = browser.new_context(viewport=SIZES[request.param], base_url=live_server.url)
    context.set_default_timeout(WAIT_MS)
    p = context.new_page()
    try:
        yield p, request.param
    finally:
        context.close()
