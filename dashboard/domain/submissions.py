"""Accepting, verifying and rejecting vendor submissions: one code path for the API and the pages."""

from __future__ import annotations

import hashlib
import re
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Sum
from django.utils.timezone import now

from dashboard.domain.catalog import Proxier, kubernetes_minor
from dashboard.domain.evidence import summarize
from dashboard.domain.ingest import IngestError, Limits, ingest
from dashboard.domain.ingest.export import run_to_junit
from dashboard.domain.metrics import observe_ingest
from dashboard.domain.models import AuditEvent, Plugin, Run, Submission, Vendor
from dashboard.domain.policy import plugin_facts

VERSION_RE = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+.][0-9A-Za-z.-]+)?$")


@dataclass
class SubmissionError(Exception):
    status: int
    message: str
    extra: dict[str, Any] = field(default_factory=dict)


def _field(value: str | None, name: str, *, required: bool = True, max_len: int = 40) -> str:
    value = (value or "").strip()
    if required and not value:
        raise SubmissionError(400, f"missing field: {name}")
    if len(value) > max_len:
        raise SubmissionError(400, f"field {name} is too long (at most {max_len} characters)")
    return value


def check_quota(vendor: Vendor, size: int) -> None:
    """Refuse an upload past the vendor's quotas (nothing is stored): 429 while too many of its
    submissions wait for review (SUBMISSION_MAX_PENDING), 413 when the upload would take the
    bytes it sent in the last 24 hours past SUBMISSION_MAX_BYTES_PER_DAY. 0 turns a quota off."""
    max_pending = int(getattr(settings, "SUBMISSION_MAX_PENDING", 20))
    if max_pending:
        pending = Submission.objects.filter(vendor=vendor, status=Submission.Status.PENDING).count()
        if pending >= max_pending:
            raise SubmissionError(
                429,
                f"quota reached: {vendor.name} has {pending} submissions pending review, the "
                f"most a vendor may have (SUBMISSION_MAX_PENDING = {max_pending}); send more "
                "once a maintainer has verified or rejected some",
                {"quota": "pending", "limit": max_pending, "pending": pending},
            )
    per_day = int(getattr(settings, "SUBMISSION_MAX_BYTES_PER_DAY", 250 * 1024 * 1024))
    if per_day:
        sent = (
            Submission.objects.filter(vendor=vendor, created__gte=now() - timedelta(days=1))
            .aggregate(total=Sum("size"))
            .get("total")
            or 0
        )
        if sent + size > per_day:
            raise SubmissionError(
                413,
                f"quota reached: {vendor.name} sent {sent} bytes in the last 24 hours and this "
                f"file of {size} bytes would exceed the daily quota of {per_day} bytes "
                "(SUBMISSION_MAX_BYTES_PER_DAY); try again later",
                {"quota": "bytes_per_day", "limit": per_day, "sent": sent},
            )


def _seekable(fileobj: IO[bytes]) -> IO[bytes]:
    """The upload as a seekable stream (Django's uploads are: in memory or a temp file)."""
    seekable = getattr(fileobj, "seekable", None)
    if seekable is not None and seekable():
        fileobj.seek(0)
        return fileobj

    spool = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)
    while chunk := fileobj.read(1024 * 1024):
        spool.write(chunk)
    spool.seek(0)
    return spool


def hash_bounded(fileobj: IO[bytes], limit: int) -> tuple[str, int]:
    """(sha256, size) of the upload read 1 MB at a time; 413 past ``limit``, nothing kept."""
    digest, total = hashlib.sha256(), 0
    while chunk := fileobj.read(1024 * 1024):
        total += len(chunk)
        if total > limit:
            raise SubmissionError(413, f"file is larger than the limit of {limit} bytes")
        digest.update(chunk)
    fileobj.seek(0)
    return digest.hexdigest(), total


