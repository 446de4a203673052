"""`?watch=true` and list `resourceVersion`, as kube-apiserver serves them.

A watch answers 200 with a chunked body of newline-delimited JSON events
(`{"type": "ADDED"|"MODIFIED"|"DELETED"|"ERROR", "object": {...}}`), the shape the
`kubernetes` client's `watch.Watch().stream(...)` reads. Without `resourceVersion` (or with
"0") it starts with an ADDED event per current object, then streams changes; from a given
resourceVersion it sends every change after it, or one ERROR event carrying a 410 `Expired`
Status when that version has left the history (as after an etcd compaction). It ends after
`timeoutSeconds`, when the client goes away, or when the lab stops.

The cluster logs its changes (`Cluster.events`); a watcher waits on `Cluster.changed` and,
since pods start lazily, calls `advance()` itself when the next pod start or LB IP is due.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from lab.errors import ApiError
from lab.labels import matches_query
from lab.store import WatchEvent

if TYPE_CHECKING:
    from lab.cluster import Cluster

# kube-apiserver's --min-request-timeout is 1800 s; a watch without timeoutSeconds lasts
# between it and twice it. The lab ends idle watches sooner: the client re-watches anyway.
DEFAULT_TIMEOUT_S = 1800.0
POLL_S = 0.5
# With allowWatchBookmarks, a BOOKMARK (the current resourceVersion) after this long without
# an event; kube-apiserver sends them about once a minute, the lab sooner.
BOOKMARK_S = 5.0


def _q(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def is_watch(query: dict[str, list[str]]) -> bool:
    return (_q(query, "watch") or "").lower() in ("true", "1")


def selector_terms(selector: str | None) -> Iterator[tuple[str, str, bool]]:
    """A `fieldSelector`'s terms: (field, value, negated), for `a=b`, `a==b` and `a!=b`."""
    for term in (selector or "").split(","):
        term = term.strip()
        if not term:
            continue
        negate = "!=" in term
        key, _, value = term.partition("!=" if negate else "=")
        yield key, value.lstrip("="), negate


def field_matches(selector: str | None, obj: dict[str, Any]) -> bool:
    """fieldSelector on metadata.name / metadata.namespace (what clients wait with), and a
    Node's spec.unschedulable."""
    if not selector:
        return True
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    for key, value, negate in selector_terms(selector):
        field = {"metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace")}
        if "nodeInfo" in (obj.get("status") or {}):
            # A Node's (pkg/registry/core/node/strategy.go NodeToSelectableFields: Go's
            # fmt.Sprint of the bool); upstream's e2e suite lists nodes with it before any spec.
            field["spec.unschedulable"] = "true" if spec.get("unschedulable") else "false"
        if key not in field:
            raise ApiError(
                400,
                f'"{key}" is not a known field selector: only "metadata.name", '
                '"metadata.namespace"',
            )
        if (field[key] == value) == negate:
            return False
    return True


def _parse_rv(raw: str | None) -> int | None:
    if raw in (None, "", "0"):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(
            400,
            f'resourceVersion: Invalid value: "{raw}": strconv.ParseUint: '
            f'parsing "{raw}": invalid syntax',
        ) from None


