from __future__ import annotations

import pytest

from dashboard.domain.ingest.report import CatalogResult, qualifying
from dashboard.domain.ingest.upstream_names import CATALOG_KEYS


def results(**outcomes: str) -> dict[str, CatalogResult]:
    base = {key: CatalogResult("not_run") for key in CATALOG_KEYS}
    for key, outcome in outcomes.items():
        base[key.replace("_", "-")] = CatalogResult(outcome)
    return base


GOOD = {"pod_to_pod": "passed", "pod_to_service": "passed", "netpol_allow_deny": "passed"}


def test_a_plugin_with_network_policy_qualifies_when_all_three_passed():
    assert qualifying(results(**GOOD), True) == (
        True,
        "pod-to-pod, pod-to-service and netpol-allow-deny passed",
    )


def test_a_plugin_with_network_policy_needs_netpol_allow_deny_passed():
    ok, why = qualifying(results(**{**GOOD, "netpol_allow_deny": "skipped"}), True)
    assert not ok and "netpol-allow-deny skipped" in why


def test_a_plugin_without_network_policy_needs_a_maintainers_exemption():
    from dashboard.domain.policy import PluginFacts

    ok, why = qualifying(results(**{**GOOD, "netpol_allow_deny": "skipped"}), False)
    assert not ok and "does not implement NetworkPolicy and has no exemption" in why
    exempt = PluginFacts("flannel", False, False, netpol_exemption="SIG Network decision")
    assert qualifying(results(**{**GOOD, "netpol_allow_deny": "skipped"}), exempt)[0] is True
    assert qualifying(results(pod_to_pod="passed", pod_to_service="passed"), exempt)[0] is True


@pytest.mark.parametrize("outcome", ["passed", "skipped", "not_run"])
def test_the_load_balancer_test_is_not_required(outcome):
    assert qualifying(results(**GOOD, pod_to_loadbalancer=outcome), True)[0] is True


@pytest.mark.parametrize("key", ["pod_to_loadbalancer", "netpol_allow_deny"])
@pytest.mark.parametrize("outcome", ["failed", "error"])
def test_any_failed_connectivity_test_disqualifies_even_when_not_required(key, outcome):
    ok, why = qualifying(results(**{**GOOD, key: outcome}), False)
    assert not ok and f"{key.replace('_', '-')} {outcome}" in why


def test_basic_test_failures_do_not_matter_for_connectivity_evidence():
    assert qualifying(results(**GOOD, declare_sctp_ports="failed"), True)[0] is True


def test_pod_to_pod_not_run_disqualifies():
    ok, why = qualifying(results(pod_to_service="passed", netpol_allow_deny="passed"), True)
    assert not ok and "pod-to-pod not run" in why
