"""KEP-614's own history: the stages SCTP reached upstream, with their releases, dates and PRs.

These are facts from the KEP (kubernetes/enhancements `keps/sig-network/614-SCTP-support/`,
its `kep.yaml` milestones and its Implementation History), not decisions made on this
dashboard: they are never stored as a SignOff nor written to the audit trail, and every page
that shows them says where they come from. A deployment may still record its own sign-offs
(dashboard/domain/signoffs.py); the stage shown is the KEP's unless those say otherwise, and
the two are never mixed (issue 39).

The PR numbers are the ones the KEP and its tracking issue name. The beta graduation has no
KEP PR of its own that we could find: its KEP link is the PR that added the Test Plan and the
Graduation Criteria (enhancements#1250), its code link the PR that turned the feature gate on by
default (kubernetes#88932, named by kubernetes/website#21672).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from dashboard.domain.catalog import Stage

KEP_URL = "https://github.com/kubernetes/enhancements/tree/master/keps/sig-network/614-SCTP-support"
ISSUE_URL = "https://github.com/kubernetes/enhancements/issues/614"
SOURCE = "KEP-614"  # how pages name where a milestone comes from
LABELS = {"alpha": "alpha", "beta": "beta", "stable": "GA"}


@dataclass(frozen=True)
class Link:
    label: str  # "kubernetes/enhancements#2073"
    what: str  # "KEP updated to GA for 1.20"
    url: str
    kep: bool  # a KEP PR (not a code or docs PR)

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "what": self.what, "url": self.url, "kep": self.kep}


def _pr(repo: str, number: int, what: str, *, kep: bool) -> Link:
    return Link(f"{repo}#{number}", what, f"https://github.com/{repo}/pull/{number}", kep)


@dataclass(frozen=True)
class Milestone:
    stage: str
    release: str  # "1.20"
    released: date  # the Kubernetes release's date
    links: tuple[Link, ...]

    @property
    def label(self) -> str:
        return LABELS.get(self.stage, self.stage)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "label": self.label,
            "release": self.release,
            "date": self.released.isoformat(),
            "source": SOURCE,
            "links": [link.to_dict() for link in self.links],
        }


MILESTONES: tuple[Milestone, ...] = (
    Milestone(
        Stage.ALPHA,
        "1.12",
        date(2018, 9, 27),
        (
            _pr("kubernetes/community", 2276, "the initial KEP", kep=True),
            _pr("kubernetes/kubernetes", 64973, "the implementation", kep=False),
        ),
    ),
    Milestone(
        Stage.BETA,
        "1.19",
        date(2020, 8, 26),
        (
            _pr("kubernetes/enhancements", 1250, "Test Plan and Graduation Criteria", kep=True),
            _pr("kubernetes/kubernetes", 88932, "SCTPSupport on by default", kep=False),
        ),
    ),
    Milestone(
        Stage.STABLE,
        "1.20",
        date(2020, 12, 8),
        (
            _pr("kubernetes/enhancements", 2073, "KEP updated to GA for 1.20", kep=True),
            _pr("kubernetes/enhancements", 2107, "KEP marked implemented", kep=True),
            _pr("kubernetes/kubernetes", 95566, "SCTPSupport GA", kep=False),
        ),
    ),
)


def kep_stage() -> str:
    """The stage the KEP reached: the stage shown when this deployment signed off nothing."""
    return MILESTONES[-1].stage


def milestone(stage: str) -> Milestone | None:
    return next((m for m in MILESTONES if m.stage == stage), None)


def as_dicts() -> list[dict[str, Any]]:
    return [m.to_dict() for m in MILESTONES]


def summary() -> str:
    """One line: "alpha in Kubernetes 1.12 (2018-09-27), beta in 1.19 (…), GA in 1.20 (…)"."""
    first, *rest = MILESTONES
    parts = [f"{first.label} in Kubernetes {first.release} ({first.released.isoformat()})"]
    parts += [f"{m.label} in {m.release} ({m.released.isoformat()})" for m in rest]
    return ", ".join(parts)