def check_list_resource_version(cluster: Cluster, query: dict[str, list[str]]) -> None:
    """A list at a resourceVersion the server cannot serve answers as the watch cache does."""
    rv = _parse_rv(_q(query, "resourceVersion"))
    if rv is None:
        return
    current = cluster.resource_version
    if rv > current:
        raise ApiError(
            504,
            f"Timeout: Too large resource version: {rv}, current: {current}",
            reason="Timeout",
            details={
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
        )
    if _q(query, "resourceVersionMatch") == "Exact" and rv != current:
        raise ApiError(
            410, "The resourceVersion for the provided list is too old.", reason="Expired"
        )


class WatchStream:
    """The events one watch request sends; iterate `lines()` outside the cluster lock."""

    def __init__(
        self,
        cluster: Cluster,
        resource: str,
        namespace: str | None,
        query: dict[str, list[str]],
        snapshot: list[dict[str, Any]],
        stopping: threading.Event,
        matches: Callable[[str | None, dict[str, Any]], bool] = field_matches,
    ) -> None:
        """`matches`: the kind's field selectors (metadata.name and .namespace by default)."""
        self.cluster = cluster
        self._field_matches = matches
        self.resource = resource
        self.namespace = namespace
        self.labels = _q(query, "labelSelector")
        self.fields = _q(query, "fieldSelector")
        timeout = _q(query, "timeoutSeconds")
        try:
            self.timeout = float(timeout) if timeout else DEFAULT_TIMEOUT_S
        except ValueError:
            raise ApiError(400, f"invalid timeoutSeconds {timeout!r}") from None
        self.stopping = stopping
        # Applied to each event's object as it is sent (kubectl's `as=Table` watches).
        self.transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.bookmarks = (_q(query, "allowWatchBookmarks") or "").lower() in ("true", "1")
        # (kind, apiVersion) of the objects, for BOOKMARK events.
        self.item_type: tuple[str, str] = ("", "v1")
        self.start_rv = _parse_rv(_q(query, "resourceVersion"))
        # Taken now, under the lock the request holds: nothing can happen in between.
        self.current = cluster.resource_version
        self.initial: list[dict[str, Any]] = []
        self.expired: str | None = None
        # A streaming list (client-go's WatchListClient, on by default since 1.35): the current
        # state as ADDED events whatever the resourceVersion, then a BOOKMARK marked
        # k8s.io/initial-events-end (meta/v1 types.go, InitialEventsAnnotationKey).
        self.send_initial = (_q(query, "sendInitialEvents") or "").lower() in ("true", "1")
        if self.send_initial:
            self.initial = [{"type": "ADDED", "object": o} for o in snapshot if self._matches(o)]
            self.last = self.current
        elif self.start_rv is None:
            self.initial = [{"type": "ADDED", "object": o} for o in snapshot if self._matches(o)]
            self.last = self.current
        else:
            oldest = cluster.events[0].rv if cluster.events else self.current + 1
            if len(cluster.events) == cluster.events.maxlen and self.start_rv < oldest - 1:
                self.expired = f"too old resource version: {self.start_rv} ({self.current})"
            self.last = self.start_rv

    def _matches(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return matches_query(self.labels, meta.get("labels")) and self._field_matches(
            self.fields, obj
        )

    def _new_events(self) -> list[WatchEvent]:
        found = []
        for event in reversed(self.cluster.events):
            if event.rv <= self.last:
                break
            found.append(event)
        found.reverse()
        if found:
            self.last = found[-1].rv
        return [e for e in found if e.resource == self.resource and self._matches(e.obj)]

    def _bookmark(self, version: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
        """A BOOKMARK event at resourceVersion `version`, for the objects this watch streams."""
        kind, api_version = self.item_type
        metadata: dict[str, Any] = {"resourceVersion": str(version)}
        if annotations:
            metadata["annotations"] = annotations
        return {
            "type": "BOOKMARK",
            "object": {"kind": kind, "apiVersion": api_version, "metadata": metadata},
        }

    def lines(self) -> Iterator[dict[str, Any]]:
        if self.expired:
            yield {
                "type": "ERROR",
                "object": ApiError(410, self.expired, reason="Expired").status(),
            }
            return
        yield from self.initial
        if self.send_initial:
            yield self._bookmark(self.current, {"k8s.io/initial-events-end": "true"})
        deadline = time.monotonic() + self.timeout
        cluster = self.cluster
        quiet_since = time.monotonic()
        while not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self.bookmarks and time.monotonic() - quiet_since >= BOOKMARK_S:
                quiet_since = time.monotonic()
                yield self._bookmark(max(self.last, self.current))
            with cluster.changed:
                cluster.advance()
                batch = self._new_events()
                if not batch:
                    wait = min(left, POLL_S)
                    due = cluster.next_due()
                    if due is not None:
                        wait = min(wait, max(due - cluster.clock(), 0.005))
                    cluster.changed.wait(wait)
                    cluster.advance()
                    batch = self._new_events()
            for event in batch:
                quiet_since = time.monotonic()
                yield {"type": event.type, "object": event.obj}


class DerivedWatch(WatchStream):
    """A watch of a list the lab derives from its state rather than stores (events,
    ReplicaSets, the CNI's DaemonSets and ConfigMaps): at each change of the cluster (or each
    poll) the list is made again and what differs is sent, ADDED, MODIFIED or DELETED. Such a
    list keeps no history: a `resourceVersion` is taken as now, never as expired."""

    def __init__(
        self,
        cluster: Cluster,
        resource: str,
        namespace: str | None,
        query: dict[str, list[str]],
        produce: Callable[[], list[dict[str, Any]]],
        stopping: threading.Event,
        matches: Callable[[str | None, dict[str, Any]], bool] = field_matches,
    ) -> None:
        self._produce = produce
        snapshot = produce()
        super().__init__(cluster, resource, namespace, query, snapshot, stopping, matches)
        self.expired = None
        shown = [o for o in snapshot if self._matches(o)]
        self._seen = {self._key(o): (self._signature(o), o) for o in shown}

    @staticmethod
    def _key(obj: dict[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace", "")), str(meta.get("name", ""))

    @staticmethod
    def _signature(obj: dict[str, Any]) -> str:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
        return json.dumps({**obj, "metadata": meta}, sort_keys=True, default=str)

    def _new_events(self) -> list[WatchEvent]:
        rv = self.cluster.resource_version
        now = {self._key(o): (self._signature(o), o) for o in self._produce() if self._matches(o)}
        found = [
            WatchEvent(rv, self.resource, "ADDED" if key not in self._seen else "MODIFIED", obj)
            for key, (signature, obj) in now.items()
            if key not in self._seen or self._seen[key][0] != signature
        ]
        found += [
            WatchEvent(rv, self.resource, "DELETED", obj)
            for key, (_signature, obj) in self._seen.items()
            if key not in now
        ]
        self._seen = now
        self.last = max(self.last, rv)
        return found
