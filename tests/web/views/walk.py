"""The maintainers' walk of issue 39: each question a visitor asks, asked from `/` by its role,
as the clicks that answer it and the element that holds the answer. Used by
tests/web/views/test_question_walk_in_chromium.py (on a world of its own) and by
bench/walk.py (on a running `make demo`), which print the same table."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

# A question is answered when its answer element's top is on the first screen (0 ≤ top <
# viewport height) after at most this many clicks from `/`.
MAX_CLICKS = 2


@dataclass(frozen=True)
class Question:
    key: str
    words: str
    roles: tuple[str, ...]
    clicks: tuple[str, ...]  # selectors clicked in turn, from `/`
    answer: str  # the element that answers, on the last page
    says: tuple[str, ...] = field(default=())  # words the answer must hold


@dataclass
class Answer:
    question: str
    role: str
    size: str
    clicks: int
    seconds: float
    top: float | None
    visible: bool
    text: str


def ask(page, q: Question, role: str, size: str) -> Answer:
    """Opens `/`, clicks the question's path and waits for its answer; the time runs from the
    request of `/` to the answer being shown."""
    start = time.perf_counter()
    page.goto("/")
    for sel in q.clicks:
        link = page.locator(sel).first
        link.scroll_into_view_if_needed()
        with page.expect_navigation():
            link.click()
    answer = page.locator(q.answer).first
    answer.wait_for(state="visible")
    seconds = time.perf_counter() - start
    box = answer.bounding_box()
    height = (page.viewport_size or {"height": 0})["height"]
    top = None if box is None else box["y"]
    on_first_screen = top is not None and 0 <= top < height
    return Answer(
        q.key, role, size, len(q.clicks), seconds, top, on_first_screen, answer.inner_text()
    )


NAV = "header nav a[href='{}']"

QUESTIONS = (
    Question(
        "ga-per-proxier",
        "Do the GA criteria still hold on the supported releases, per proxier?",
        ("anonymous", "vendor", "maintainer"),
        (),
        "[data-by-proxier]",
        ("iptables", "nftables", "ipvs", "deprecated"),
    ),
    Question(
        "what-changed",
        "What changed since it last held (plugin, release, proxier, test, run, when)?",
        ("anonymous", "vendor", "maintainer"),
        (),
        "[data-what-changed]",
    ),
    Question(
        "approval-queue",
        "Which clusters wait for approval, and who approves?",
        ("maintainer",),
        (NAV.format("/review/"),),
        "[data-approval-queue]",
    ),
    Question(
        "my-cluster-approved",
        "Is my cluster approved?",
        ("vendor",),
        (NAV.format("/clusters/"),),
        "tr[data-mine] [data-approval]",
    ),
    Question(
        "who-approves-mine",
        "Who approves my cluster?",
        ("vendor",),
        (NAV.format("/clusters/"), "tr[data-mine][data-approved=false] th a"),
        "[data-trust=unapproved]",
        ("maintainer",),
    ),
    Question(
        "why-row",
        "Why does this plugin × proxier row not qualify?",
        ("anonymous", "vendor", "maintainer"),
        ("table.watch-plugins a[data-why-row]",),
        "tr:target [data-row-verdict]",
    ),
    Question(
        "closest-ipvs",
        "Which file is closest to counting for ipvs?",
        ("anonymous", "vendor", "maintainer"),
        (NAV.format("/matrix/"),),
        "li[data-proxier=ipvs]",
    ),
    Question(
        "what-to-run",
        "What must I run to produce a file that counts?",
        ("vendor",),
        (NAV.format("/submissions/"), "a[href='/submissions/new/']"),
        "[data-produce]",
        ("sonobuoy", "hydrophone"),
    ),
)
