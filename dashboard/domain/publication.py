"""The publication of the readiness evaluation: the stored evaluation every page, the API and
the badges serve (stale-while-revalidate), its badges, and its invalidation when evidence
changes. The engine that computes it is dashboard/domain/readiness/."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Hashable
from datetime import datetime
from typing import Any, TypeVar, cast

from django.conf import settings
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import F
from django.utils.timezone import now as tz_now

from dashboard.domain.badges import plugin_status
from dashboard.domain.models import PublishedReadiness
from dashboard.domain.readiness import evaluate, policy_settings, unevaluable
from dashboard.domain.readiness.base import Context
from dashboard.domain.readiness.evidence_lookup import connectivity_sets, plugins_by_id
from dashboard.domain.readiness.failures import Failure, failure_of
from dashboard.domain.tasks_port import send
from kernel.vocabulary import PROXIERS

log = logging.getLogger(__name__)

T = TypeVar("T")
_MISSING = object()


# This process's copy of the published evaluation, keyed by when it was computed: a request
# then costs one small query (is it still current?) instead of decoding the stored JSON again.
_memo: dict[str, Any] = {}
_memo_lock = threading.Lock()


# This process's last look at the stored row: (time.monotonic() when, computed, current version).
_look: dict[str, Any] = {}
_clock = time.monotonic


def _forget_look() -> None:
    with _memo_lock:
        _look.clear()


def _current() -> tuple[datetime | None, bool]:
    """(when the published evaluation was computed, whether it is still current)."""
    computed, fresh, _ = _state()
    return computed, fresh


def _state() -> tuple[datetime | None, bool, bool]:
    """(when the published evaluation was computed, whether it is still current, whether it may
    still be served while another request computes the next one).

    The version check is one small query, made at most every READINESS_RECHECK_SECONDS per
    process (under load, requests then cost no query at all); the age check is made every time.
    Only age makes a publication servable-while-revalidating: one older than
    READINESS_MAX_AGE_SECONDS but younger than twice that, with no evidence changed since."""

    with _memo_lock:
        look = dict(_look)
    moment = _clock()
    if look and moment - look["at"] < settings.READINESS_RECHECK_SECONDS:
        computed, same_version = look["computed"], look["same_version"]
    else:
        row = (
            PublishedReadiness.objects.filter(pk=1)
            .values_list("version", "computed_version", "computed")
            .first()
        )
        if row is None:
            return None, False, False
        version, computed_version, computed = row
        same_version = computed_version == version
        with _memo_lock:
            _look.update(at=moment, computed=computed, same_version=same_version, version=version)
    if computed is None:
        return None, False, False
    age = (tz_now() - computed).total_seconds()
    limit = settings.READINESS_MAX_AGE_SECONDS
    fresh = same_version and age < limit
    servable = same_version and age < 2 * limit
    return computed, fresh, servable


def _usable(entry: dict[str, Any]) -> bool:
    return bool(entry) and (entry.get("data") or {}).get("policy") == policy_settings()


def _load(computed: datetime) -> dict[str, Any]:
    with _memo_lock:
        if _memo.get("computed") == computed:
            return _memo

    row = PublishedReadiness.objects.filter(pk=1).values_list("data", "badges", "computed").first()
    entry = _stored_entry(row[2], row[0] or "{}", row[1]) if row else {}
    with _memo_lock:
        _memo.clear()
        _memo.update(entry)
        return dict(_memo)


def _stored_entry(computed: datetime | None, document: str, badges: Any) -> dict[str, Any]:
    """This process's copy of a publication from its stored JSON text: the text decoded (what
    pages read) and the text itself as the API's body (published_json() would encode the
    decoded document back to the same text)."""
    return {
        "computed": computed,
        "data": json.loads(document),
        "badges": badges,
        "derived": {"json": document.encode()},
    }


def published() -> dict[str, Any]:
    """The evaluation the public page and API serve: the stored one while no evidence changed
    since and it is younger than READINESS_MAX_AGE_SECONDS, else recomputed here. Callers must
    not modify it (copy.deepcopy it first): it is shared by the requests of this process."""
    entry = _entry()
    data: dict[str, Any] = entry["data"] if entry else evaluate()
    return data


# One evaluation at a time per process: when the stored one is out of date, the requests that
# find it so wait for the first one's evaluation and serve it, instead of each evaluating.
_publish_lock = threading.Lock()


State = tuple[datetime | None, bool, bool]


def _served(state: State | None = None) -> dict[str, Any] | None:
    """This process's copy of the stored evaluation, when it may be served."""
    computed, fresh, _ = state or _state()
    if fresh and computed is not None:
        entry = _load(computed)
        if _usable(entry):
            return entry
    return None