def create_submission(
    *,
    vendor: Vendor,
    allowed_plugin_ids: set[int],
    plugin: str | None,
    plugin_version: str | None,
    kubernetes_version: str | None,
    proxier: str | None,
    cluster: str | None,
    fileobj: IO[bytes] | None,
    filename: str,
    uploaded_by: str,
    own_export: bool = False,
) -> Submission:
    """``own_export=True`` only for `make demo`'s seeding (dashboard/domain/demo_seed.py), which
    uploads the lab's own emulated runs on purpose: nowhere else is this dashboard's export of
    a run accepted as a submission (409)."""

    slug = _field(plugin, "plugin", max_len=60)
    plugin_obj = Plugin.objects.filter(slug=slug).first()
    if plugin_obj is None:
        raise SubmissionError(400, f"unknown plugin: {slug!r}")
    if plugin_obj.id not in allowed_plugin_ids:
        raise SubmissionError(403, f"your token may not submit results for plugin {slug!r}")
    plugin_version = _field(plugin_version, "plugin_version")
    kubernetes_version = _field(kubernetes_version, "kubernetes_version")
    if not VERSION_RE.match(kubernetes_version):
        raise SubmissionError(
            400, f"kubernetes_version {kubernetes_version!r} is not a version like 1.31.2"
        )
    proxier = _field(proxier, "proxier")
    if proxier not in Proxier.values:
        raise SubmissionError(
            400, f"unknown proxier {proxier!r}: expected one of {', '.join(Proxier.values)}"
        )
    cluster = _field(cluster, "cluster", required=False, max_len=100)
    if fileobj is None:
        raise SubmissionError(
            400, "missing file: send the result file as the multipart field 'file'"
        )

    # The file is hashed and ingested as a stream (ingest holds no member whole); its bytes
    # are read into memory once, to be stored, only after ingest accepted it.
    limit = settings.SUBMISSION_MAX_BYTES
    stream = _seekable(fileobj)
    sha256, size = hash_bounded(stream, limit)
    if not size:
        raise SubmissionError(400, "the file is empty")
    check_quota(vendor, size)
    first = Submission.objects.filter(sha256=sha256).order_by("pk").first()
    if first is not None:
        raise _duplicate(first, uploaded_by, slug, vendor, "the same file")

    received = now()
    started = time.monotonic()
    try:
        report = ingest(
            stream,
            declared_kubernetes_version=kubernetes_version,
            declared_proxier=proxier,
            declared_plugin=plugin_obj.slug,
            received_at=received,
            limits=Limits(
                max_bytes=limit,
                time_budget_seconds=float(getattr(settings, "SUBMISSION_INGEST_SECONDS", 20)),
            ),
        )
    except IngestError as exc:
        observe_ingest(time.monotonic() - started, size, accepted=False)
        if exc.status == 422 and exc.identity is not None and not own_export:
            _refuse_export(exc.identity, uploaded_by, slug, vendor, sha256)
        raise SubmissionError(exc.status, exc.message, dict(exc.details)) from exc
    observe_ingest(time.monotonic() - started, size, accepted=True)

    # Evidence policy, Once: one e2e run is one item of evidence, whoever sends it.
    if report.content_id:
        first = Submission.objects.filter(content_id=report.content_id).order_by("pk").first()
        if first is not None:
            raise _duplicate(first, uploaded_by, slug, vendor, "the same e2e run")
    if not own_export:
        _refuse_export(report, uploaded_by, slug, vendor, sha256)
    near = list(
        Submission.objects.filter(near_id=report.near_id)
        .exclude(content_id=report.content_id)
        .order_by("pk")
        .values_list("id", flat=True)[:20]
        if report.near_id
        else []
    )

    outcomes = {key: r.outcome for key, r in report.results.items()}
    flags = summarize(outcomes, plugin_obj.implements_network_policy)
    qualifying, why = report.qualifying(plugin_facts(plugin_obj))
    report_dict = report.to_dict()  # without the warnings: they are stored once, below
    report_dict["qualifying"] = {"qualifying": qualifying, "reason": why}
    report_dict["near_duplicates"] = near
    # SQLite takes the bytes as one blob (about their size in memory, once); PostgreSQL gets
    # them in pieces from the stream (see _store_content_pieces).
    pieces = connection.vendor == "postgresql"
    data = b""
    if not pieces:
        stream.seek(0)
        data = stream.read(size)  # exactly: read(n) would first allocate n bytes
    sub = Submission(
        plugin=plugin_obj,
        vendor=vendor,
        uploaded_by=uploaded_by[:150],
        plugin_version=plugin_version,
        kubernetes_version=kubernetes_version,
        proxier=proxier,
        cluster_name=cluster,
        kind=report.kind,
        filename=(filename or "")[:255],
        sha256=sha256,
        size=size,
        content=data,
        results=report_dict.get("results", {}),
        counts=report.counts,
        warnings=list(report.warnings),
        report=report_dict,
        detected_kubernetes_version=(report.detected_kubernetes_version or "")[:40],
        run_at=report.run_at,
        run_at_source=report.run_at_source,
        content_id=report.content_id,
        near_id=report.near_id,
        emulated=report.emulated,
        created=received,
        # What the file says the server was, else what the vendor declared.
        kubernetes_minor=kubernetes_minor(report.detected_kubernetes_version or kubernetes_version),
    )
    sub.apply_flags(flags)
    try:
        with transaction.atomic():
            # Under the vendor's row lock, so that concurrent uploads cannot all pass the check.
            Vendor.objects.select_for_update().filter(pk=vendor.pk).first()
            check_quota(vendor, size)
            sub.save()
            if pieces:
                _store_content_pieces(sub.pk, stream)
            AuditEvent.record(
                uploaded_by,
                "submission.create",
                f"submission {sub.id}",
                plugin=slug,
                sha256=sha256,
                vendor=vendor.name,
            )
    except IntegrityError as exc:  # a concurrent upload of the same run won the race
        first = (
            Submission.objects.filter(content_id=report.content_id).order_by("pk").first()
            or Submission.objects.filter(sha256=sha256).order_by("pk").first()
        )
        if first is None:
            raise
        raise _duplicate(first, uploaded_by, slug, vendor, "the same e2e run") from exc
    return sub


