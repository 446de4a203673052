"""Notifications: a schedule changing state, a criterion regressing. Webhook (JSON) and e-mail.

Semantics, at most once per event and channel:

- `emit(event_key, event, payload)` inserts one NotificationLog per enabled channel; the
  unique (channel, event_key) constraint makes a second emit of the same event a no-op.
- The Celery task `deliver(log_id)` claims the row (a conditional update from pending or
  retrying to sending) before it sends, so two copies of the task never both send. A failed
  attempt goes back to retrying with exponential backoff (NOTIFY_BACKOFF_SECONDS doubling,
  capped), up to NOTIFY_MAX_ATTEMPTS attempts, then `failed` with the last error.
- A worker killed mid-send leaves the row `sending`; it is not retried (it may have been
  delivered), and the beat check marks it failed after SENDING_TIMEOUT.
- Rows whose task never reached the broker (it was down) stay `pending`/`retrying` and are
  sent again by the beat check: nothing is lost, and the claim keeps it single.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import urllib3
from celery.exceptions import MaxRetriesExceededError
from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils.timezone import now

from dashboard.domain import schedules
from dashboard.domain.models import NotificationChannel, NotificationLog
from dashboard.domain.tasks_port import send
from kernel.netguard import (
    IPNetwork,
    Pin,
    PinnedPoolManager,
    ServerNotAllowed,
    Words,
    allowed_networks,
    check_server,
)

DELIVER_TASK = "workers.tasks.deliver_notification"

log = logging.getLogger(__name__)

SENDING_TIMEOUT = timedelta(minutes=10)
USER_AGENT = "sctp-dashboard-notify/1"
# Every failure to deliver reads the same, whatever happened (refused connection, silence,
# reset, TLS, an address webhooks may not use): a maintainer's webhook URL must not become a
# probe that tells open ports from closed ones. An answer is reported by its status code only.
UNDELIVERED = (
    "the webhook could not be reached (no connection or no answer in time, or an address "
    "webhooks may not use)"
)


class DeliveryError(Exception):
    pass


# --- Events ---------------------------------------------------------------------------------


def emit(event_key: str, event: str, payload: dict[str, Any]) -> list[int]:
    """Queues one delivery per enabled channel; returns the new log ids (none for a duplicate)."""
    payload = {"event": event, "key": event_key, **payload}
    created = []
    for channel in NotificationChannel.objects.filter(enabled=True):
        try:
            with transaction.atomic():
                entry = NotificationLog.objects.create(
                    channel=channel, event_key=event_key[:200], event=event, payload=payload
                )
        except IntegrityError:
            log.info(
                "notification %s for %s already exists; not sending it twice", event_key, channel
            )
            continue
        created.append(entry.pk)
        transaction.on_commit(functools.partial(enqueue, entry.pk))
    return created


def enqueue(log_id: int, countdown: float | None = None) -> bool:
    try:
        # By name: the task lives in workers.tasks; the web process does not import it.
        send(DELIVER_TASK, args=[log_id], countdown=countdown, retry=False)
    except Exception as exc:  # the broker is down: the beat check sends it later
        log.warning("notification %s stays pending: broker unavailable (%s)", log_id, exc)
        return False
    NotificationLog.objects.filter(pk=log_id).update(queued=now())
    return True


def schedule_changed(change: Any) -> list[int]:
    """Announces a schedule's state change (dashboard.domain.schedules.Change)."""
    s = change.schedule
    payload = {
        "schedule": s.pk,
        "cluster": s.cluster.name,
        "battery": s.battery,
        "state": change.state,
        "previous": change.previous,
        "detail": change.why,
        "interval_minutes": s.interval_minutes,
        "grace_minutes": s.grace_minutes,
        "url": f"{settings.SITE_URL}/schedules/",
    }
    return emit(
        f"schedule:{s.pk}:v{change.version}:{change.state}", f"schedule.{change.state}", payload
    )


def on_readiness_change(
    previous: dict[str, Any] | None, statuses: dict[str, Any], evaluation: dict[str, Any]
) -> None:
    """A readiness listener (dashboard.domain.history.LISTENERS): a met criterion that no longer is."""
    if not previous:
        return
    criteria = {c["key"]: c for t in evaluation.get("transitions", []) for c in t["criteria"]}
    for key, status in statuses.items():
        if previous.get(key) == "met" and status != "met":
            c = criteria.get(key, {})
            emit(
                f"criterion:{key}:{status}:{evaluation.get('evaluated_at', '')}",
                "criterion.regressed",
                {
                    "criterion": key,
                    "title": c.get("title", key),
                    "previous": "met",
                    "status": status,
                    "detail": c.get("detail", ""),
                    "evidence": c.get("evidence", []),
                    "url": f"{settings.SITE_URL}/",
                },
            )


