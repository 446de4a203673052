"""The battery's data types: what a cluster is, what a test concludes, what a run reports.

Plain Python (no Django): the Celery task maps these onto models.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from kernel.battery.context import RunContext, TestContext

OUTCOMES = ("passed", "failed", "skipped", "error")
DEFAULT_AGNHOST_IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
NAMESPACE_PREFIX = "sctp-battery-"
RUN_ID_LABEL = "sctp-dashboard/run-id"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "sctp-dashboard"


@dataclass(frozen=True)
class Timeouts:
    """Every wait of the battery is bounded by one of these (seconds).

    Defaults suit real clusters and follow upstream e2e (5 min pod start, 5 min kube-proxy
    lag); the lab registration passes `Timeouts.for_lab()`.
    """

    pod_start: float = 300.0  # pod Pending -> Running / one-shot pod -> Succeeded|Failed
    connect: int = 5  # agnhost connect --timeout and the worker's own SCTP client
    connect_attempts: int = 3  # client pods tried until the expected verdict shows up
    lb_ingress: float = 600.0  # LoadBalancer service -> status.loadBalancer.ingress
    rules_poll: float = 300.0  # kube-proxy programming lag (upstream KubeProxyLagTimeout)
    poll_interval: float = 2.0
    # Between two of a NetworkingTestConfig dial's tries (upstream's hitEndpointRetryDelay).
    dial_retry_delay: float = 2.0
    request: float = 30.0  # one HTTP request to the API server
    # Upstream's netpol prober (test/e2e/network/netpol/kubemanager.go): each cell polled up to
    # defaultPollTimeoutSeconds (10) until the expected result shows, `agnhost connect
    # --timeout` of getProbeTimeoutSeconds (3); waitForHTTPServers' maxTries (10) windows
    # before the servers count as not ready; our probers' pause between two rounds.
    netpol_poll: float = 10.0
    netpol_probe_timeout: int = 3
    netpol_ready_tries: int = 10
    netpol_probe_interval: float = 1.0
    api_tries: int = 4  # transient API errors: tries per call
    api_backoff: float = 1.0  # first retry delay, doubled each try

    @classmethod
    def for_lab(cls) -> Timeouts:
        """Short waits for the in-process lab: a whole `all` run takes seconds."""
        return cls(
            pod_start=3.0,
            connect=1,
            connect_attempts=1,
            lb_ingress=2.0,
            rules_poll=1.0,
            poll_interval=0.02,
            dial_retry_delay=0.02,
            netpol_poll=1.5,
            netpol_probe_timeout=1,
            netpol_probe_interval=0.05,
            # Lab answers take milliseconds, but a lab shares its process with the tests and
            # CI's two cores with coverage and a qemu guest: 2 s timed out there under load.
            request=10.0,
            api_tries=4,
            api_backoff=0.02,
        )


@dataclass
class ClusterSpec:
    """What the dashboard knows about a cluster before testing it (as registered)."""

    name: str
    plugin_slug: str
    plugin_in_tree: bool = False
    implements_network_policy: bool = True
    kubenet: bool = False
    declared_proxier: str = "iptables"
    node_access: bool = True  # declared; a 403 on the hostexec pod overrides it
    load_balancer: bool = False  # declared
    agnhost_image: str = DEFAULT_AGNHOST_IMAGE
    timeouts: Timeouts = field(default_factory=Timeouts)
    namespace_prefix: str = NAMESPACE_PREFIX


@dataclass
class TestOutcome:
    """The verdict of one catalog test (outcome in the contract's vocabulary)."""

    __test__ = False  # not a pytest test class, whatever module imports it

    outcome: str
    reason: str
    evidence: str = ""
    duration: float = 0.0
    started: datetime | None = None
    finished: datetime | None = None
    # False for tests the run never got to (cancelled, cluster unreachable, setup failed):
    # their `error` says why, and the dashboard may show them as not run.
    reached: bool = True

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}")
        if not self.reason.strip():
            raise ValueError("every outcome carries a reason")

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("started", "finished"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


@dataclass
class BatteryReport:
    battery: str
    run_id: str
    results: dict[str, TestOutcome] = field(default_factory=dict)
    fingerprint: dict[str, Any] = field(default_factory=dict)
    namespaces_created: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cancelled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "battery": self.battery,
            "run_id": self.run_id,
            "results": {key: outcome.to_dict() for key, outcome in self.results.items()},
            "fingerprint": self.fingerprint,
            "namespaces_created": list(self.namespaces_created),
            "errors": list(self.errors),
            "cancelled": self.cancelled,
        }


class TestVerdict(Exception):
    """Raised inside a test to end it with an outcome other than `passed`."""

    __test__ = False

    outcome: ClassVar[str] = "error"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TestSkipped(TestVerdict):
    outcome = "skipped"


class TestFailed(TestVerdict):
    outcome = "failed"


class TestError(TestVerdict):
    outcome = "error"


class BatteryTest:
    """One catalog test. Subclasses live one per module in `kernel.battery.checks`."""

    key: ClassVar[str]
    title: ClassVar[str]
    battery: ClassVar[str]  # "basic" | "connectivity"
    needs_node_access: ClassVar[bool] = False

    def skip_reason(self, run: RunContext) -> str | None:
        """Why this cluster cannot run the test, decided before any object is created."""
        return None

    def module_nodes(self, run: RunContext) -> list[str] | None:
        """The nodes upstream's spec reads sctp.ko on (its outcome follows them), or None when
        upstream's spec has no module check (our invariant is then only a fact of the run)."""
        return None

    def run(self, ctx: TestContext) -> str:
        """Run the test; return the short sentence of a pass, raise a TestVerdict otherwise."""
        raise NotImplementedError
