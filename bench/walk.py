"""Issue 39's walk on a running `make demo`: each question of tests/web/views/walk.py asked
from `/` by each role (demo accounts) at 1280×800 and 390×844, printed as one line each
(clicks, seconds from the request of `/` to the answer, whether its top is on the first screen).

    .venv/bin/python bench/walk.py http://127.0.0.1:8000
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from playwright.sync_api import sync_playwright

from tests.chromium import ARGS, CHROMIUM, SIZES, log_in
from tests.web.views.walk import QUESTIONS, ask

ACCOUNTS = {
    "vendor": ("calico-vendor", "calico-demo"),
    "maintainer": ("maintainer", "maintainer-demo"),
}


def main(base: str) -> int:
    missing = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        for role in ("anonymous", "vendor", "maintainer"):
            for size in sorted(SIZES):
                context = browser.new_context(viewport=SIZES[size], base_url=base)  # type: ignore[arg-type]
                context.set_default_timeout(8_000)
                page = context.new_page()
                if role in ACCOUNTS:
                    log_in(page, *ACCOUNTS[role])
                for q in QUESTIONS:
                    if role not in q.roles:
                        continue
                    try:
                        a = ask(page, q, role, size)
                    except Exception as exc:  # playwright's TimeoutError: no such answer here
                        missing += 1
                        print(
                            f"{q.key:20} {role:10} {size:7} no answer ({str(exc).splitlines()[0]})"
                        )
                        continue
                    print(
                        f"{q.key:20} {role:10} {size:7} {a.clicks} clicks {a.seconds:5.2f} s "
                        f"top {a.top or 0:6.0f} px {'first screen' if a.visible else 'BELOW THE FOLD'}"
                    )
                context.close()
        browser.close()
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"))
