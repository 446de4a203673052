"""Issue 36, item 1: no combination of evidence breaks an evaluation (a Hypothesis state machine).

The machine drives the dashboard through what people do, through the code paths they reach:

- vendors (tokens made by `manage.py issue_token`) and a maintainer register clusters through
  `POST /api/v1/clusters/` with a kubeconfig naming a small stand-in API server whose
  `GET /version` says the release and, for an emulator, `"emulated": true`; the lab's clusters
  are registered as `manage.py lab --register` does (dashboard.domain.lab_clusters); owners and
  maintainers change them (`PATCH`), maintainers approve them (API), revoke the approval and
  make them basic-only (pages), an operator disables one (what the admin's form saves);
- runs are requested through `POST clusters/{name}/runs/` (and by beat's
  `workers.tasks.start_scheduled` for schedules made with dashboard.domain.schedules) and run
  by the worker's own `workers.runner.execute`, whose battery is replaced by a report with any
  outcomes and fingerprint (detected proxier or a replacing dataplane, emulated or not, the
  release the server said, sctp.ko before the tests), ending finished or in error;
- the in-cluster agent posts self-reported runs (`POST agent-runs/`), which a maintainer may
  verify (`POST runs/{id}/verify`);
- vendors upload every format through `POST submissions/`: the real v1.30 conformance JUnit
  and the real v1.21 kind Sonobuoy tarball (tests/fixtures), as they are and in edited copies
  (SCTP outcomes flipped, the timestamp or run log removed or made recent, the release or the
  kube-proxy mode changed, marked emulated, re-timed; tests/domain/ingest/builders.py and
  real_files.py), Hydrophone outputs (.tar.gz, .zip) made of them, small ginkgo v2 files, the
  real dry run and the real 2017 layout; maintainers verify (with or without a run date) or
  reject them through the API;
- maintainers withdraw and reinstate evidence (dashboard.domain.withdrawals, the admin's
  action), record NetworkPolicy exemptions and sign off stages (pages), and time passes across
  READINESS_FRESH_DAYS on a clock the machine holds (time-machine, frozen between steps).

After every step: `evaluate()` succeeds and has no `failures`; the published evaluation
(`publication.published()`, which the API serves byte for byte) equals the plain evaluation
(`Context(plain=True)`) computed at the same `now`, and every plugin's published badge the
plain badge; the evidence heads agree with the history; the policy's invariants hold, read
back from the rows themselves (emulated, unapproved or disabled, rejected or pending,
withdrawn, stale, under-release and unverified self-reported evidence is never counted; a
counted item satisfies the criterion's rule on its own outcomes; one item is counted once; a
criterion is met only with counted evidence it names); and `/`, `/matrix/`, the readiness and
catalog API, the badges and the pages of what the step touched answer 200 to an anonymous
visitor, a maintainer and a vendor. A refused operation (an API 4xx, a domain refusal) changes
no evidence table: a snapshot of them before and after is compared. Every API answer is also
checked against the schema (tests/conftest.py).

Bounded and deterministic in `make test`: SCTP_MACHINE_EXAMPLES (default 10) examples of
SCTP_MACHINE_STEPS (default 12) steps, derandomized; SCTP_MACHINE_SEED=N draws another
sequence (`@seed`). `make fuzz` runs 200 examples of 30 steps. Each example runs on a
database of its own: the test is transactional (as production: autocommit, on_commit hooks
fire) and the machine's `teardown()` flushes every table and seeds the catalog again, as
Django's TransactionTestCase does between tests.

Measured on the 2-core development machine: the bounded run took 100 s in CI on PostgreSQL
(7 Dec 2026) and 98 s on SQLite with other work running. With the fix of issue 36 undone (`Assessment.stale_only`
without its `dated` condition), the bounded run fails in its first examples with the issue's
TypeError ("unsupported format string passed to NoneType.__format__" in
iptables_and_ipvs.py), shrunk to: a vendor uploads an edited copy of the real v1.30 JUnit with
its timestamp removed and pod-to-service passed, declared as a counted release, and a
maintainer verifies it without entering a run date.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import time_machine
from django.conf import settings as dj_settings
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.serializers.json import DjangoJSONEncoder
from django.test import Client
from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from dashboard.domain import heads, publication
from dashboard.domain.badges import plugin_status
from dashboard.domain.catalog import (
    ALL_KEYS,
    BASIC_KEYS,
    CONNECTIVITY_KEYS,
    TRANSITIONS,
    keys_of,
)
from dashboard.domain.catalog import (
    seed as seed_catalog,
)
from dashboard.domain.ingest.upstream_names import RELEASE_NAMES
from dashboard.domain.models import (
    AuditEvent,
    CatalogTest,
    Cluster,
    EvidenceHead,
    Plugin,
    PublishedReadiness,
    Run,
    Schedule,
    SignOff,
    Submission,
    TestResult,
    Vendor,
)
from dashboard.domain.policy import lb_skip_counts, min_minor
from dashboard.domain.readiness import Context, current_stage, evaluate
from dashboard.domain.roles import maintainers_group
from dashboard.domain.schedules import ScheduleError, create_schedule, set_enabled
from dashboard.domain.withdrawals import CorrectionError, reinstate, withdraw
from tests.domain.ingest import builders as b
from tests.domain.ingest import real_files as rf
from tests.kubeconfigs import token_kubeconfig
from tests.task_layer import SENT
from tests.uploads import SCTP

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = int(os.environ.get("SCTP_MACHINE_EXAMPLES", "10"))
STEPS = int(os.environ.get("SCTP_MACHINE_STEPS", "12"))
SEED = os.environ.get("SCTP_MACHINE_SEED", "").strip()
# SCTP_MACHINE_VERBOSE=1 prints every example's steps as they run.
VERBOSE = bool(os.environ.get("SCTP_MACHINE_VERBOSE"))

# The machine's clock starts here in every example (frozen: only `time_passes` moves it).
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

API = "/api/v1/"
PROXIERS = ["iptables", "ipvs", "nftables"]
# Releases under and over the floor (READINESS_MIN_KUBERNETES, 1.34 by default).
RELEASES = ["1.34.2", "1.33.1", "1.35.0", "1.32.0", "1.31.4", "1.21.1"]
VENDORS = {  # vendor name -> its plugins (issue_token creates kindnet: out-of-tree, NetworkPolicy)
    "calico inc": ("calico",),
    "cilium inc": ("cilium", "kindnet"),
    "flannel inc": ("flannel", "kubenet"),
}
PLUGINS = ["calico", "cilium", "kindnet", "flannel", "kubenet"]
OWNER = {slug: name for name, slugs in VENDORS.items() for slug in slugs}
# Who acts for which plugin: mostly a vendor for its own plugin, sometimes the maintainer,
# sometimes a vendor for a plugin that is not its own (refused with 403).
ACTORS = (
    [(OWNER[p], p) for p in PLUGINS] * 2
    + [("maintainer", p) for p in PLUGINS]
    + [("calico inc", "cilium"), ("flannel inc", "calico")]
)
# Who uploads: a vendor for its own plugin, now and then for another's or a maintainer (403).
UPLOADERS = [(OWNER[p], p) for p in PLUGINS] + [("calico inc", "cilium"), ("maintainer", "calico")]
STATUS_CHOICES = ["passed", "passed", "passed", "failed", "skipped", "not_selected"]
RUN_OUTCOMES = ["passed", "passed", "passed", "passed", "failed", "skipped", "error", "not_run"]
DAYS_AGO = [0.5, 10.0, 60.0, 85.0, 95.0, 200.0]
PERIOD_MINUTES = [60, 24 * 60, 7 * 24 * 60]
STEPS_OF_TIME = [
    timedelta(minutes=10),
    timedelta(hours=6),
    timedelta(days=1),
    timedelta(days=7),
    timedelta(days=30),
    timedelta(days=60),
    timedelta(days=89),
    timedelta(days=91),
    timedelta(days=200),
]

# --- the task layer: runs are run here, by the worker's own code -------------------------


@dataclass(frozen=True)
class FakeResult:
    outcome: str
    reason: str
    evidence: str = ""
    duration: float | None = 2.5
    reached: bool = True


@dataclass(frozen=True)
class FakeReport:
    results: dict[str, FakeResult]
    fingerprint: dict[str, Any]


# --- a stand-in API server: GET /version says the release and whether it is an emulator -----


class _VersionHandler(BaseHTTPRequestHandler):
    """/k/<gitVersion>/<0|1>/version/: {"gitVersion": …} (and "emulated": true for 1)."""

    def do_GET(self) -> None:
        parts = self.path.strip("/").split("/")
        if len(parts) >= 4 and parts[0] == "k" and parts[3] == "version":
            body: dict[str, Any] = {"gitVersion": parts[1], "major": "1"}
            if parts[2] == "1":
                body["emulated"] = True
            status = 200
        else:
            body, status = {"kind": "Status", "code": 404}, 404
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def version_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _VersionHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def kubeconfig(server: str) -> str:
    return token_kubeconfig(server, "machine-token")


# --- the real files -----------------------------------------------------------------------

V130 = b.real_v130()
V121_NAMES = list(RELEASE_NAMES["v1.21"])


def auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Token {token}"}


def jsonable(value: Any) -> Any:
    """What a stored evaluation becomes: encoded as publication.publish() does, decoded back."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


