"""Whole runs: order, callbacks, cleanup, API faults, timeouts, cancellation, the sweeper."""

from __future__ import annotations

import dataclasses
import logging
import time

import pytest

from kernel.battery import BASIC_KEYS, CONNECTIVITY_KEYS, REGISTRY, sweep_namespaces
from tests.battery_specs import FAST, spec_for


def test_the_registry_holds_the_eight_catalog_tests_in_catalog_order():
    assert list(REGISTRY) == [
        "declare-sctp-ports",
        "hostport-kubenet",
        "service-iptables-rules",
        "netpol-sctp-blocks-tcp-udp",
        "pod-to-pod",
        "pod-to-service",
        "pod-to-loadbalancer",
        "netpol-allow-deny",
    ]
    assert BASIC_KEYS + CONNECTIVITY_KEYS == tuple(REGISTRY)


def test_an_all_run_reports_every_test_in_order_and_removes_its_namespaces(start_lab):
    lab = start_lab(kubenet=True)
    seen, beats = [], []
    started = time.monotonic()
    report = lab.run(
        "all",
        run_id="42",
        on_result=lambda key, outcome: seen.append((key, outcome.outcome)),
        on_progress=lambda: beats.append(1),
    )
    wall = time.monotonic() - started
    extras = ["conformance-tcp-pod-to-service", "conformance-udp-pod-to-service"]
    # the catalog in order, the basic battery's TCP/UDP conformance checks after the basic tests
    # ... and upstream's dual-stack spec, its own outcome, after the connectivity tests
    later = ["pod-to-service-secondary-family"]
    assert [k for k, _ in seen] == list(BASIC_KEYS) + extras + list(CONNECTIVITY_KEYS) + later
    assert all(
        outcome == ("skipped" if key in ("pod-to-loadbalancer", *later) else "passed")
        for key, outcome in seen
    )
    assert len(beats) > 50
    assert lab.battery_namespaces() == []
    assert "sctp-battery-42-pod-to-pod" in report.namespaces_created
    assert report.errors == []
    assert wall < 90, (
        f"an all run against the lab took {wall:.1f}s"
    )  # a hang guard, not a benchmark
    for result in report.results.values():
        assert result.reason and result.started <= result.finished and result.duration >= 0


def test_the_fingerprint_describes_the_cluster_as_probed(start_lab):
    report = start_lab(proxier="ipvs", nodes=3).run("basic")
    fingerprint = report.fingerprint
    assert fingerprint["kubernetes_version"] == "1.31.2"
    assert fingerprint["node_count"] == 3
    assert fingerprint["proxier_declared"] == "ipvs"
    assert fingerprint["kube_proxy_mode"] == "ipvs"
    assert fingerprint["proxier_detected"] is None  # basic: no Service under test carried
    assert fingerprint["node_access"] is True
    assert set(fingerprint["sctp_module_before"]) == set(fingerprint["battery_nodes"])
    assert fingerprint["worker_sctp"]["pysctp_version"] == "0.7.3"


def test_namespaces_carry_the_run_labels_while_the_run_lasts(start_lab):
    lab = start_lab()
    labels = {}

    def look():
        for name in lab.battery_namespaces():
            labels[name] = lab.cluster.namespaces[name]["metadata"]["labels"]

    lab.run("basic", run_id="Run_7", on_progress=look)
    probe_labels = labels["sctp-battery-run-7-probe"]
    assert probe_labels["sctp-dashboard/run-id"] == "run-7"
    assert probe_labels["app.kubernetes.io/managed-by"] == "sctp-dashboard"
    assert set(labels) >= {"sctp-battery-run-7-declare-sctp-ports"}


def test_unknown_batteries_are_refused(start_lab):
    with pytest.raises(ValueError, match="unknown battery 'everything'"):
        start_lab().run("everything")


def test_transient_api_errors_are_retried_and_do_not_change_verdicts(start_lab, caplog):
    caplog.set_level(logging.INFO, logger="kernel.kube")
    report = start_lab(faults={"api_error_rate": 0.1}, seed=3).run("basic")
    # hostport-kubenet runs on every cluster now: nothing of a healthy basic run is skipped.
    assert {r.outcome for r in report.results.values()} == {"passed"}
    assert "transient API error (try 1/4): 500" in caplog.text or "(try 1/4): 503" in caplog.text


def test_an_api_that_keeps_failing_ends_the_test_in_error_with_the_cause(start_lab):
    report = start_lab(faults={"api_error_rate": 0.85}, seed=1).run("basic")
    errors = [r for r in report.results.values() if r.outcome == "error"]
    assert errors
    assert all(
        "API kept failing after 4 tries: 50" in r.reason or "not run" in r.reason for r in errors
    )
    assert all(r.outcome != "passed" or "API" not in r.reason for r in report.results.values())


