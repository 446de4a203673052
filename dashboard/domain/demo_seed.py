"""Two vendor submissions for the demo, made from the lab's own runs (issue: the demo fabricates
no evidence).

A finished `all` run of a lab cluster is exported as an e2e-style JUnit file (the run download,
dashboard.domain.ingest.export), which carries the testsuite property `emulated` = `true`; the plugin's
demo vendor uploads it through the same path as any vendor (with the one exception a vendor
never gets: the dashboard's export of a run is otherwise refused as that run, 409); a
maintainer verifies one and leaves
the other pending. Both are emulated, so neither ever counts: the review page, the matrix's
vendor cells and the KEP report have something to show without any fabricated verdict.
"""

from __future__ import annotations

import io
import logging
import time
from typing import Any

from django.contrib.auth import get_user_model

from dashboard.domain.ingest.export import run_to_junit
from dashboard.domain.models import Run, Submission, Vendor
from dashboard.domain.submissions import SubmissionError, create_submission, review

log = logging.getLogger(__name__)

VERIFY_REASON = "demo: the lab's own run, exported as JUnit (emulated: it never counts)"


def _upload(run: Run, vendor: Vendor) -> Submission | None:
    data = run_to_junit(run)
    try:
        return create_submission(
            vendor=vendor,
            allowed_plugin_ids=set(vendor.plugins.values_list("id", flat=True)),
            plugin=run.plugin.slug,
            plugin_version=run.plugin_version or "0.0.0",
            kubernetes_version=run.kubernetes_version,
            proxier=run.proxier_detected or run.proxier,
            cluster=run.cluster.name,
            fileobj=io.BytesIO(data),
            filename=f"junit_run_{run.id}.xml",
            uploaded_by=f"{vendor.name} (demo)",
            own_export=True,  # the demo's one exception to "an export is its run" (409)
        )
    except SubmissionError as exc:
        log.warning("demo submission from run %s refused: %s", run.id, exc.message)
        return None


def seed_submissions(wait_seconds: float = 240, poll: float = 3) -> list[Submission]:
    """Once per database: waits for finished `all` runs of two vendors' lab clusters, uploads one
    of each as that vendor, verifies the first as the demo maintainer. Returns what it made."""
    if Submission.objects.filter(uploaded_by__endswith="(demo)").exists():
        return []
    deadline = time.monotonic() + wait_seconds
    chosen: dict[int, Run] = {}
    while True:
        for run in (
            Run.objects.filter(
                state=Run.State.FINISHED,
                battery="all",
                cluster__lab=True,
                plugin__vendors__isnull=False,
            )
            .select_related("cluster", "plugin")
            .order_by("finished")
            .distinct()
        ):
            chosen.setdefault(run.plugin_id, run)
        if len(chosen) >= 2 or time.monotonic() >= deadline:
            break
        time.sleep(poll)
    made: list[Submission] = []
    for run in list(chosen.values())[:2]:
        vendor = run.plugin.vendors.order_by("id").first()
        if vendor is not None and (sub := _upload(run, vendor)) is not None:
            made.append(sub)
    maintainer: Any = get_user_model().objects.filter(username="maintainer").first()
    if made and maintainer is not None:
        review(made[0], user=maintainer, verify=True, reason=VERIFY_REASON)
    return made
