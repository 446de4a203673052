"""`make screenshots`: the README's pictures, taken from the demo so they stay true.

Uses a demo already serving at SCREENSHOT_URL (default http://127.0.0.1:8000); when nothing
answers there it starts one (`manage.py demo` on DEMO_ADDR / LAB_PORT), waits until a run has
finished, and stops it afterwards. Writes docs/screenshots/{readiness,matrix,run}.png at
1280x800 with Chromium (/usr/bin/chromium, as the browser tests use it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
sys.path.insert(0, str(ROOT))
# The browser tests' Chromium and its flags (one place: tests/chromium.py).
from tests.chromium import ARGS, CHROMIUM  # noqa: E402

WAIT_SECONDS = int(os.environ.get("SCREENSHOT_WAIT_SECONDS", "600"))


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:  # a local demo
            return bytes(r.read())
    except OSError:
        return None


def _finished_run(base: str) -> int | None:
    body = _get(f"{base}/api/v1/clusters/")
    for c in json.loads(body or b"[]"):
        last = c.get("last_run") or {}
        if last.get("state") == "finished":
            return int(last["id"])
    return None


def main() -> int:
    base = os.environ.get("SCREENSHOT_URL", "http://127.0.0.1:8000").rstrip("/")
    demo = None
    if _get(f"{base}/healthz") is None:
        addr = base.split("://", 1)[1]
        print(f"no demo at {base}: starting one (manage.py demo on {addr})", flush=True)
        env = dict(os.environ, DEMO_ADDR=addr)
        demo = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "demo"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        run_id = None
        while time.monotonic() < deadline:
            run_id = _finished_run(base)
            if run_id is not None:
                break
            if demo is not None and demo.poll() is not None:
                print("the demo stopped before a run finished", file=sys.stderr)
                return 1
            time.sleep(3)
        if run_id is None:
            print(f"no finished run after {WAIT_SECONDS} s", file=sys.stderr)
            return 1
        from playwright.sync_api import sync_playwright

        OUT.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 800}, base_url=base)
            for name, url in (
                ("readiness", "/"),
                ("matrix", "/matrix/"),
                ("run", f"/runs/{run_id}/"),
            ):
                page.goto(url)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(OUT / f"{name}.png"))
                print(f"docs/screenshots/{name}.png <- {base}{url}", flush=True)
            browser.close()
        return 0
    finally:
        if demo is not None:
            os.killpg(demo.pid, signal.SIGTERM)
            try:
                demo.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(demo.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