def _duplicate(
    first: Submission, uploaded_by: str, slug: str, vendor: Vendor, what: str
) -> SubmissionError:
    """409 naming the first submission of this run (its id, plugin and vendor are public on
    /submissions/), with an audit entry: a run counts once, whoever sends it."""
    plugin = Plugin.objects.filter(pk=first.plugin_id).values_list("slug", flat=True).first()
    owner = Vendor.objects.filter(pk=first.vendor_id).values_list("name", flat=True).first()
    AuditEvent.record(
        uploaded_by,
        "submission.duplicate",
        f"submission {first.pk}",
        plugin=slug,
        vendor=vendor.name,
        first_plugin=plugin,
        first_vendor=owner,
    )
    return SubmissionError(
        409,
        f"{what} was already submitted as submission {first.pk} ({plugin}, from {owner}): "
        "one e2e run is one item of evidence, whoever submits it and for whichever plugin",
        {
            "existing_id": first.pk,
            "id": first.pk,
            "existing": {
                "id": first.pk,
                "url": first.get_absolute_url(),
                "plugin": plugin,
                "vendor": owner,
            },
        },
    )


def _refuse_export(report: Any, uploaded_by: str, slug: str, vendor: Vendor, sha256: str) -> None:
    """409 (audited) when the file is this dashboard's own JUnit export of a run."""
    export_of = _export_of(report)
    if export_of is None:
        return
    AuditEvent.record(
        uploaded_by,
        "submission.refused_export",
        f"run {export_of}",
        plugin=slug,
        vendor=vendor.name,
        sha256=sha256,
    )
    raise SubmissionError(
        409,
        f"this file is this dashboard's own JUnit export of run {export_of} "
        f"(/runs/{export_of}/junit.xml), edited or not: a run already counts (or not) as "
        "itself and is never evidence a second time",
        {"run": export_of, "run_url": f"/runs/{export_of}/"},
    )


def _export_of(report: Any) -> int | None:
    """The run whose JUnit export (dashboard.domain.ingest.export) this file is, edited or not: its
    ``source``/``run_id`` properties, or, stripped of them, a finished run exported at the
    suite's timestamp with the same testcases (whatever their outcomes now say)."""

    props = report.properties
    if props.get("source") == "sctp-dashboard" or props.get("run_id"):
        run_id = str(props.get("run_id") or "").strip()
        if run_id.isdigit() and Run.objects.filter(pk=int(run_id)).exists():
            return int(run_id)
    if report.kind != "junit" or report.run_at is None or not report.suite_key:
        return None
    start = report.run_at.replace(microsecond=0)
    window = (start, start + timedelta(seconds=1))
    for run in Run.objects.filter(state="finished", finished__range=window).select_related(
        "cluster", "plugin"
    )[:20]:
        exported = ingest(run_to_junit(run), check_evidence=False)
        if exported.suite_key == report.suite_key:
            return int(run.pk)
    return None


_CONTENT_PIECE = 1024 * 1024


