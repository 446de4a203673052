"""Every page as each role, at 1280 and 390 px, in Chromium: nothing wider than the screen, no
Python reprs, no text under 12 px, every text at 4.5:1 contrast and the landmarks in place,
refusals and unknown pages on the styled error page. And a crawl: every same-origin link, as
each role, answers 2xx or an intended redirect (a visitor sent to log in).

Screenshots go to var/screenshots/<role>-<page>-<width>.png for a person to look at.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.utils.timezone import now

from dashboard.domain.catalog import Outcome
from dashboard.domain.models import AuditEvent, NotificationChannel, Run, SignOff, Submission
from dashboard.domain.roles import maintainers_group
from tests import factories
from tests.chromium import WAIT_MS, accessibility_problems

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]

WIDTHS = (1280, 390)
# What the battery really records (a lab `all` run), so the page renders the real shapes.
FINGERPRINT = {
    "proxier_declared": "iptables",
    "proxier_detected": "iptables",
    "node_access": True,
    "load_balancer": None,
    "feature_gate": "on",
    "emulated": True,
    "cni_detected": "calico",
    "sctp_module_before": {
        "calico-iptables-worker": False,
        "calico-iptables-worker2": False,
        "calico-iptables-control-plane": False,
    },
    "sctp_module_after": {
        "calico-iptables-worker": True,
        "calico-iptables-worker2": True,
        "calico-iptables-control-plane": False,
    },
    "worker_sctp": {
        "available": False,
        "pysctp_version": "0.7.3",
        "reason": "kernel has no SCTP: socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP) failed: "
        "[Errno 93] Protocol not supported",
    },
    "kubernetes_version": "1.31.2",
    "node_count": 3,
    "node_names": [
        "calico-iptables-control-plane",
        "calico-iptables-worker",
        "calico-iptables-worker2",
    ],
    "battery_nodes": [
        "calico-iptables-worker",
        "calico-iptables-worker2",
        "calico-iptables-control-plane",
    ],
}

# Found in rendered text, each is a Python value leaking into a page.
REPRS = re.compile(r"\{'|\['|\[True|\[False|: True[,}]|: False[,}]|\bNone\}|<built-in|object at 0x")

MEASURE = """() => {
  const tooSmall = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim()) continue;
    const el = node.parentElement;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width === 0 || box.height === 0 || style.visibility === "hidden" || style.display === "none") continue;
    if (style.clip === "rect(0px, 0px, 0px, 0px)" || el.closest("thead[style], .visually-hidden")) continue;
    const size = parseFloat(style.fontSize);
    if (size < 11.95) tooSmall.push(`${size}px: ${node.textContent.trim().slice(0, 40)}`);
  }
  const wide = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 1 && !el.closest(".table-wrap")) wide.push(`${el.tagName}.${el.className}`);
  }
  return {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth,
          tooSmall: tooSmall.slice(0, 8), wide: wide.slice(0, 5), text: document.body.innerText,
          styled: !!document.querySelector("header.top") && getComputedStyle(document.body).margin === "0px"};
}"""


def _seed() -> dict[str, object]:
    User = get_user_model()
    maintainer = User.objects.create_user("maria", password="maria-password")
    maintainer.groups.add(maintainers_group())
    calico = factories.vendor("Calico vendor", ("calico",))
    vendor = User.objects.create_user("victor", password="victor-password")
    calico.members.add(vendor)
    ipt = factories.cluster("calico-iptables", owner=calico, lab=True, emulated=True)
    ipvs = factories.cluster("cilium-ipvs", plugin_slug="cilium", proxier="ipvs", approved=True)
    old = factories.cluster("legacy-1-18", plugin_slug="calico", kubernetes_version="1.18.20")
    lonely = factories.cluster("flannel-once", plugin_slug="flannel")
    schedule = factories.schedule(ipt, interval_minutes=5)
    for i in range(8):
        outcomes = dict(factories.PASSING, **{"hostport-kubenet": Outcome.SKIPPED})
        if i == 3:
            outcomes["pod-to-pod"] = Outcome.FAILED
        r = factories.run(
            ipt,
            outcomes,
            days_ago=2 - i * 0.2,
            battery=("all", "basic")[i % 2],
            trigger=Run.Trigger.PERIODIC if i % 2 else Run.Trigger.MANUAL,
            schedule=schedule if i % 2 else None,
        )
        factories.run(ipvs, outcomes, days_ago=2 - i * 0.2)
    Run.objects.filter(pk=r.pk).update(
        fingerprint=FINGERPRINT, emulated=True, proxier_detected="iptables"
    )
    factories.run(old, battery="basic", days_ago=40)
    factories.run(lonely, days_ago=0.1)  # one run: no trend line
    factories.run(ipt, state=Run.State.QUEUED, days_ago=0)
    verified = factories.submission("antrea", days_ago=2, proxier="nftables")
    pending = factories.submission("calico", status=Submission.Status.PENDING, proxier="ipvs")
    Submission.objects.filter(pk=pending.pk).update(vendor=calico)
    rejected = factories.submission(
        "kube-router",
        status=Submission.Status.REJECTED,
        proxier="ipvs",
        outcomes=factories.with_outcome("pod-to-pod", Outcome.FAILED),
    )
    Submission.objects.filter(pk=rejected.pk).update(
        review_reason="the file is from another plugin", reviewed_by=maintainer, reviewed_at=now()
    )
    AuditEvent.record(
        "maria",
        "submission.verify",
        f"submission {verified.id}",
        reason="matches the PR",
        counts={"passed": 7},
    )
    AuditEvent.record(
        "victor", "cluster.register", "cluster calico-iptables", plugin="calico", approved=False
    )
    NotificationChannel.objects.create(
        kind="webhook", target="https://hooks.example.invalid/sctp/a/very/long/path"
    )
    signoff = SignOff.objects.create(
        from_stage="alpha",
        to_stage="beta",
        maintainer=maintainer,
        comment="periodic green",
        kubernetes_release="1.19",
        snapshot={"transitions": [], "stage": "alpha"},
        created=now() - timedelta(days=1),
    )
    return {"run": r.id, "sub": pending.id, "rejected": rejected.id, "signoff": signoff.uuid}


def _pages(ids: dict[str, object]) -> dict[str, list[tuple[str, str, int]]]:
    """role -> [(name, url, expected status)]"""
    public = [
        ("readiness", "/", 200),
        ("matrix", "/matrix/", 200),
        ("clusters", "/clusters/", 200),
        ("cluster", "/clusters/calico-iptables/", 200),
        ("cluster-one-run", "/clusters/flannel-once/", 200),
        ("run", f"/runs/{ids['run']}/", 200),
        ("plugin", "/plugins/calico/", 200),
        ("submissions", "/submissions/", 200),
        ("submission", f"/submissions/{ids['sub']}/", 200),
        ("submission-rejected", f"/submissions/{ids['rejected']}/", 200),
        ("not-found", "/no/such/page/", 404),
    ]
    return {
        "anonymous": [*public, ("login", "/login/", 200)],
        "vendor": [
            *public,
            ("upload", "/submissions/new/", 200),
            ("register", "/clusters/new/", 200),
            ("cluster-edit", "/clusters/calico-iptables/edit/", 200),
            ("login-logged-in", "/login/?next=/review/", 200),
            ("schedules-refused", "/schedules/", 403),
            ("review-refused", "/review/", 403),
            ("audit-refused", "/audit/", 403),
        ],
        "maintainer": [
            *public,
            ("review", "/review/", 200),
            ("schedules", "/schedules/", 200),
            ("channels", "/schedules/channels/", 200),
            ("audit", "/audit/", 200),
            ("signoff", f"/review/signoffs/{ids['signoff']}/", 200),
            ("schedule-new", "/schedules/new/", 200),
            ("report", "/review/report/", 200),
            ("cluster-edit", "/clusters/cilium-ipvs/edit/", 200),
        ],
    }


def test_every_page_fits_the_screen_for_every_role(browser, live_server, shot) -> None:
    ids = _seed()
    logins = {"vendor": ("victor", "victor-password"), "maintainer": ("maria", "maria-password")}
    problems: list[str] = []
    for role, pages in _pages(ids).items():
        context = browser.new_context(
            viewport={"width": WIDTHS[0], "height": 900}, base_url=live_server.url
        )
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        if role in logins:
            page.goto("/login/")
            page.wait_for_selector("#id_username")
            page.fill("#id_username", logins[role][0])
            page.fill("#id_password", logins[role][1])
            page.click("button[type=submit]")
            page.wait_for_selector(f"text={logins[role][0]}")
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 800 if width > 600 else 844})
            for name, url, status in pages:
                response = page.goto(url)
                where = f"{role} {url} @{width}px"
                got = page.evaluate(MEASURE)
                if response.status != status:
                    problems.append(f"{where}: status {response.status}, expected {status}")
                if got["scrollWidth"] > got["innerWidth"]:
                    problems.append(
                        f"{where}: {got['scrollWidth']} px wide in {got['innerWidth']} px ({got['wide']})"
                    )
                if got["tooSmall"]:
                    problems.append(f"{where}: text under 12 px: {got['tooSmall']}")
                if m := REPRS.search(got["text"]):
                    problems.append(
                        f"{where}: a Python repr: …{got['text'][max(0, m.start() - 40) : m.end() + 40]}…"
                    )
                if not got["styled"] or "Traceback" in got["text"] or "URLconf" in got["text"]:
                    problems.append(f"{where}: not the styled page")
                if (
                    status >= 400
                    and not page.locator(f'.error-page[data-status="{status}"]').count()
                ):
                    problems.append(f"{where}: the {status} is not the styled error page")
                problems += [f"{where}: {p}" for p in accessibility_problems(page)]
                shot(page, f"{role}-{name}-{width}")
        context.close()
    assert not problems, "\n".join(problems)


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.hrefs.append(href)


CRAWL_LIMIT = 400  # URLs per role: the seeded world has about 120


def _crawl(request, origin: str, start: list[str]) -> tuple[dict[str, int], list[str]]:
    """Breadth-first over same-origin links; returns {url: status} and the dead ones."""
    seen: dict[str, int] = {}
    dead: list[str] = []
    queue = list(start)
    found_on: dict[str, str] = {}  # where a link was first seen, so a dead one names its page
    while queue and len(seen) < CRAWL_LIMIT:
        url = queue.pop(0)
        if url in seen:
            continue
        response = request.get(url, max_redirects=0)
        seen[url] = response.status
        location = response.headers.get("location", "")
        if 300 <= response.status < 400:
            # The only intended redirect a link may lead to: a visitor sent to log in.
            if not location.startswith("/login/?next="):
                dead.append(f"{url} -> {response.status} {location}")
            continue
        if not 200 <= response.status < 300:
            dead.append(
                f"{url} -> {response.status} (linked from {found_on.get(url, 'the start')})"
            )
            continue
        if not response.headers.get("content-type", "").startswith("text/html"):
            continue
        parser = Links()
        parser.feed(response.text())
        for href in parser.hrefs:
            target = urljoin(origin + url, href)
            parts = urlsplit(target)
            if f"{parts.scheme}://{parts.netloc}" != origin or parts.path.startswith("/admin/"):
                continue
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            found_on.setdefault(path, url)
            if path not in seen and path not in queue:
                queue.append(path)
    return seen, dead


def test_every_link_answers_for_every_role(browser, live_server) -> None:
    ids = _seed()
    logins = {"vendor": ("victor", "victor-password"), "maintainer": ("maria", "maria-password")}
    problems: list[str] = []
    for role, pages in _pages(ids).items():
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        if role in logins:
            page.goto("/login/")
            page.fill("#id_username", logins[role][0])
            page.fill("#id_password", logins[role][1])
            page.click("button[type=submit]")
            page.wait_for_selector(f"text={logins[role][0]}")
        start = [url for _name, url, status in pages if status < 400]
        seen, dead = _crawl(context.request, live_server.url, start)
        problems += [f"{role}: {d}" for d in dead]
        assert len(seen) > len(start), f"{role}: the crawl found no links"
        context.close()
    assert not problems, "\n".join(problems)