def test_a_hanging_api_server_ends_every_test_in_error_quickly(start_lab):
    lab = start_lab(faults={"api_timeout": True, "api_timeout_s": 3})
    spec = spec_for(lab.profile, timeouts=dataclasses.replace(FAST, request=0.5))
    started = time.monotonic()
    report = lab.run("all", spec=spec)
    elapsed = time.monotonic() - started
    assert {r.outcome for r in report.results.values()} == {"error"}
    reason = report.results["netpol-allow-deny"].reason
    assert reason.startswith("not run: cluster unreachable after 4 tries: ReadTimeoutError")
    # One request timeout per try for the first call, not one per test.
    assert elapsed < 4 * 0.5 + 2


def test_an_unreachable_server_ends_every_test_in_error(start_lab):
    lab = start_lab()
    lab.server.stop()
    report = lab.run("basic")
    assert {r.outcome for r in report.results.values()} == {"error"}
    assert "cluster unreachable" in report.results["declare-sctp-ports"].reason


def test_pods_that_never_start_end_in_error_never_passed(start_lab):
    lab = start_lab(faults={"stuck_pending": True})
    timeouts = dataclasses.replace(FAST, pod_start=0.3)
    report = lab.run("all", spec=spec_for(lab.profile, timeouts=timeouts))
    assert "passed" not in {r.outcome for r in report.results.values()}
    assert report.results["pod-to-pod"].reason == (
        "pod netserver-0 did not reach Running within 0.3s (phase Pending)"
    )
    assert report.results["hostport-kubenet"].outcome in ("error", "skipped")
    assert lab.battery_namespaces() == []


def test_slow_pods_are_waited_for(start_lab):
    report = start_lab(faults={"pod_start_delay_s": 0.15}).run("connectivity")
    assert report.results["pod-to-pod"].outcome == "passed"


def test_a_cancelled_run_stops_cleans_up_and_says_why_for_the_rest(start_lab):
    lab = start_lab()
    results = []
    report = lab.run(
        "all",
        on_result=lambda key, outcome: results.append(key),
        should_cancel=lambda: len(results) >= 2,
    )
    assert report.cancelled is True
    assert list(report.results) == list(REGISTRY)
    assert report.results["pod-to-pod"].reason == "not run: the run was cancelled"
    assert report.results["pod-to-pod"].reached is False
    assert report.results["declare-sctp-ports"].reached is True
    assert lab.battery_namespaces() == []


def test_a_failing_result_callback_does_not_stop_the_run(start_lab):
    def explode(key, outcome):
        raise RuntimeError("database down")

    report = start_lab().run("basic", on_result=explode)
    assert len(report.results) == 4 + 2  # the basic tests and the TCP/UDP conformance checks
    assert report.errors[0] == "on_result(declare-sctp-ports) raised RuntimeError: database down"


def test_the_sweeper_deletes_namespaces_of_dead_runs_only(start_lab):
    lab = start_lab()
    managed = {"app.kubernetes.io/managed-by": "sctp-dashboard"}
    for name, run_id in [("sctp-battery-live", "live"), ("sctp-battery-dead", "dead")]:
        lab.cluster.create_namespace(
            {"metadata": {"name": name, "labels": {**managed, "sctp-dashboard/run-id": run_id}}}
        )
    lab.cluster.create_namespace({"metadata": {"name": "someone-else", "labels": managed}})
    deleted = sweep_namespaces(lab.api, {"live"})
    assert deleted == ["sctp-battery-dead"]
    assert "sctp-battery-live" in lab.cluster.namespaces
    assert "someone-else" in lab.cluster.namespaces


def test_the_sweeper_spares_a_run_that_started_after_it_read_the_live_runs(start_lab):
    """Issue 23's race: a sweep reads the live runs, a new run starts (on another
    registration of the same cluster), the sweep must not take its namespace away."""
    lab = start_lab()
    managed = {"app.kubernetes.io/managed-by": "sctp-dashboard"}
    lab.cluster.create_namespace(
        {
            "metadata": {
                "name": "sctp-battery-52",
                "labels": {**managed, "sctp-dashboard/run-id": "52"},
            }
        }
    )
    asked = []

    def still_live(label):
        asked.append(label)
        return label == "52"

    assert sweep_namespaces(lab.api, set(), still_live=still_live) == []
    assert asked == ["52"] and "sctp-battery-52" in lab.cluster.namespaces


def test_a_run_declared_without_node_access_needs_no_privileged_pod(start_lab):
    lab = start_lab(node_access=False)
    report = lab.run("all", spec=spec_for(lab.profile))
    assert report.fingerprint["node_access"] is False
    assert report.fingerprint["sctp_module_before"] == {}