# --- what the evidence tables hold: a refused operation must leave all of it as it was -------

SNAPSHOT_MODELS = (
    Cluster,
    Run,
    TestResult,
    Submission,
    Schedule,
    Plugin,
    Vendor,
    SignOff,
    EvidenceHead,
)
# The audit trail is no evidence table: it records some refusals on purpose (a run sent twice,
# this dashboard's own export sent as a file). Those may be appended by a refusal; nothing else.
REFUSALS_AUDITED = {"submission.duplicate", "submission.refused_export"}
SKIPPED_FIELDS = {"content", "report", "kubeconfig", "kubeconfig_sealed"}


def snapshot() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in SNAPSHOT_MODELS:
        fields = [
            f.attname
            for f in model._meta.concrete_fields
            if f.attname not in SKIPPED_FIELDS and "secret" not in f.attname
        ]
        out[model.__name__] = list(model.objects.order_by("pk").values_list(*fields))
    out["AuditEvent"] = list(AuditEvent.objects.order_by("pk").values_list("pk", "action"))
    out["PublishedReadiness.version"] = list(
        PublishedReadiness.objects.values_list("version", flat=True)
    )
    return out


def same(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What a refusal changed ([] when nothing but the audit entries of refusals was added)."""
    changed = [name for name in before if name != "AuditEvent" and before[name] != after[name]]
    old, new = before["AuditEvent"], after["AuditEvent"]
    if new[: len(old)] != old or any(a not in REFUSALS_AUDITED for _, a in new[len(old) :]):
        changed.append("AuditEvent")
    return changed


# --- references kept in bundles --------------------------------------------------------------


@dataclass(frozen=True)
class ClusterRef:
    name: str
    kind: str  # real | emulated | lab | agent


@dataclass(frozen=True)
class RunRef:
    id: int


@dataclass(frozen=True)
class SubmissionRef:
    id: int


@dataclass(frozen=True)
class ScheduleRef:
    id: int


@dataclass
class Agent:
    """What an in-cluster agent keeps between its runs (its key, nodes, counters)."""

    name: str
    vendor: str
    plugin: str
    key: str
    runs: int = 0
    last_finished: datetime | None = None


# --- strategies --------------------------------------------------------------------------------

# A file's SCTP outcomes: all passed, all failed, or each catalog test its own.
statuses = st.one_of(
    st.just(dict.fromkeys(ALL_KEYS, "passed")),
    st.just({**dict.fromkeys(ALL_KEYS, "failed"), "declare-sctp-ports": "passed"}),
    st.fixed_dictionaries({k: st.sampled_from(STATUS_CHOICES) for k in ALL_KEYS}),
)
run_outcomes = st.fixed_dictionaries({k: st.sampled_from(RUN_OUTCOMES) for k in ALL_KEYS})
fingerprints = st.fixed_dictionaries(
    {
        "proxier": st.sampled_from(["same", "same", "iptables", "ipvs", "nftables", None, "ebpf"]),
        "emulated": st.sampled_from([None, None, None, True, False]),
        "release": st.sampled_from([None, None, *RELEASES]),
        "module": st.sampled_from(["clean", "clean", "loaded", "unchecked", "mixed"]),
    }
)
run_ends = st.sampled_from(["finished", "finished", "finished", "unreached", "crash"])
# When the file says its run happened: not at all (half the files: re-packed, or a harness that
# does not write it), as the real file says, or some days before the clock.
times = st.one_of(st.none(), st.sampled_from(["kept", *DAYS_AGO]))
SOURCES = [
    "v130",
    "v130",
    "v130",
    "synthetic",
    "synthetic",
    "hydrophone-tar",
    "hydrophone-zip",
    "v121",
    "v121",
    "dry-run",
    "v010",
]
uploads_ = st.fixed_dictionaries(
    {
        "actor": st.sampled_from(UPLOADERS),
        "source": st.sampled_from(SOURCES),
        "statuses": statuses,
        "when": times,
        "release": st.sampled_from(RELEASES),
        "proxier": st.sampled_from(PROXIERS),
        "file_proxier": st.sampled_from([None, None, *PROXIERS]),
        "emulated": st.sampled_from([False, False, False, True]),
        "salt": st.integers(0, 3),
        "gzip": st.booleans(),
    }
)

# A maintainer's decision on one submission (a vendor's attempt now and then: 403).
reviews = st.fixed_dictionaries(
    {
        "verify": st.sampled_from([True, True, True, False]),
        "maintainer": st.sampled_from([True, True, True, False]),
        "reason": st.sampled_from(["looked at the logs", ""]),
        "run_date": st.sampled_from(["", "", "", *DAYS_AGO, "tomorrow", "+1"]),
    }
)


class EvidenceMachine(RuleBasedStateMachine):
    clusters = Bundle("clusters")
    runs = Bundle("runs")
    submissions = Bundle("submissions")
    schedules = Bundle("schedules")

    def __init__(self, world: dict[str, Any]) -> None:
        super().__init__()
        self.version_url: str = world["version_server"]
        self.traveller = time_machine.travel(T0, tick=False)
        self.clock = self.traveller.start()
        self.names = itertools.count(1)
        self.agents: dict[str, Agent] = {}
        self.touched: list[str] = []  # pages of what the last step changed
        self.planned: dict[int, Callable[[], FakeReport]] = {}
        SENT.clear()
        publication._memo.clear()
        publication._forget_look()
        world["machine"] = self
        # The people: a maintainer and three vendors with tokens, as an operator makes them.
        self.tokens: dict[str, str] = {"maintainer": self._issue("--maintainer", "maria")}
        for name, slugs in VENDORS.items():
            self.tokens[name] = self._issue("--vendor", name, "--plugins", ",".join(slugs))
        users = get_user_model().objects
        self.maintainer_user = users.get(username="maria")
        assert self.maintainer_user.groups.filter(pk=maintainers_group().pk).exists()
        self.vendor_user = users.create_user("victor", password="victor-password")
        Vendor.objects.get(name="calico inc").members.add(self.vendor_user)
        self.api = Client()
        self.anonymous = Client()
        self.as_maintainer = Client()
        self.as_vendor = Client()
        self._log_in()

    def _issue(self, *args: str) -> str:
        out = io.StringIO()
        call_command("issue_token", *args, stdout=out, stderr=io.StringIO())
        return out.getvalue().strip().splitlines()[-1]

    def _log_in(self) -> None:
        self.as_maintainer.force_login(self.maintainer_user)
        self.as_vendor.force_login(self.vendor_user)

    def teardown(self) -> None:
        """Every table emptied and the catalog seeded again (TransactionTestCase's reset), the
        process's copy of the publication forgotten, the clock given back."""
        try:
            call_command("flush", verbosity=0, interactive=False)
            seed_catalog(CatalogTest, Plugin)
            publication._memo.clear()
            publication._forget_look()
        finally:
            self.traveller.stop()

    # --- helpers ----------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return datetime.now(UTC)

    def token(self, actor: str) -> str:
        return self.tokens[actor]

    def call(
        self, method: str, path: str, actor: str | None, expect: set[int], **kwargs: Any
    ) -> Any:
        """One API call; a refusal (4xx) must have changed no evidence table."""
        before = snapshot()
        headers = auth(self.token(actor)) if actor else {}
        response = getattr(self.api, method)(API + path, **kwargs, **headers)
        status = response.status_code
        assert status < 500, (
            f"{method.upper()} {path} answered {status}: {response.content[:500]!r}"
        )
        assert status in expect, (
            f"{method.upper()} {path} answered {status}: {response.content[:300]!r}"
        )
        if status >= 400:
            changed = same(before, snapshot())
            assert not changed, f"refused {method.upper()} {path} ({status}) changed {changed}"
        return response

    def refused_by_domain(self, action: Callable[[], Any], *errors: type[Exception]) -> bool:
        """Runs a domain action; True when it was refused (one of `errors`), having changed nothing."""
        before = snapshot()
        try:
            action()
        except errors:
            changed = same(before, snapshot())
            assert not changed, f"a refused {action} changed {changed}"
            return True
        return False

    def cluster(self, ref: ClusterRef) -> Cluster:
        return Cluster.objects.select_related("plugin", "owner").get(name=ref.name)

    def _run_planned(self, run_id: int) -> None:
        """Whatever the domain sent the task layer to run, run by the worker's own code."""
        from workers.runner import execute

        execute(run_id, worker="machine")
        while SENT:
            task, args = SENT.pop(0)
            if task.endswith("execute_run") and args and args[0] in self.planned:
                execute(args[0], worker="machine")

    def plan(
        self, run_id: int, cluster: Cluster, outcomes: dict[str, str], fp: dict[str, Any], end: str
    ) -> None:
        battery = Run.objects.values_list("battery", flat=True).get(pk=run_id)
        results = {
            k: FakeResult(
                outcomes[k],
                "no SCTP load balancer (bare metal)"
                if outcomes[k] == "skipped" and k == "pod-to-loadbalancer"
                else f"{k} {outcomes[k]}",
                reached=not (end == "unreached" and k == keys_of(battery)[-1]),
            )
            for k in keys_of(battery)
        }
        fingerprint = self.fingerprint(cluster, fp)

        def report() -> FakeReport:
            if end == "crash":
                raise RuntimeError("the cluster went away")
            return FakeReport(results, fingerprint)

        self.planned[run_id] = report

    def fingerprint(self, cluster: Cluster, fp: dict[str, Any]) -> dict[str, Any]:
        proxier = {"same": cluster.proxier, "ebpf": "ebpf (cilium)"}.get(
            fp["proxier"], fp["proxier"]
        )
        emulated = fp["emulated"]
        if emulated is None:
            emulated = cluster.emulated or cluster.lab
        module = {
            "clean": {"node-a": False, "node-b": False},
            "loaded": {"node-a": True, "node-b": True},
            "unchecked": {},
            "mixed": {"node-a": True, "node-b": None},
        }[fp["module"]]
        return {
            "proxier_detected": proxier,
            "emulated": bool(emulated),
            "kubernetes_version": "v" + (fp["release"] or cluster.kubernetes_version or "1.34.2"),
            "sctp_module_before": module,
            "cni_detected": cluster.plugin.slug,
            "node_names": ["node-a", "node-b"],
        }

    # --- clusters ------------------------------------------------------------------------------

    @initialize(target=clusters, plugin=st.sampled_from(PLUGINS), proxier=st.sampled_from(PROXIERS))
    def a_vendor_registers_a_real_cluster(self, plugin: str, proxier: str) -> Any:
        return self._register("real", OWNER[plugin], plugin, proxier, "1.34.2", True, False)

    @rule(
        target=clusters,
        kind=st.sampled_from(["real", "real", "real", "emulated", "lab"]),
        actor=st.sampled_from(ACTORS),
        proxier=st.sampled_from(PROXIERS),
        release=st.sampled_from(RELEASES),
        declare=st.booleans(),
        taken=st.booleans(),
    )
    def register_cluster(
        self,
        kind: str,
        actor: tuple[str, str],
        proxier: str,
        release: str,
        declare: bool,
        taken: bool,
    ) -> Any:
        who, plugin = actor
        return self._register(kind, who, plugin, proxier, release, declare, taken)

    def _register(
        self,
        kind: str,
        who: str,
        plugin: str,
        proxier: str,
        release: str,
        declare: bool,
        taken: bool,
    ) -> Any:
        existing = list(Cluster.objects.order_by("pk").values_list("name", flat=True)[:1])
        taken = taken and bool(existing) and kind != "lab"  # (`lab --register` updates by name)
        name = existing[0] if taken else f"{kind}-{next(self.names)}"
        if kind == "lab":
            from dashboard.domain.lab_clusters import register
            from lab.server import LabServer
            from tests.labtools import profile

            server = LabServer(
                [profile(name=name, plugin=plugin, proxier=proxier, kubernetes_version=release)],
                tls=False,
            )
            register(server)  # `manage.py lab --register`: creates, or updates a lab cluster
            self.touched = [f"/clusters/{name}/"]
            return ClusterRef(name, "lab")
        emulated = "1" if kind == "emulated" else "0"
        form = {
            "name": name,
            "plugin": plugin,
            "plugin_version": "1.0.0",
            "proxier": proxier,
            "node_access": "true",
            "kubeconfig": kubeconfig(f"{self.version_url}/k/v{release}/{emulated}"),
        }
        if declare:
            form["kubernetes_version"] = release
        response = self.call("post", "clusters/", who, {201, 403, 409}, data=form)
        if response.status_code != 201:
            return multiple()
        body = response.json()
        assert body["approved"] is (who == "maintainer")
        assert body["emulated"] is (kind == "emulated")
        self.touched = [f"/clusters/{name}/"]
        return ClusterRef(name, kind)

    @rule(
        cluster=clusters,
        decision=st.sampled_from(
            [
                "approve",
                "approve",
                "owner approves",
                "revoke",
                "revoke without a reason",
                "basic-only",
                "not basic-only",
                "disable",
                "enable",
            ]
        ),
    )
    def cluster_trust(self, cluster: ClusterRef, decision: str) -> None:
        """A maintainer approves (API) or revokes the approval of a cluster, or makes it basic-only
        (pages); an owner tries to approve its own (403); an operator disables or enables it (what
        the admin's cluster form saves)."""
        c = self.cluster(cluster)
        self.touched = [f"/clusters/{c.name}/"]
        if decision in ("approve", "owner approves"):
            actor = "maintainer" if decision == "approve" else OWNER[c.plugin.slug]
            response = self.call("post", f"clusters/{c.name}/approve", actor, {200, 403, 409})
            if response.status_code == 200:
                assert self.cluster(cluster).approved
            else:
                assert decision == "owner approves" or not c.enabled
        elif decision.startswith("revoke"):
            reason = "" if decision.endswith("reason") else "the kubeconfig leaked"
            response = self.as_maintainer.post(
                f"/clusters/{c.name}/approve/", {"action": "revoke", "reason": reason}
            )
            assert response.status_code == 302, response.status_code
            assert not self.cluster(cluster).approved
        elif decision.endswith("basic-only"):
            value = not decision.startswith("not")
            response = self.as_maintainer.post(
                f"/clusters/{c.name}/basic-only/", {"basic_only": "true" if value else "false"}
            )
            assert response.status_code == 302, response.status_code
            assert self.cluster(cluster).basic_only is value
        else:
            c.enabled = decision == "enable"
            c.save(update_fields=["enabled"])

    @rule(
        cluster=clusters,
        by=st.sampled_from(["owner", "owner", "maintainer", "stranger"]),
        change=st.sampled_from(["proxier", "kubernetes_version", "plugin", "plugin_version"]),
        proxier=st.sampled_from(PROXIERS),
        release=st.sampled_from(RELEASES),
        plugin=st.sampled_from(PLUGINS),
    )
    def edit_cluster(
        self, cluster: ClusterRef, by: str, change: str, proxier: str, release: str, plugin: str
    ) -> None:
        c = self.cluster(cluster)
        owner = c.owner.name if c.owner else "calico inc"
        actor = {"owner": owner, "maintainer": "maintainer"}.get(
            by, next(v for v in VENDORS if v != owner)
        )
        value = {"proxier": proxier, "kubernetes_version": release, "plugin": plugin}.get(
            change, "2.0.0"
        )
        approved = c.approved
        response = self.call(
            "patch",
            f"clusters/{c.name}/",
            actor,
            {200, 400, 403},
            data=json.dumps({change: value}),
            content_type="application/json",
        )
        if response.status_code == 200:
            after, changes = self.cluster(cluster), response.json()["changes"]
            if actor == "maintainer" and changes:
                assert after.approved, "a maintainer's change approves"
            elif "plugin" in changes and actor != "maintainer":
                assert not after.approved, "a vendor's change of plugin clears the approval"
            else:
                assert after.approved == approved
        self.touched = [f"/clusters/{c.name}/"]

    # --- runs -----------------------------------------------------------------------------

    @rule(
        target=runs,
        cluster=clusters,
        by=st.sampled_from(["owner", "owner", "maintainer", "stranger"]),
        battery=st.sampled_from(["all", "all", "basic", "connectivity"]),
        outcomes=run_outcomes,
        fp=fingerprints,
        end=run_ends,
    )
    def request_a_run(
        self,
        cluster: ClusterRef,
        by: str,
        battery: str,
        outcomes: dict[str, str],
        fp: dict[str, Any],
        end: str,
    ) -> Any:
        c = self.cluster(cluster)
        owner = c.owner.name if c.owner else None
        actor = {"owner": owner or "maintainer", "maintainer": "maintainer"}.get(
            by, next(v for v in VENDORS if v != owner)
        )
        response = self.call(
            "post",
            f"clusters/{c.name}/runs/",
            actor,
            {202, 403, 409, 429},
            data={"battery": battery},
            content_type="application/json",
        )
        if response.status_code != 202:
            return multiple()
        run_id = response.json()["run"]
        self.plan(run_id, c, outcomes, fp, end)
        self._run_planned(run_id)
        run = Run.objects.get(pk=run_id)
        assert run.state in (Run.State.FINISHED, Run.State.ERROR), run.state
        assert run.state == Run.State.ERROR or end == "finished"
        self.touched = [f"/runs/{run_id}/", f"/clusters/{c.name}/"]
        return RunRef(run_id)

    @rule(
        target=schedules,
        cluster=clusters,
        battery=st.sampled_from(["basic", "basic", "all"]),
        interval=st.sampled_from(PERIOD_MINUTES),
    )
    def schedule(self, cluster: ClusterRef, battery: str, interval: int) -> Any:
        c = self.cluster(cluster)
        made: list[Schedule] = []

        def create() -> None:
            made.append(
                create_schedule(
                    c,
                    battery=battery,
                    interval_minutes=interval,
                    grace_minutes=10,
                    user=self.maintainer_user,
                )
            )

        if self.refused_by_domain(create, ScheduleError):
            return multiple()
        return ScheduleRef(made[0].pk)

    @rule(schedule=schedules, enabled=st.booleans())
    def pause_or_resume(self, schedule: ScheduleRef, enabled: bool) -> None:
        set_enabled(Schedule.objects.get(pk=schedule.id), enabled, user=self.maintainer_user)

    @rule(target=runs, schedule=schedules, outcomes=run_outcomes, fp=fingerprints, end=run_ends)
    def beat_fires(
        self, schedule: ScheduleRef, outcomes: dict[str, str], fp: dict[str, Any], end: str
    ) -> Any:
        """Beat's entry point for the schedule (nothing when it is paused, its cluster disabled
        or basic-only for this battery, or its last run is recent)."""
        from dashboard.domain.runs import RunRequestError
        from workers.tasks import start_scheduled

        started: list[int | None] = []
        if self.refused_by_domain(
            lambda: started.append(start_scheduled(schedule.id)), RunRequestError
        ):
            return multiple()
        run_id = started[0]
        if run_id is None:
            return multiple()
        c = Cluster.objects.select_related("plugin").get(runs__pk=run_id)
        self.plan(run_id, c, outcomes, fp, end)
        self._run_planned(run_id)
        self.touched = [f"/runs/{run_id}/", f"/clusters/{c.name}/"]
        return RunRef(run_id)

    # --- the in-cluster agent -------------------------------------------------------------

    @rule(
        target=clusters,
        actor=st.sampled_from([(OWNER[p], p) for p in PLUGINS]),
        proxier=st.sampled_from(PROXIERS),
    )
    def agent_first_contact(self, actor: tuple[str, str], proxier: str) -> Any:
        vendor, plugin = actor
        name = f"agent-{next(self.names)}"
        agent = Agent(name, vendor, plugin, key=f"{name}-key-" + "k" * 32)
        run = self._agent_post(agent, proxier, dict.fromkeys(ALL_KEYS, "passed"), False)
        if run is None:
            return multiple()
        self.agents[name] = agent
        return ClusterRef(name, "agent")

    @precondition(lambda self: bool(self.agents))
    @rule(
        target=runs,
        cluster=clusters,
        proxier=st.sampled_from(PROXIERS),
        outcomes=run_outcomes,
        emulated=st.sampled_from([False, False, True]),
    )
    def agent_posts_a_run(
        self, cluster: ClusterRef, proxier: str, outcomes: dict[str, str], emulated: bool
    ) -> Any:
        agent = self.agents.get(cluster.name) or Agent(
            cluster.name, "calico inc", "calico", key="not-this-clusters-agent-" + "x" * 32
        )
        run_id = self._agent_post(agent, proxier, outcomes, emulated)
        return RunRef(run_id) if run_id is not None else multiple()

    def _agent_post(
        self, agent: Agent, proxier: str, outcomes: dict[str, str], emulated: bool
    ) -> int | None:
        n = agent.runs + 1
        started = self.now - timedelta(hours=2)
        if agent.last_finished is not None:
            started = max(started, agent.last_finished + timedelta(seconds=30))
        finished = started + timedelta(minutes=4)
        base = 1000 * n
        results = {
            k: {
                "outcome": outcomes[k],
                "reason": "no SCTP load balancer" if k == "pod-to-loadbalancer" else "agent",
                "duration": 2.0,
            }
            for k in ALL_KEYS
        }
        body = {
            "cluster": agent.name,
            "plugin": agent.plugin,
            "plugin_version": "1.0.0",
            "kubernetes_version": "1.34.1",
            "proxier": proxier,
            "battery": "all",
            "started": started.isoformat(),
            "finished": finished.isoformat(),
            "fingerprint": {
                "emulated": emulated,
                "proxier_detected": proxier,
                "cni_detected": agent.plugin,
                "node_access": True,
                "sctp_module_before": {"node-a": False},
                "node_names": ["node-a", "node-b"],
                "facts": {
                    "nodes": {"node-a": f"boot-{agent.name}-a", "node-b": f"boot-{agent.name}-b"},
                    "resource_version": str(base),
                    "objects": [
                        {
                            "kind": "Pod",
                            "name": f"p{i}",
                            "uid": str(uuid.UUID(int=base * 10 + i)),
                            "resource_version": str(base + i),
                        }
                        for i in (1, 2)
                    ],
                },
            },
            "results": results,
            "errors": [],
            "agent_version": "1",
        }
        response = self.call(
            "post",
            "agent-runs/",
            agent.vendor,
            {201, 403, 409, 422},
            data=json.dumps(body),
            content_type="application/json",
            HTTP_X_AGENT_KEY=agent.key,
        )
        if response.status_code != 201:
            return None
        agent.runs, agent.last_finished = n, finished
        run_id: int = response.json()["run"]
        self.touched = [f"/runs/{run_id}/", f"/clusters/{agent.name}/"]
        return run_id

    @rule(run=runs, maintainer=st.booleans())
    def verify_agent_run(self, run: RunRef, maintainer: bool) -> None:
        actor = "maintainer" if maintainer else "calico inc"
        self.call(
            "post",
            f"runs/{run.id}/verify",
            actor,
            {200, 403, 409},
            data={"reason": "the vendor's logs agree"},
            content_type="application/json",
        )
        self.touched = [f"/runs/{run.id}/"]

    # --- submissions ----------------------------------------------------------------------------

    @initialize(target=submissions, files=st.lists(uploads_, min_size=1, max_size=3))
    def vendors_upload_their_first_files(self, files: list[dict[str, Any]]) -> Any:
        return self.upload(files)

    @rule(target=submissions, files=st.lists(uploads_, min_size=1, max_size=3))
    def upload(self, files: list[dict[str, Any]]) -> Any:
        """Vendors send one to three files (POST submissions/), each a new submission or refused."""
        accepted = []
        for u in files:
            ref = self._upload_one(u)
            if ref is not None:
                accepted.append(ref)
        return multiple(*accepted)

    def _upload_one(self, upload: dict[str, Any]) -> SubmissionRef | None:
        who, plugin = upload["actor"]
        data, filename, release = self.result_file(upload)
        form = {
            "plugin": plugin,
            "plugin_version": "1.0.0",
            "kubernetes_version": release,
            "proxier": upload["proxier"],
            "file": SimpleUploadedFile(filename, data),
        }
        response = self.call(
            "post", "submissions/", who, {201, 400, 403, 409, 413, 422, 429}, data=form
        )
        if response.status_code != 201:
            return None
        body = response.json()
        assert body["status"] == "pending_review"
        self.touched = [f"/submissions/{body['id']}/", "/submissions/"]
        return SubmissionRef(body["id"])

    def stamp(self, when: Any, fmt: str = "%Y-%m-%dT%H:%M:%S") -> str | None:
        return (self.now - timedelta(days=when)).strftime(fmt) if isinstance(when, float) else None

    def result_file(self, u: dict[str, Any]) -> tuple[bytes, str, str]:
        """(bytes, file name, the release to declare) of the upload `u` describes."""
        source, when, release = u["source"], u["when"], u["release"]
        if source in ("v130", "hydrophone-tar", "hydrophone-zip"):
            doc = b.with_sctp_statuses(V130, u["statuses"])
            if when != "kept":
                doc = b.with_timestamp(doc, self.stamp(when))
            if u["emulated"]:
                doc = b.with_suite_properties(doc, {"emulated": "true"})
            doc = b.retimed(doc, u["salt"])
            if source == "hydrophone-tar":
                log = b.e2e_log(server=f"v{release}")
                return b.tar_gz({"e2e.log": log, "junit_01.xml": doc}), "hydrophone.tar.gz", release
            if source == "hydrophone-zip":
                log = b.e2e_log(server=f"v{release}")
                return b.zip_bytes({"e2e.log": log, "junit_01.xml": doc}), "hydrophone.zip", release
            if u["gzip"]:
                return gzip.compress(doc, mtime=0), "junit_01.xml.gz", release
            return doc, "junit_01.xml", release
        if source == "synthetic":
            cases = [(name, u["statuses"][key]) for key, name in SCTP.items()]
            cases.append((f"[sig-node] unrelated spec {u['salt']}", "passed"))
            stamp = b.TIMESTAMP if when == "kept" else self.stamp(when)
            doc = b.junit_v2(cases, timestamp=stamp)
            if u["emulated"]:
                doc = b.with_suite_properties(doc, {"emulated": "true"})
            return doc, "junit_01.xml", release
        if source == "v121":
            run_at: str | bool | None = True if when == "kept" else None
            if isinstance(when, float):
                run_at = self.stamp(when, "%Y-%m-%dT%H:%M:%SZ")
            data = rf.edited_v121(
                u["statuses"],
                run_at=run_at,
                release=None if release == "1.21.1" else f"v{release}",
                proxier=u["file_proxier"],
                mtime=T0.timestamp() + u["salt"],
            )
            return data, "202108171704_sonobuoy_1f2e.tar.gz", release
        if source == "dry-run":
            return rf.real(rf.DRY_RUN), "testResultsOutput-dryrun.tar.gz", "1.14.2"
        return rf.edited(rf.V010, add=V121_NAMES), "results-0.10.tar.gz", "1.8.4"

    @rule(sub=submissions, decision=reviews)
    def review(self, sub: SubmissionRef, decision: dict[str, Any]) -> None:
        """One submission verified (with or without a run date) or rejected, through the API."""
        self._review(sub.id, decision)

    @precondition(lambda self: Submission.objects.filter(status="pending_review").exists())
    @rule(decisions=st.lists(reviews, min_size=1, max_size=4))
    def review_queue(self, decisions: list[dict[str, Any]]) -> None:
        """The maintainer on duty works through the oldest pending submissions."""
        pending = Submission.objects.filter(status="pending_review").order_by("created", "pk")
        for sub_id, decision in zip(pending.values_list("pk", flat=True), decisions, strict=False):
            self._review(sub_id, decision)

    def _review(self, sub_id: int, decision: dict[str, Any]) -> None:
        body = {"reason": decision["reason"]}
        run_date = decision["run_date"]
        if isinstance(run_date, float):
            body["run_date"] = self.stamp(run_date, "%Y-%m-%d") or ""
        elif run_date == "+1":
            body["run_date"] = (self.now + timedelta(days=1)).strftime("%Y-%m-%d")
        elif run_date:
            body["run_date"] = run_date
        actor = "maintainer" if decision["maintainer"] else "calico inc"
        verify = decision["verify"]
        path = f"submissions/{sub_id}/{'verify' if verify else 'reject'}"
        response = self.call(
            "post", path, actor, {200, 400, 403}, data=body, content_type="application/json"
        )
        if response.status_code == 200:
            assert response.json()["status"] == ("verified" if verify else "rejected")
        self.touched = [f"/submissions/{sub_id}/", "/submissions/"]

    # --- corrections, exemptions, sign-offs ----------------------------------------------

    @rule(
        run=runs,
        back=st.booleans(),
        reason=st.sampled_from(["the cluster was misconfigured", ""]),
    )
    def withdraw_or_reinstate_run(self, run: RunRef, back: bool, reason: str) -> None:
        self._correct(Run.objects.get(pk=run.id), back, reason, f"/runs/{run.id}/")

    @rule(
        sub=submissions,
        back=st.booleans(),
        reason=st.sampled_from(["the vendor asked", ""]),
    )
    def withdraw_or_reinstate_submission(self, sub: SubmissionRef, back: bool, reason: str) -> None:
        self._correct(Submission.objects.get(pk=sub.id), back, reason, f"/submissions/{sub.id}/")

    def _correct(self, obj: Run | Submission, back: bool, reason: str, page: str) -> None:
        """A maintainer withdraws `obj` (or reinstates it: `back`); the domain may refuse."""
        action = reinstate if back else withdraw
        self.refused_by_domain(
            lambda: action(obj, actor=self.maintainer_user, reason=reason), CorrectionError
        )
        self.touched = [page]

    @rule(
        plugin=st.sampled_from(PLUGINS),
        reason=st.sampled_from(["", "flannel never enforces NetworkPolicy", "clear"]),
    )
    def netpol_exemption(self, plugin: str, reason: str) -> None:
        data = {"action": "clear"} if reason == "clear" else {"reason": reason}
        before = snapshot()
        response = self.as_maintainer.post(f"/plugins/{plugin}/netpol-exemption/", data)
        assert response.status_code == 302, response.status_code
        if not reason:  # refused: an exemption needs a reason
            assert not same(before, snapshot())
        self.touched = [f"/plugins/{plugin}/"]

    @rule(
        comment=st.sampled_from(["the evidence is enough", ""]),
        release=st.sampled_from(["1.34", "v1.35", "next"]),
        override=st.sampled_from(["", "the gaps are known and accepted"]),
        wrong_stage=st.sampled_from([False, False, False, True]),
    )
    def sign_off(self, comment: str, release: str, override: str, wrong_stage: bool) -> None:
        stage = current_stage()
        nxt = next((t for t in TRANSITIONS if t["from"] == stage), None)
        if nxt is None or wrong_stage:
            pair = ("alpha", "stable")
        else:
            pair = (nxt["from"], nxt["to"])
        data = {"from_stage": pair[0], "to_stage": pair[1], "comment": comment}
        data["kubernetes_release"] = release
        if override:
            data.update(override="confirmed", override_reason=override)
        before = snapshot()
        count = SignOff.objects.count()
        response = self.as_maintainer.post("/review/signoff/", data)
        assert response.status_code in (200, 302, 400), response.status_code
        if SignOff.objects.count() == count:
            assert not same(before, snapshot()), "a sign-off that was not made changed evidence"
        else:
            assert current_stage() == pair[1]
        self.touched = ["/", "/badge/stage.svg"]

    # --- time --------------------------------------------------------------------------------

    @rule(step=st.sampled_from(STEPS_OF_TIME))
    def time_passes(self, step: timedelta) -> None:
        self.clock.shift(step)
        self._log_in()  # sessions expire: the people log in again
        self.touched = []

    # --- what must hold after every step ------------------------------------------------------

    @invariant()
    def the_evaluation_holds_and_the_published_one_agrees(self) -> None:
        evaluation = evaluate()
        assert not evaluation.get("failures"), evaluation.get("failures")
        published = publication.published()
        assert not published.get("failures"), published.get("failures")
        at = datetime.fromisoformat(published["evaluated_at"])
        assert at <= self.now
        plain = jsonable(evaluate(Context(now=at, plain=True)))
        assert published == plain, "the published evaluation is not the plain one at its time"
        for plugin in Plugin.objects.all():
            mine = plugin_status(plugin, at)
            assert publication.published_badge(plugin.slug) is not None, plugin.slug
            badge = publication.published_badge(plugin.slug) or {}
            assert (badge["status"], badge["message"], badge["why"]) == (
                mine.status,
                mine.message,
                mine.why,
            ), plugin.slug
        self.check_policy(jsonable(evaluation), self.now)
        assert heads.stale() == [], "evidence heads out of date"

    @invariant()
    def every_page_answers(self) -> None:
        badges = [f"/badge/{slug}.svg" for slug in Plugin.objects.values_list("slug", flat=True)]
        pages = ["/", "/matrix/", "/api/v1/readiness/", "/api/v1/catalog/", "/badge/stage.svg"]
        extra = ["/badge/calico.svg?proxier=ipvs", "/submissions/", "/clusters/"]
        for who, client in (
            ("anonymous", self.anonymous),
            ("maintainer", self.as_maintainer),
            ("vendor", self.as_vendor),
        ):
            paths = pages + self.touched + (badges + extra if who == "anonymous" else [])
            if who == "maintainer":
                paths += ["/review/", "/review/report.md"]
            for path in paths:
                response = client.get(path)
                assert response.status_code == 200, (
                    f"{path} answered {response.status_code} to {who}"
                )
        served = self.anonymous.get("/api/v1/readiness/").json()
        assert served == publication.published(), "the API serves another evaluation"
        # People do not act at the same instant: a few seconds go by before the next step (two
        # sign-offs made at one microsecond would tie in every "newest first" ordering).
        self.clock.shift(timedelta(seconds=7))

    # --- the policy's invariants, read back from the rows ---------------------------------

    def check_policy(self, evaluation: dict[str, Any], now: datetime) -> None:
        cutoff = now - timedelta(days=dj_settings.READINESS_FRESH_DAYS)
        floor = min_minor()
        for transition in evaluation["transitions"]:
            assert transition["ready"] == all(c["status"] == "met" for c in transition["criteria"])
            for crit in transition["criteria"]:
                key = crit["key"]
                assert crit["status"] in ("met", "unmet", "at_risk", "stale"), crit["status"]
                entries = list(crit["evidence"])
                seen = [(e["kind"], e["id"]) for e in entries]
                assert len(seen) == len(set(seen)), f"{key}: an item is listed twice"
                for mode, verdict in (crit.get("proxiers") or {}).items():
                    for e in verdict["evidence"]:
                        self.check_counted(e, key, cutoff, floor, mode=mode)
                for e in entries:
                    self.check_counted(e, key, cutoff, floor)
                counted = [e for e in entries if e["counts"]]
                # `stale` says "only evidence older than the window": dated, and old. (Evidence
                # with no time has an unknown age, not an old one: issue 36.)
                complete = crit["evidence_total"] == len(entries)
                if crit["status"] == "stale" and key != "periodic-basic-passing" and complete:
                    assert any(self.old(e, cutoff) for e in entries), (
                        f"{key} is stale with no dated evidence older than the window"
                    )
                for mode, verdict in (crit.get("proxiers") or {}).items():
                    if verdict["status"] == "stale":
                        assert any(self.old(e, cutoff) for e in verdict["evidence"]), (
                            f"{key}: {mode} is stale with no dated evidence older than the window"
                        )
                if crit["status"] == "met":
                    assert counted, f"{key} is met with no counted evidence"
                self.check_met(crit, counted)

    def old(self, e: dict[str, Any], cutoff: datetime) -> bool:
        """The item has a time, and it is older than the evidence window."""
        if e["kind"] == "run":
            when = Run.objects.values_list("finished", flat=True).get(pk=e["id"])
        else:
            when = Submission.objects.values_list("run_at", flat=True).get(pk=e["id"])
        return when is not None and when < cutoff

    def check_counted(
        self, e: dict[str, Any], key: str, cutoff: datetime, floor: int, mode: str | None = None
    ) -> None:
        if not e["counts"]:
            return
        where = f"{key}: {e['kind']} {e['id']} counted"
        assert e["emulated"] is False, f"{where} though emulated"
        aged = key != "periodic-basic-passing"  # the periodic criterion has its own age rule
        if e["kind"] == "run":
            run = Run.objects.select_related("cluster", "plugin").get(pk=e["id"])
            c = run.cluster
            assert run.state == Run.State.FINISHED, f"{where} though it ended {run.state}"
            assert run.withdrawn_at is None, f"{where} though withdrawn"
            assert c.approved and c.enabled, f"{where} on an unapproved or disabled cluster"
            emulated = (
                run.emulated or c.emulated or c.lab or (run.fingerprint or {}).get("emulated")
            )
            assert not emulated, f"{where} though emulated"
            assert run.trigger != Run.Trigger.AGENT or run.agent_verified_at, (
                f"{where} though self-reported and not verified"
            )
            assert (run.kubernetes_minor or 0) >= floor, (
                f"{where} on Kubernetes 1.{run.kubernetes_minor}"
            )
            if aged:
                assert run.finished is not None and run.finished >= cutoff, f"{where} though stale"
            outcomes = dict(run.results.values_list("test_key", "outcome"))
            reasons = dict(run.results.values_list("test_key", "reason"))
            slug, in_tree = run.plugin.slug, run.plugin.in_tree
            proxier = run.proxier_detected
            plugin = run.plugin
        else:
            sub = Submission.objects.select_related("plugin").get(pk=e["id"])
            assert sub.status == Submission.Status.VERIFIED, f"{where} though {sub.status}"
            assert sub.withdrawn_at is None, f"{where} though withdrawn"
            assert not sub.emulated, f"{where} though emulated"
            assert (sub.kubernetes_minor or 0) >= floor, (
                f"{where} on Kubernetes 1.{sub.kubernetes_minor}"
            )
            assert sub.run_at is not None, f"{where} though nobody knows when it ran"
            assert sub.run_at >= cutoff, f"{where} though stale"
            results = sub.results or {}
            outcomes = {k: (v or {}).get("outcome", "") for k, v in results.items()}
            reasons = {k: (v or {}).get("reason", "") or "" for k, v in results.items()}
            slug, in_tree, proxier, plugin = (
                sub.plugin.slug,
                sub.plugin.in_tree,
                sub.proxier,
                sub.plugin,
            )

        def outcome(k: str) -> str:
            return outcomes.get(k) or "not_run"

        if key == "tests-written":
            lb = outcome("pod-to-loadbalancer") == "skipped" and lb_skip_counts(
                reasons.get("pod-to-loadbalancer", "")
            )
            assert lb or any(outcome(k) in ("passed", "failed") for k in ALL_KEYS), (
                f"{where} with no verdict"
            )
        elif key == "periodic-basic-passing":
            assert e["kind"] == "run", f"{where}: only runs are periodic"
            bad = [k for k in BASIC_KEYS if outcome(k) in ("failed", "error")]
            assert not bad and any(outcome(k) == "passed" for k in BASIC_KEYS), (
                f"{where} though not a conclusive basic run: {outcomes}"
            )
        elif key == "two-out-of-tree-plugins":
            assert not in_tree, f"{where} for in-tree {slug}"
            assert not any(outcome(k) in ("failed", "error") for k in CONNECTIVITY_KEYS), (
                f"{where} with a connectivity failure: {outcomes}"
            )
            exempt = not plugin.implements_network_policy and bool(plugin.netpol_exemption_reason)
            needed = ["pod-to-pod", "pod-to-service"] + ([] if exempt else ["netpol-allow-deny"])
            assert all(outcome(k) == "passed" for k in needed), f"{where}: {outcomes}"
        elif key == "iptables-and-ipvs":
            assert outcome("pod-to-service") == "passed", (
                f"{where}: pod-to-service {outcome('pod-to-service')}"
            )
            assert proxier in PROXIERS, f"{where} with no demonstrated proxier"
            if mode is not None:
                assert proxier == mode, f"{where} for {mode}, demonstrated {proxier}"

    def check_met(self, crit: dict[str, Any], counted: list[dict[str, Any]]) -> None:
        key, status = crit["key"], crit["status"]
        if key == "two-out-of-tree-plugins" and status in ("met", "at_risk"):
            rows = [r for r in crit["rows"] if r["status"].startswith("counted")]
            assert len(rows) >= 2, f"{key} {status} with {len(rows)} counted plugins"
            items = [(r["qualifying"]["kind"], r["qualifying"]["id"]) for r in rows]
            assert len(items) == len(set(items)), f"{key}: one item counted for two plugins"
            for r in rows:
                assert r["qualifying"]["counts"] and not r["in_tree"], r
                model = Run if r["qualifying"]["kind"] == "run" else Submission
                owner = model.objects.values_list("plugin__slug", flat=True).get(
                    pk=r["qualifying"]["id"]
                )
                assert owner == r["plugin"], f"{key}: {r['plugin']} counted with {owner}'s evidence"
        if key == "iptables-and-ipvs" and status == "met":
            for mode in ("iptables", "ipvs"):
                verdict = crit["proxiers"][mode]
                assert verdict["status"] == "met", f"{key} met with {mode} {verdict['status']}"
                assert any(e["counts"] for e in verdict["evidence"]), f"{key} met, {mode} uncounted"
        if key == "tests-written" and status == "met":
            for row in crit["rows"]:
                e = row.get("evidence")
                assert e and e["counts"], f"{key} met; {row['key']} has no counted evidence"
        if key == "periodic-basic-passing" and status == "met":
            runs = [e for e in counted if e["kind"] == "run"]
            assert len(runs) >= dj_settings.READINESS_PERIODIC_RUNS, (
                f"{key} met with {len(runs)} runs"
            )
            schedules = set(
                Run.objects.filter(pk__in=[e["id"] for e in runs]).values_list(
                    "schedule", flat=True
                )
            )
            assert None not in schedules, f"{key} met with a run no schedule made"
            assert Schedule.objects.filter(pk__in=schedules, enabled=True).exists(), (
                f"{key} met with no enabled schedule"
            )


# --- the test ----------------------------------------------------------------------------------


@pytest.fixture
def machine_settings(settings, monkeypatch):
    """No limits in the way (the machine's clock is frozen: every request is in one window),
    and the task layer is the machine's own (the worker's code runs the runs here)."""
    settings.API_RATE_LIMIT_TOKEN = settings.API_RATE_LIMIT_IP = "1000000/60"
    settings.CLUSTER_REGISTER_RATE_LIMIT = "1000000/3600"
    settings.TASKS_SEND = "tests.task_layer.record_send"
    settings.RUN_HEARTBEAT_SECONDS = 3600  # the heartbeat thread only ever sees the run end
    machines: dict[str, Any] = {}

    def battery(run: Run, beat: Any) -> FakeReport:
        return machines["machine"].planned.pop(run.id)()

    monkeypatch.setattr("workers.runner._run_battery", battery)
    return machines


def test_no_sequence_of_what_people_do_breaks_the_verdict(machine_settings, version_server):
    world = machine_settings
    world["version_server"] = version_server

    def factory() -> EvidenceMachine:
        return EvidenceMachine(world)

    if SEED:
        factory = seed(int(SEED))(factory)
    run_state_machine_as_test(
        factory,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            derandomize=not SEED,
            deadline=None,
            database=None,
            print_blob=bool(SEED),
            phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
            suppress_health_check=list(HealthCheck),
            verbosity=Verbosity.debug if VERBOSE else Verbosity.normal,
        ),
    )
