"""Which of upstream's feature labels a cluster lacks: what the `upstream` battery leaves out.

`[Feature:SCTPConnectivity]`, `[Feature:NetworkPolicy]` and `[Feature:IPv6DualStack]` are
labels (test/e2e/feature/feature.go), appended to the specs' text by framework.WithFeature:
e2e.test runs a spec that carries one wherever it is focused, and upstream's own runners (its
CI jobs, Sonobuoy's and Hydrophone's configurations) leave those specs out with
`--ginkgo.skip` on clusters without the feature. The `upstream` battery does the same, and
decides with the same facts as this project's battery, each asked by the one function both
call:

- `[Feature:SCTPConnectivity]`: a counted node's kernel answers "no SCTP sockets" to the
  probe of kernel.battery.kernelsctp (the connectivity tests' skip); a probe that cannot be
  read decides nothing;
- `[Feature:NetworkPolicy]`: the cluster's plugin implements no NetworkPolicy
  (checks._common.network_policy_skip, the netpol tests' skip);
- `[Feature:IPv6DualStack]`: the cluster is single-stack
  (checks.pod_to_service_secondary_family.single_stack_reason, that check's skip).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from kernel.battery import kernelsctp
from kernel.battery.base import BatteryReport, ClusterSpec
from kernel.battery.checks._common import network_policy_skip
from kernel.battery.checks.pod_to_service_secondary_family import single_stack_reason
from kernel.battery.context import RunContext, TestContext, kube_for
from kernel.kube import KubeError, api_error_message

SCTP_CONNECTIVITY = "[Feature:SCTPConnectivity]"
NETWORK_POLICY = "[Feature:NetworkPolicy]"
DUAL_STACK = "[Feature:IPv6DualStack]"
FEATURES = (SCTP_CONNECTIVITY, NETWORK_POLICY, DUAL_STACK)


@dataclass
class LeftOut:
    """The labels to leave out, each with its reason, and what was asked to decide it."""

    features: dict[str, str] = field(default_factory=dict)  # label -> reason
    evidence: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_list(self) -> list[dict[str, str]]:
        return [{"feature": label, "reason": why} for label, why in self.features.items()]


def skip_regex(labels: Iterable[str]) -> str:
    """One `--ginkgo.skip` expression (Go's RE2 and Python alike) for these labels."""
    return "|".join(re.escape(label) for label in labels)


def labels_of(name: str, labels: Iterable[str]) -> list[str]:
    """The given labels a spec's name carries (in its text, as framework.WithFeature puts them)."""
    return [label for label in labels if label in name]


def decide(run: RunContext) -> LeftOut:
    """The three decisions on a RunContext whose cluster is fingerprinted (nodes counted).

    An API error while asking one decides nothing for that label (its specs run)."""
    left = LeftOut()
    netpol = network_policy_skip(run.spec)
    if netpol:
        left.features[NETWORK_POLICY] = netpol
    no_sctp = kernelsctp.skip_reason(run)
    left.evidence.extend(run.kernel_sctp_evidence)
    if no_sctp:
        left.features[SCTP_CONNECTIVITY] = no_sctp
    try:
        ctx = TestContext(run, run.create_namespace("dual-stack"))
        single = single_stack_reason(ctx)
    except (ApiException, KubeError) as exc:
        why = api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
        left.errors.append(f"whether the cluster is dual-stack could not be asked: {why}")
    else:
        left.evidence.append(single or "a RequireDualStack Service got two ClusterIPs")
        if single:
            left.features[DUAL_STACK] = single
    return left


def survey(api_client: k8s.ApiClient, spec: ClusterSpec, run_id: str) -> LeftOut:
    """Fingerprint the cluster as the battery does, decide, delete what was made."""
    from kernel.battery.runner import fingerprint_cluster  # the battery's own (no cycle)

    kube = kube_for(api_client, spec)
    report = BatteryReport(battery="upstream", run_id=run_id)
    run = RunContext(kube, spec, run_id, report)
    left = LeftOut()
    try:
        fingerprint_cluster(run)
        left = decide(run)
    except (ApiException, KubeError) as exc:
        why = api_error_message(exc) if isinstance(exc, ApiException) else str(exc)
        left.errors.append(f"the cluster could not be surveyed: {why}: nothing left out")
    finally:
        for name in list(report.namespaces_created):
            problem = run.delete_namespace(name)
            if problem:
                left.errors.append(problem)
    left.errors.extend(report.errors)
    return left


def as_state(left: LeftOut) -> dict[str, Any]:
    return {
        "left_out": left.as_list(),
        "left_out_evidence": left.evidence[:20],
        "left_out_errors": left.errors[:20],
    }