def _entry() -> dict[str, Any]:
    """This process's copy of the current publication (publishing first when there is none).

    Stale-while-revalidate, bounded: when the publication is merely past
    READINESS_MAX_AGE_SECONDS (no evidence changed since) and younger than twice that, one
    request in one process computes the next (a lock here, a cache lease across processes)
    while every other request goes on serving the previous one at once. Changed evidence, or
    a publication older than that, is never served: those requests wait for one evaluation."""
    state = _state()
    entry = _served(state)
    if entry is not None:
        return entry
    previous = _servable(state)
    if previous is not None:
        if not _publish_lock.acquire(blocking=False):
            return previous  # this process is computing the next one
        try:
            if not _lease():
                return previous  # another process is
            publish(version=_looked_version())
        finally:
            _publish_lock.release()
        entry = _served()
        return entry if entry is not None else previous
    with _publish_lock:
        _forget_look()
        entry = _served()  # published by the request this one waited for
        if entry is not None:
            return entry
        publish(version=_looked_version())
        entry = _served()
        if entry is not None:
            return entry
        # evidence changed during the evaluation: serve it this once, the next reader redoes it
        computed, _ = _current()
        return _load(computed) if computed is not None else {}


def _looked_version() -> int | None:
    """The version this process last read (before the evaluation it is about to make)."""
    with _memo_lock:
        version: int | None = _look.get("version")
    return version


def _servable(state: State) -> dict[str, Any] | None:
    """The previous publication, while it may be served during the computation of the next."""
    computed, _fresh, servable = state
    if servable and computed is not None:
        entry = _load(computed)
        if _usable(entry):
            return entry
    return None


LEASE_KEY = "readiness:publishing"


def _lease() -> bool:
    """One process computes the next publication while the others serve the previous one: a
    short cache lease (the computation's own bound; it expires if its holder dies)."""
    try:
        return bool(cache.add(LEASE_KEY, 1, 30))
    except Exception:  # no shared cache: every process may compute, as before
        return True


def derived(name: Hashable, build: Callable[[dict[str, Any]], T]) -> T:
    """What `build` makes of the published evaluation, made once per publication in this
    process: the API's JSON body, the readiness page's rendered body. `build` must not modify
    the evaluation. A new publication (evidence changed, or the beat's minute) drops them all."""
    entry = _entry()
    if not entry:  # nothing could be stored: build from an evaluation made here
        return build(evaluate())
    made = (entry.get("derived") or {}).get(name, _MISSING)
    if made is not _MISSING:
        return cast(T, made)
    value = build(entry["data"])
    with _memo_lock:
        if _memo.get("computed") == entry["computed"]:
            _memo.setdefault("derived", {})[name] = value
    return value


def published_json() -> bytes:
    """The published evaluation as the API's JSON body, encoded once per publication."""
    return derived("json", lambda data: json.dumps(data, cls=DjangoJSONEncoder).encode())


def published_badge(slug: str) -> dict[str, Any] | None:
    """A plugin's badge status as last published ({status, message, why}), None if unknown."""
    badge: dict[str, Any] | None = (_entry().get("badges") or {}).get(slug)
    return badge