def on_watch_regressions(evaluation: dict[str, Any]) -> list[int]:
    """An evaluation listener (dashboard.domain.history.EVALUATED): each post-GA regression (a
    plugin × proxier × release whose newest evidence no longer qualifies, where older evidence
    did), once per regressing run or file and channel (emit's event key)."""
    created: list[int] = []
    for r in (evaluation.get("watch") or {}).get("regressions") or []:
        evidence = r.get("evidence") or {}
        ref = f"{evidence.get('kind', '?')}:{evidence.get('id', '?')}"
        created += emit(
            f"watch:{r['plugin']}:{r['release']}:{r['proxier']}:{ref}",
            "watch.regressed",
            {
                "plugin": r["plugin"],
                "release": r["release"],
                "kubernetes_version": r.get("kubernetes_version", ""),
                "plugin_version": r.get("plugin_version", ""),
                "proxier": r["proxier"],
                "tests": r.get("tests", []),
                "when": r.get("when", ""),
                "detail": (
                    f"{r['plugin']} on Kubernetes {r['release']}, {r['proxier']}: "
                    f"{', '.join(r.get('tests') or []) or r.get('why', '')} "
                    f"({evidence.get('kind', '')} {evidence.get('id', '')}, {r.get('when', '')})"
                ),
                "evidence": evidence,
                "held": r.get("held"),
                "url": f"{settings.SITE_URL}/#what-changed",
            },
        )
    return created


# --- Delivery -------------------------------------------------------------------------------


def backoff(attempt: int) -> int:
    """Seconds before the retry that follows attempt number `attempt` (1, 2, …)."""
    return int(
        min(
            settings.NOTIFY_BACKOFF_SECONDS * 2 ** (attempt - 1),
            settings.NOTIFY_BACKOFF_MAX_SECONDS,
        )
    )


def subject_of(payload: dict[str, Any]) -> str:
    if payload.get("event", "").startswith("schedule."):
        return f"[SCTP dashboard] schedule {payload['battery']} on {payload['cluster']} is {payload['state']}"
    if payload.get("event") == "watch.regressed":
        return (
            f"[SCTP dashboard] {payload['plugin']} regressed on Kubernetes {payload['release']} "
            f"({payload['proxier']})"
        )
    if payload.get("event") == "criterion.regressed":
        return f"[SCTP dashboard] criterion {payload['criterion']} is now {payload['status']}"
    return f"[SCTP dashboard] {payload.get('event', 'notification')}"


def body_of(payload: dict[str, Any]) -> str:
    lines = [subject_of(payload).removeprefix("[SCTP dashboard] ").capitalize() + ".", ""]
    if payload.get("detail"):
        lines += [payload["detail"], ""]
    if payload.get("previous"):
        lines.append(f"Previously: {payload['previous']}.")
    if payload.get("url"):
        lines.append(f"See {payload['url']}")
    return "\n".join(lines) + "\n"


def webhook_networks() -> list[IPNetwork]:
    """WEBHOOK_ALLOWED_NETWORKS, or CLUSTER_ALLOWED_NETWORKS when it is not set."""
    value = getattr(settings, "WEBHOOK_ALLOWED_NETWORKS", None)
    if value is None:
        value = getattr(settings, "CLUSTER_ALLOWED_NETWORKS", "")
    return allowed_networks(value)


class WebhookRefused(ServerNotAllowed):
    """The webhook URL is malformed or points where webhooks may not go; the words say which."""


WEBHOOK_WORDS = Words(
    url="the webhook URL",
    host="the webhook URL",
    refused="where webhooks may not go (WEBHOOK_ALLOWED_NETWORKS lists the exceptions)",
)


def check_webhook(url: str, *, resolve_timeout: float = 5.0) -> tuple[Pin, str]:
    """The webhook's checked address and the request target (path and query), or
    WebhookRefused saying why (never quoting the URL): the cluster servers' guard
    (kernel.netguard) applied to webhook URLs, with WEBHOOK_ALLOWED_NETWORKS."""
    try:
        pin = check_server(
            url, webhook_networks(), resolve_timeout, WEBHOOK_WORDS, request_target=True
        )
    except ServerNotAllowed as exc:
        raise WebhookRefused(str(exc)) from None
    return Pin(dataclasses.replace(pin.server, path=""), pin.address), pin.server.path


