"""make_kubeconfig against the lab: RBAC applied with the caller's access, a time-bound
ServiceAccount token inline, the battery working with it, and renewal before expiry."""

from __future__ import annotations

import stat
import time

import pytest
import yaml
from django.core.management import CommandError, call_command

from dashboard.domain.clusters import register_cluster, renew_registered
from dashboard.domain.models import AuditEvent, Cluster
from kernel import serviceaccount as sa
from kernel.battery import run_battery
from kernel.battery.context import RBAC_PREFIX as PREFIX
from kernel.kubeconfig import api_client_from_kubeconfig, validate_kubeconfig
from lab import rbac as lab_rbac
from lab.server import LabServer
from tests.battery_specs import FAST, profile, spec_for


@pytest.fixture
def lab():
    server = LabServer([profile()]).start()
    yield server
    server.stop()


@pytest.fixture
def caller(lab, tmp_path):
    """The caller's own kubeconfig: cluster-admin on the lab cluster, context `lab`."""
    path = tmp_path / "admin.kubeconfig"
    path.write_text(yaml.safe_dump(lab.kubeconfig("lab")))
    return path


def _make(caller, tmp_path, *extra):
    out = tmp_path / "battery.kubeconfig"
    call_command(
        "make_kubeconfig",
        "--context",
        "lab",
        "--kubeconfig",
        str(caller),
        "--output",
        str(out),
        *extra,
    )
    return out


def _run_all(kubeconfig_text):
    api = api_client_from_kubeconfig(kubeconfig_text, request_timeout=FAST.request)
    try:
        return run_battery(api, spec_for(profile()), "all", "mk-1")
    finally:
        api.close()


def test_it_applies_the_rbac_and_writes_an_inline_token_kubeconfig_the_battery_runs_with(
    lab, caller, tmp_path
):
    out = _make(caller, tmp_path, "--duration", "2h")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    text = out.read_text()
    summary = validate_kubeconfig(text)  # what registration checks: inline, reachable
    assert summary["server"] == lab.cluster_url("lab")
    user = yaml.safe_load(text)["users"][0]["user"]
    assert set(user) == {"token"} and user["token"] != lab.cluster("lab").profile["token"]
    info = sa.token_info(text)
    assert (info.namespace, info.name) == ("sctp-battery", "sctp-battery")
    assert 2 * 3600 - 60 < info.expires - time.time() <= 2 * 3600
    state = lab_rbac.state_of(lab.cluster("lab"))
    assert ("", "sctp-battery") in state.objects["clusterroles"]
    assert ("", "sctp-battery") in state.objects["clusterrolebindings"]
    assert ("sctp-battery", "sctp-battery-token-renewal") in state.objects["rolebindings"]
    report = _run_all(text)
    assert report.errors == []
    assert not [r.reason for r in report.results.values() if PREFIX in r.reason]
    assert all(r.outcome in ("passed", "skipped") for r in report.results.values())


def test_running_it_again_updates_the_roles_and_keeps_the_account(lab, caller, tmp_path, capsys):
    first = _make(caller, tmp_path).read_text()
    # 7 days asked by default; the lab's API server grants at most 48 h, and that is what counts
    left = sa.token_info(first).expires - time.time()
    assert 48 * 3600 - 60 < left <= 48 * 3600
    assert "token valid until" in capsys.readouterr().err
    state = lab_rbac.state_of(lab.cluster("lab"))
    state.objects["clusterroles"][("", "sctp-battery")]["rules"] = []  # drifted
    out = _make(caller, tmp_path, "--name", "prod-east")
    assert state.objects["clusterroles"][("", "sctp-battery")]["rules"]
    assert yaml.safe_load(out.read_text())["current-context"] == "prod-east"


def test_without_a_context_or_with_a_short_duration_it_refuses(caller, tmp_path):
    with pytest.raises(CommandError, match="--context"):
        call_command("make_kubeconfig", "--kubeconfig", str(caller))
    with pytest.raises(CommandError, match="at least 1h"):
        _make(caller, tmp_path, "--duration", "30m")
    with pytest.raises(CommandError, match="not like 90m"):
        _make(caller, tmp_path, "--duration", "a week")
    with pytest.raises(CommandError, match="cannot use context 'nope'"):
        call_command("make_kubeconfig", "--context", "nope", "--kubeconfig", str(caller))


@pytest.mark.django_db
def test_the_beat_task_renews_a_registered_token_a_third_before_expiry(lab, caller, tmp_path):
    text = _make(caller, tmp_path, "--duration", "3h").read_text()
    cluster = register_cluster(
        data={"name": "calico-prod", "plugin": "calico", "proxier": "iptables"},
        kubeconfig=text,
        owner=None,
        allowed_plugin_ids=None,
        actor="maria",
    )
    info = sa.token_info(text)
    assert renew_registered(now=time.time()) == {}  # not due yet: nothing touched
    assert Cluster.objects.get(pk=cluster.pk).kubeconfig == text
    due = info.expires - 3600 + 1  # less than a third of three hours left
    results = renew_registered(now=due)
    assert results["calico-prod"].startswith("renewed until ")
    renewed = Cluster.objects.get(pk=cluster.pk).kubeconfig
    assert renewed != text and sa.token_info(renewed).expires >= info.expires
    assert AuditEvent.objects.filter(action="cluster.token_renewed").count() == 1
    assert _run_all(renewed).errors == []


@pytest.mark.django_db
def test_a_failed_renewal_keeps_the_working_kubeconfig_and_names_the_refusal(lab, caller, tmp_path):
    text = _make(caller, tmp_path, "--duration", "3h").read_text()
    register_cluster(
        data={"name": "calico-prod", "plugin": "calico", "proxier": "iptables"},
        kubeconfig=text,
        owner=None,
        allowed_plugin_ids=None,
        actor="maria",
    )
    # the vendor removed the renewal binding
    lab_rbac.state_of(lab.cluster("lab")).objects["rolebindings"].clear()
    results = renew_registered(now=sa.token_info(text).expires - 60)
    assert 'cannot create resource "serviceaccounts/token"' in results["calico-prod"]
    assert Cluster.objects.get(name="calico-prod").kubeconfig == text
    assert validate_kubeconfig(text)  # still works until it expires


@pytest.mark.django_db
def test_renew_rewrites_the_file_and_the_registered_cluster(lab, caller, tmp_path):
    out = _make(caller, tmp_path, "--duration", "1h")
    before = out.read_text()
    register_cluster(
        data={"name": "calico-prod", "plugin": "calico", "proxier": "iptables"},
        kubeconfig=before,
        owner=None,
        allowed_plugin_ids=None,
        actor="maria",
    )
    call_command("make_kubeconfig", "--renew", str(out), "--cluster", "calico-prod")
    after = out.read_text()
    assert after != before and validate_kubeconfig(after)
    assert Cluster.objects.get(name="calico-prod").kubeconfig == after
    with pytest.raises(CommandError, match="not a ServiceAccount token"):
        call_command("make_kubeconfig", "--renew", str(caller))


@pytest.mark.django_db
def test_clusters_without_a_serviceaccount_token_are_left_alone(lab):
    from tests import factories

    factories.cluster("exec-free", kubeconfig=yaml.safe_dump(lab.kubeconfig("lab")))  # static token
    factories.cluster("broken", kubeconfig="{not: yaml: at all")
    assert renew_registered(now=time.time() + 10 * 365 * 86400) == {}