def publish(evaluation: dict[str, Any] | None = None, version: int | None = None) -> dict[str, Any]:
    """Evaluates (unless given an evaluation) and stores it with every plugin's badge status.
    `version`: the row's version as read before (not after) the evaluation began."""

    # Read first: a change during the evaluation leaves it stale, not lost. (Only the version:
    # the row's documents are large.)
    if version is None:
        version = PublishedReadiness.objects.filter(pk=1).values_list("version", flat=True).first()
    if version is None:
        version = PublishedReadiness.objects.get_or_create(pk=1)[0].version
    ctx = Context(now=tz_now())
    failures: list[Failure] = []
    try:
        evaluation = evaluation if evaluation is not None else evaluate(ctx)
    except Exception as exc:  # the whole evaluation (its lookups): the page still answers
        failures.append(failure_of("evaluation", exc))
        log.error("readiness evaluation raised: %s", failures[-1].summary, exc_info=exc)
        evaluation = unevaluable(ctx.now, failures[-1])
    failures += [Failure.from_dict(f) for f in evaluation.get("failures", [])]
    badges: dict[str, Any] = {}
    if not failures:
        try:
            badges = _badges(ctx)  # from the evaluation's candidates: no second look
        except Exception as exc:
            failures.append(failure_of("badges", exc))
            log.error("readiness badges raised: %s", failures[-1].summary, exc_info=exc)
    if failures:
        return _after_failure(evaluation, failures, version)
    computed = tz_now()
    # Encoded once: the stored text is the API's body, and decoded it is what pages read.
    document = json.dumps(evaluation, cls=DjangoJSONEncoder)
    fields = {"data": document, "badges": badges, "computed_version": version, "failure": {}}
    # Stored under the version it was computed at; when that is still the version (no evidence
    # changed meanwhile), this process knows the row is current without looking again.
    current = bool(
        PublishedReadiness.objects.filter(pk=1, version=version).update(**fields, computed=computed)
    )
    if not current:
        PublishedReadiness.objects.filter(pk=1).update(**fields, computed=computed)
    _remember_stored(computed, document, badges, version, current)
    return evaluation


def _remember_stored(
    computed: datetime, document: str, badges: Any, version: int, current: bool
) -> None:
    # What this process will serve next, as it would come back from the database (no second
    # read of a document this size).
    with _memo_lock:
        _memo.clear()
        _memo.update(_stored_entry(computed, document, badges))
    with _memo_lock:  # the next reader looks at the new row (unless known current)
        _look.clear()
        if current:
            _look.update(at=_clock(), computed=computed, same_version=True, version=version)
    try:
        cache.delete(LEASE_KEY)
    except Exception:
        pass


def _after_failure(
    evaluation: dict[str, Any], failures: list[Failure], version: int
) -> dict[str, Any]:
    """The newest evaluation could not be made (part of it raised): the last good one stays
    served, with a `publication` block saying when it was evaluated and that the newest failed;
    the failure (which part, the error, the evidence item) is stored for maintainers, logged
    and counted (/metrics). With no good evaluation yet, the one made now is served: its
    failed criteria are unmet ("could not be evaluated"), never met.

    The attempt is stored under the version it was made at, like a success: readers do not
    retry it on every request, but when evidence changes or READINESS_MAX_AGE_SECONDS pass."""
    row = PublishedReadiness.objects.filter(pk=1).values_list("data", "badges").first()
    previous: dict[str, Any] = json.loads(row[0] or "{}") if row else {}
    previous.pop("publication", None)
    failed_at = tz_now()
    good = bool(previous.get("transitions"))
    served = previous if good else evaluation
    badges = row[1] if good and row else {}
    last_good = previous.get("evaluated_at") if good else None
    parts = sorted({f.part for f in failures})
    message = (
        f"The newest evaluation ({failed_at:%Y-%m-%d %H:%M} UTC) could not be made "
        f"({', '.join(parts)} raised); "
        + (
            f"this is the last good one, evaluated at {last_good}."
            if good
            else "no evaluation has succeeded yet: what could not be evaluated is unmet."
        )
    )
    served = {
        **served,
        "publication": {
            "current": False,
            "last_good_evaluated_at": last_good,
            "newest_failed_at": failed_at.isoformat(),
            "message": message,
            "failed": parts,
        },
    }
    served.pop("failures", None)
    document = json.dumps(served, cls=DjangoJSONEncoder)
    failure = {"at": failed_at.isoformat(), "failures": [f.to_dict() for f in failures]}
    fields = {
        "data": document,
        "badges": badges,
        "computed_version": version,
        "failed_at": failed_at,
        "failure": failure,
        "failures_total": F("failures_total") + 1,
    }
    current = bool(
        PublishedReadiness.objects.filter(pk=1, version=version).update(
            **fields, computed=failed_at
        )
    )
    if not current:
        PublishedReadiness.objects.filter(pk=1).update(**fields, computed=failed_at)
    _remember_stored(failed_at, document, badges, version, current)
    return served


