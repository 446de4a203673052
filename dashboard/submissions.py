"""Accepting, verifying and rejecting vendor submissions: one code path for the API and the pages."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.timezone import now

from .catalog import Proxier, kubernetes_minor
from .evidence import summarize
from .models import AuditEvent, Plugin, Submission, Vendor

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


def read_bounded(fileobj: IO[bytes], limit: int) -> bytes:
    """Reads at most limit bytes; a larger upload is refused before it is all in memory."""
    chunks, total = [], 0
    while True:
        chunk = fileobj.read(1024 * 1024)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            raise SubmissionError(413, f"file is larger than the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


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
) -> Submission:
    from .ingest import IngestError, ingest

    slug = _field(plugin, "plugin", max_len=60)
    plugin_obj = Plugin.objects.filter(slug=slug).first()
    if plugin_obj is None:
        raise SubmissionError(400, f"unknown plugin: {slug!r}")
    if plugin_obj.id not in allowed_plugin_ids:
        raise SubmissionError(403, f"your token may not submit results for plugin {slug!r}")
    plugin_version = _field(plugin_version, "plugin_version")
    kubernetes_version = _field(kubernetes_version, "kubernetes_version")
    if not VERSION_RE.match(kubernetes_version):
        raise SubmissionError(400, f"kubernetes_version {kubernetes_version!r} is not a version like 1.31.2")
    proxier = _field(proxier, "proxier")
    if proxier not in Proxier.values:
        raise SubmissionError(400, f"unknown proxier {proxier!r}: expected one of {', '.join(Proxier.values)}")
    cluster = _field(cluster, "cluster", required=False, max_len=100)
    if fileobj is None:
        raise SubmissionError(400, "missing file: send the result file as the multipart field 'file'")

    limit = settings.SUBMISSION_MAX_BYTES
    data = read_bounded(fileobj, limit)
    if not data:
        raise SubmissionError(400, "the file is empty")
    sha256 = hashlib.sha256(data).hexdigest()
    existing = Submission.objects.filter(plugin=plugin_obj, sha256=sha256).values_list("id", flat=True).first()
    if existing:
        raise SubmissionError(409, f"this file was already submitted for {slug} as submission {existing}",
                              {"existing_id": existing, "id": existing})
    from .metrics import observe_ingest

    started = time.monotonic()
    try:
        report = ingest(data, declared_kubernetes_version=kubernetes_version, max_bytes=limit)
    except IngestError as exc:
        observe_ingest(time.monotonic() - started, len(data), accepted=False)
        raise SubmissionError(exc.status, exc.message) from exc
    observe_ingest(time.monotonic() - started, len(data), accepted=True)

    outcomes = {key: r.outcome for key, r in report.results.items()}
    flags = summarize(outcomes, plugin_obj.implements_network_policy)
    qualifying, why = report.qualifying(plugin_obj.implements_network_policy)
    report_dict = report.to_dict()
    report_dict["qualifying"] = {"qualifying": qualifying, "reason": why}
    sub = Submission(
        plugin=plugin_obj, vendor=vendor, uploaded_by=uploaded_by[:150], plugin_version=plugin_version,
        kubernetes_version=kubernetes_version, proxier=proxier, cluster_name=cluster, kind=report.kind,
        filename=(filename or "")[:255], sha256=sha256, size=len(data), content=data,
        results=report_dict.get("results", {}), counts=report.counts, warnings=list(report.warnings),
        report=report_dict, detected_kubernetes_version=report.detected_kubernetes_version or "",
        # Evidence policy: the release the file shows, else the declared one; the run time read
        # from the file, else (with a warning, from ingest) the upload time.
        kubernetes_minor=kubernetes_minor(report.detected_kubernetes_version or kubernetes_version),
        run_at=getattr(report, "run_at", None) or now(),
        run_at_source="file" if getattr(report, "run_at", None) else "upload",
        emulated=bool(getattr(report, "emulated", False)),
    )
    sub.apply_flags(flags)
    try:
        with transaction.atomic():
            sub.save()
            AuditEvent.record(uploaded_by, "submission.create", f"submission {sub.id}",
                              plugin=slug, sha256=sha256, vendor=vendor.name)
    except IntegrityError as exc:  # a concurrent upload of the same file won the race
        existing = Submission.objects.filter(plugin=plugin_obj, sha256=sha256).values_list("id", flat=True).first()
        raise SubmissionError(409, f"this file was already submitted for {slug} as submission {existing}",
                              {"existing_id": existing, "id": existing}) from exc
    return sub


def review(sub: Submission, *, user: Any, verify: bool, reason: str) -> Submission:
    reason = (reason or "").strip()
    if not verify and not reason:
        raise SubmissionError(400, "a rejection needs a reason")
    sub.status = Submission.Status.VERIFIED if verify else Submission.Status.REJECTED
    sub.reviewed_by = user
    sub.reviewed_at = now()
    sub.review_reason = reason[:2000]
    with transaction.atomic():
        sub.save(update_fields=["status", "reviewed_by", "reviewed_at", "review_reason"])
        AuditEvent.record(user.get_username() if user else "?", "submission.verify" if verify else "submission.reject",
                          f"submission {sub.id}", reason=reason, plugin=sub.plugin.slug)
    return sub