def _store_content_pieces(pk: int, stream: IO[bytes]) -> None:
    """Store the upload's bytes on PostgreSQL from its stream, 1 MB at a time.

    As one parameter, a 49 MB upload peaked at 350 MB of Python memory (Django binds
    client-side: a hex literal in the SQL text), and at 290 MB as one psycopg binary
    parameter. Here the pieces go as binary parameters into a temporary table and one
    ``string_agg`` joins them on the server: the file is never in memory here, and the
    server's work stays linear (appending in place rewrote the value each time: 30 s).
    Inside the submission's transaction, so a failure stores nothing.
    """
    connection.ensure_connection()
    table = Submission._meta.db_table
    stream.seek(0)
    with connection.connection.cursor() as cursor:  # psycopg's own cursor: binary parameters
        cursor.execute(
            "CREATE TEMPORARY TABLE IF NOT EXISTS upload_pieces "
            "(seq integer PRIMARY KEY, piece bytea NOT NULL) ON COMMIT DROP"
        )
        cursor.execute("DELETE FROM upload_pieces")
        seq = 0
        while piece := stream.read(_CONTENT_PIECE):
            cursor.execute("INSERT INTO upload_pieces (seq, piece) VALUES (%s, %b)", [seq, piece])
            seq += 1
        cursor.execute(
            f'UPDATE "{table}" SET "content" = (SELECT string_agg(piece, \'\' ORDER BY seq) '
            f'FROM upload_pieces) WHERE "id" = %s',
            [pk],
        )
        cursor.execute("DELETE FROM upload_pieces")


def review(
    sub: Submission,
    *,
    user: Any,
    verify: bool,
    reason: str,
    actor: str = "",
    run_date: str | None = None,
    before: dict[str, Any] | None = None,
) -> Submission:
    """Verify or reject. ``before``: the readiness evaluation before the decision; given, what
    the decision did to it (submission_state.evaluation_change) is ``sub.review_effect`` and
    is written to the audit entry as ``effect`` ("no change" only when nothing changed). `actor` names who acted when `user` is None (a token's id); an audit
    entry always has one. ``run_date`` (verify only): when the file does not say when its e2e
    run happened, the maintainer's date for it (audited); without one such a submission is
    verified but never fresh (contract: Evidence policy, Age)."""
    actor = user.get_username() if user is not None else actor
    if not actor:
        raise ValueError("a review names its actor")
    reason = (reason or "").strip()
    if not verify and not reason:
        raise SubmissionError(400, "a rejection needs a reason")
    entered = None
    if (run_date or "").strip():
        if not verify:
            raise SubmissionError(400, "a run date is entered when verifying, not rejecting")
        if sub.run_at is not None and sub.run_at_source == "file":
            raise SubmissionError(
                400,
                f"the file says when the run happened ({sub.run_at:%Y-%m-%d %H:%M} UTC): "
                "a maintainer's run date is only for files that do not",
            )
        entered = parse_run_date(str(run_date))
    sub.status = Submission.Status.VERIFIED if verify else Submission.Status.REJECTED
    sub.reviewed_by = user
    sub.reviewed_at = now()
    sub.review_reason = reason[:2000]
    fields = ["status", "reviewed_by", "reviewed_at", "review_reason"]
    if entered is not None:
        sub.run_at, sub.run_at_source = entered, "maintainer"
        fields += ["run_at", "run_at_source"]
    with transaction.atomic():
        sub.save(update_fields=fields)
        extra: dict[str, Any] = {"run_date": entered.isoformat()} if entered is not None else {}
        sub.review_effect = None
        if before is not None:
            # deferred: the readiness evaluation reads submissions through this module
            from dashboard.domain import readiness
            from dashboard.domain.submission_state import evaluation_change

            sub.review_effect = evaluation_change(before, readiness.evaluate())
            extra["effect"] = "; ".join(sub.review_effect) or "no change"
        AuditEvent.record(
            actor,
            "submission.verify" if verify else "submission.reject",
            f"submission {sub.id}",
            reason=reason,
            plugin=sub.plugin.slug,
            **extra,
        )
    return sub


def parse_run_date(text: str) -> datetime:
    """A maintainer's run date: ``2026-11-20`` (midnight UTC) or an ISO date and time; never
    in the future."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SubmissionError(
            400, f"run_date {text[:40]!r} is not a date like 2026-11-20 or 2026-11-20T14:30:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when > now() + timedelta(minutes=10):
        raise SubmissionError(400, "run_date is in the future")
    return when