def last_failure() -> dict[str, Any]:
    """The stored failure of the newest evaluation ({} when it succeeded): for maintainers."""
    row = (
        PublishedReadiness.objects.filter(pk=1)
        .values_list("failure", "failed_at", "failures_total")
        .first()
    )
    if not row or not row[0]:
        return {}
    return {**row[0], "failed_at": row[1], "failures_total": row[2]}


def failure_counts() -> tuple[int, bool]:
    """(evaluations that failed since the row was made, whether the last good one is served)."""
    row = PublishedReadiness.objects.filter(pk=1).values_list("failures_total", "failure").first()
    return (row[0], bool(row[1])) if row else (0, False)


def _badges(ctx: Context) -> dict[str, Any]:
    sets = connectivity_sets(ctx)
    out: dict[str, Any] = {}
    for plugin in ctx.memo("plugins", plugins_by_id).values():
        candidates = sets.of_plugin(plugin.pk)
        status = _badge_words(plugin, candidates, ctx)
        # The post-GA watch: the same rules on each proxier mode (/badge/<slug>.svg?proxier=ipvs).
        status["proxiers"] = {
            mode: _badge_words(plugin, candidates, ctx, mode) for mode in PROXIERS
        }
        out[plugin.slug] = status
    return out


def _badge_words(
    plugin: Any, candidates: Any, ctx: Context, proxier: str | None = None
) -> dict[str, Any]:
    st = plugin_status(plugin, ctx.now, candidates, ctx.policy, proxier=proxier)
    return {"status": st.status, "message": st.message, "why": st.why}


def remember(evaluation: dict[str, Any]) -> None:
    """Stores an evaluation computed elsewhere (history.record_evaluation)."""
    try:
        publish(evaluation)
    except Exception:
        log.warning("could not store the readiness evaluation", exc_info=True)


def invalidate(*args: Any, **kwargs: Any) -> None:
    """Marks the published evaluation out of date (usable as a signal receiver): one UPDATE.

    After the commit, a task recomputes it if a worker is there; otherwise the next reader does.
    """

    PublishedReadiness.objects.filter(pk=1).update(version=F("version") + 1)
    # This process sees its own change at once; other processes (and this one's other threads,
    # if they look before the commit) within READINESS_RECHECK_SECONDS.
    _forget_look()
    if settings.READINESS_REFRESH_ON_COMMIT:
        transaction.on_commit(_request_refresh)


def _request_refresh() -> None:
    if not settings.READINESS_REFRESH_ON_COMMIT:
        return
    try:
        if not cache.add("readiness:refresh-queued", 1, 10):  # one refresh per 10 s is enough
            return
    except Exception:
        pass
    try:
        send("workers.tasks.refresh_readiness", kwargs={"reason": "evidence changed"}, retry=False)
    except Exception:  # no broker: readers recompute on demand, and beat every minute
        log.debug("readiness refresh not queued", exc_info=True)