def send_webhook(channel: NotificationChannel, payload: dict[str, Any]) -> None:
    """POSTs the event to the checked address only, follows no redirect, reads no answer body,
    and gives up after NOTIFY_TIMEOUT_SECONDS in all (a receiver dripping bytes included)."""
    body = json.dumps(payload, sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Event-Key": payload.get("key", ""),
    }
    if channel.secret:
        headers["X-Signature"] = (
            "sha256=" + hmac.new(channel.secret.encode(), body, hashlib.sha256).hexdigest()
        )
    deadline = float(settings.NOTIFY_TIMEOUT_SECONDS)
    try:
        pin, target = check_webhook(channel.target, resolve_timeout=min(5.0, deadline))
    except ServerNotAllowed as exc:
        log.warning("webhook channel %s not delivered: %s", channel.pk, exc)
        raise DeliveryError(UNDELIVERED) from None
    manager = PinnedPoolManager(pin, num_pools=1)
    timer = threading.Timer(deadline, pin.abort)
    timer.daemon = True
    timer.start()
    try:
        response = manager.urlopen(
            "POST",
            f"{pin.server.url}{target}",
            body=body,
            headers=headers,
            redirect=False,
            retries=False,
            preload_content=False,
            timeout=urllib3.Timeout(connect=deadline, read=deadline),
        )
        status = response.status
        response.close()
    except Exception:  # urllib3's many errors, TLS, resets: one message for all (see UNDELIVERED)
        raise DeliveryError(UNDELIVERED) from None
    finally:
        timer.cancel()
        manager.clear()
    if not 200 <= status < 300:
        note = " (redirects are not followed)" if 300 <= status < 400 else ""
        raise DeliveryError(f"the webhook answered {status}{note}")


def send_email(channel: NotificationChannel, payload: dict[str, Any]) -> None:
    try:
        send_mail(
            subject_of(payload), body_of(payload), settings.DEFAULT_FROM_EMAIL, [channel.target]
        )
    except Exception as exc:  # SMTP errors come in many classes; all of them are worth a retry
        raise DeliveryError(f"the e-mail could not be sent: {exc}") from exc


SENDERS: dict[str, Callable[[NotificationChannel, dict[str, Any]], None]] = {
    NotificationChannel.Kind.WEBHOOK: send_webhook,
    NotificationChannel.Kind.EMAIL: send_email,
}


def attempt(log_id: int) -> str:
    """One delivery attempt: 'sent', 'retry', 'failed' or 'skipped' (not ours to send)."""
    claimed = NotificationLog.objects.filter(
        pk=log_id, status__in=[NotificationLog.Status.PENDING, NotificationLog.Status.RETRYING]
    ).update(status=NotificationLog.Status.SENDING, attempts=F("attempts") + 1, queued=now())
    if not claimed:
        return "skipped"
    entry = NotificationLog.objects.select_related("channel").get(pk=log_id)
    try:
        SENDERS[entry.channel.kind](entry.channel, entry.payload)
    except DeliveryError as exc:
        last = entry.attempts >= settings.NOTIFY_MAX_ATTEMPTS
        NotificationLog.objects.filter(pk=log_id).update(
            status=NotificationLog.Status.FAILED if last else NotificationLog.Status.RETRYING,
            last_error=str(exc)[:2000],
            queued=now(),
        )
        log.warning("notification %s attempt %s failed: %s", entry.event_key, entry.attempts, exc)
        return "failed" if last else "retry"
    NotificationLog.objects.filter(pk=log_id).update(
        status=NotificationLog.Status.SENT, sent=now(), last_error=""
    )
    return "sent"


def deliver(log_id: int, retry: Any) -> str:
    """One delivery attempt; `retry(countdown, max_retries)` reschedules (the task in workers.tasks)."""
    result = attempt(log_id)
    if result == "retry":
        attempts = (
            NotificationLog.objects.filter(pk=log_id).values_list("attempts", flat=True).first()
            or 1
        )
        try:
            # Bounded by NOTIFY_MAX_ATTEMPTS in attempt(), which marks the row failed at the end.
            raise retry(countdown=backoff(attempts), max_retries=settings.NOTIFY_MAX_ATTEMPTS)
        except MaxRetriesExceededError:
            NotificationLog.objects.filter(
                pk=log_id, status=NotificationLog.Status.RETRYING
            ).update(status=NotificationLog.Status.FAILED)
    return result


def redispatch(limit: int = 200) -> int:
    """Re-sends deliveries the broker never got or lost; fails those a dead worker left `sending`."""
    cutoff = now() - SENDING_TIMEOUT
    NotificationLog.objects.filter(status=NotificationLog.Status.SENDING, queued__lt=cutoff).update(
        status=NotificationLog.Status.FAILED,
        last_error="the worker was lost while sending; not retried, as it may have been delivered",
    )
    fresh = now() - timedelta(seconds=30)
    lost = now() - timedelta(seconds=settings.NOTIFY_BACKOFF_MAX_SECONDS) - SENDING_TIMEOUT
    ids = list(
        NotificationLog.objects.filter(
            Q(status=NotificationLog.Status.PENDING, queued__isnull=True, created__lt=fresh)
            | Q(
                status__in=[NotificationLog.Status.PENDING, NotificationLog.Status.RETRYING],
                queued__lt=lost,
            )
        ).values_list("id", flat=True)[:limit]
    )
    return sum(1 for pk in ids if enqueue(pk))


def check_schedules() -> int:
    """Beat, every minute: stores each schedule's state and announces the changes."""

    with transaction.atomic():
        changes = schedules.record_states(schedules.statuses())
        for change in changes:
            schedule_changed(change)
    redispatch()
    return len(changes)
