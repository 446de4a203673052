"""The shipped ClusterRole is enough for the whole battery, and every verb in it is needed.

The lab enforces RBAC when a profile names a role file: its token is then the battery's
ServiceAccount bound to that role only, and every other request gets the API server's 403.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kernel.battery import run_battery, sweep_namespaces
from kernel.battery.context import RBAC_PREFIX as PREFIX
from kernel.battery.context import rbac_reason
from kernel.kubeconfig import api_client_from_kubeconfig
from lab.server import LabServer
from tests.battery_specs import FAST, profile, spec_for
from tests.rbac_roles import ROLE_FILE, permissions, shipped_role, without

SA = "system:serviceaccount:sctp-battery:sctp-battery"
# A cluster older than 1.21 (no EndpointSlices: the battery reads Endpoints) with the gate on.
LEGACY = {"name": "legacy", "kubernetes_version": "1.20.15"}


@pytest.fixture
def role_file(tmp_path: Path) -> Iterator[Any]:
    def write(role: dict[str, Any], name: str = "role.yaml") -> str:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(role))
        return str(path)

    yield write


def _run(prof, battery="all"):
    with LabServer([prof]) as lab:
        api = api_client_from_kubeconfig(
            yaml.safe_dump(lab.kubeconfig(prof["name"])), request_timeout=FAST.request
        )
        try:
            report = run_battery(api, spec_for(prof), battery, "rbac-1")
            swept: BaseException | list[str]
            try:
                swept = sweep_namespaces(api, set(), request_timeout=FAST.request)
            except Exception as exc:  # the test inspects it
                swept = exc
        finally:
            api.close()
    return report, swept


def _outcomes(report):
    return {key: (r.outcome, r.reason) for key, r in report.results.items()}


@pytest.mark.parametrize("changes", [{}, LEGACY], ids=["current", "before-1.21"])
def test_the_whole_battery_runs_under_the_shipped_role_as_under_cluster_admin(changes, role_file):
    admin_report, _ = _run(profile(**changes))
    report, swept = _run(profile(**changes, rbac=str(ROLE_FILE)))
    assert swept == [], swept
    assert report.errors == []
    got = _outcomes(report)
    assert not [r for r in got.values() if PREFIX in r[1]]
    assert {k: o for k, (o, _) in got.items()} == {
        k: o for k, (o, _) in _outcomes(admin_report).items()
    }
    assert all(o in ("passed", "skipped") for o, _ in got.values()), got


@pytest.mark.parametrize(
    "index,verb,name",
    permissions(shipped_role()),
    ids=[p[2].replace('"', "") for p in permissions(shipped_role())],
)
def test_removing_any_verb_makes_the_battery_name_the_missing_permission(
    index, verb, name, role_file
):
    path = role_file(without(shipped_role(), index, verb))
    changes = LEGACY if name == "get endpoints" else {}
    # the basic battery first (quicker); the whole battery when basic never needs the verb
    report, swept = _run(profile(**changes, rbac=path), battery="basic")
    outside_tests = name == "list namespaces" or name.startswith(
        ("list daemonsets", "list configmaps")
    )
    if not outside_tests and not [
        r for r in report.results.values() if f"{PREFIX}{name} (" in r.reason
    ]:
        report, swept = _run(profile(**changes, rbac=path))
    if name == "list namespaces":  # only the sweeper of dead runs' namespaces lists them
        assert rbac_reason(swept).startswith(f"{PREFIX}{name} ("), swept
        return
    if name.startswith("list daemonsets"):  # CNI detection: a fingerprint fact, not a test
        assert report.fingerprint["cni_detected"] is None
        assert (
            'cannot list resource "daemonsets" in API group "apps"'
            in report.fingerprint["cni_detection_error"]
        )
        return
    if name.startswith("list configmaps"):  # the CNI's mode: a fingerprint fact
        assert (
            'cannot list resource "configmaps" in API group ""'
            in report.fingerprint["cni_configmaps_error"]
        )
        return
    named = {k: r for k, r in report.results.items() if f"{PREFIX}{name} (" in r.reason}
    assert named, _outcomes(report)
    assert all(r.outcome == "error" for r in named.values()), _outcomes(report)
    # never a verdict about the cluster drawn from a refusal of our own credentials
    assert not [k for k, r in report.results.items() if r.outcome == "failed"], _outcomes(report)


def _raw(lab, name, method, path, token=None, body=None):
    request = urllib.request.Request(
        f"{lab.cluster_url(name)}{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={
            "Authorization": f"Bearer {token or lab.cluster(name).profile['token']}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=5, context=lab.client_context()) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_lab_words_a_refusal_as_the_rbac_authorizer_does(role_file):
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "empty"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    prof = profile(rbac=role_file(role))
    with LabServer([prof]) as lab:
        code, status = _raw(
            lab, "lab", "POST", "/api/v1/namespaces/x/pods", body={"metadata": {"name": "p"}}
        )
        assert code == 403
        assert status == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'pods is forbidden: User "{SA}" cannot create resource "pods" in API '
            'group "" in the namespace "x"',
            "reason": "Forbidden",
            "details": {"kind": "pods"},
            "code": 403,
        }
        code, status = _raw(
            lab, "lab", "DELETE", "/apis/networking.k8s.io/v1/namespaces/x/networkpolicies/deny"
        )
        assert status["message"] == (
            f'networkpolicies.networking.k8s.io "deny" is forbidden: User "{SA}" cannot delete '
            'resource "networkpolicies" in API group "networking.k8s.io" in the namespace "x"'
        )
        assert status["details"] == {
            "kind": "networkpolicies",
            "name": "deny",
            "group": "networking.k8s.io",
        }
        code, status = _raw(lab, "lab", "GET", "/api/v1/nodes")
        assert status["message"].endswith(
            'cannot list resource "nodes" in API group "" at the cluster scope'
        )
        code, status = _raw(lab, "lab", "GET", "/api/v1/namespaces/x/pods/p/log")
        assert 'cannot get resource "pods/log" in API group ""' in status["message"]
        code, status = _raw(lab, "lab", "GET", "/version")
        assert (code, status["message"], status["details"]) == (
            403,
            f'forbidden: User "{SA}" cannot get path "/version"',
            {},
        )
        # allowed: answered as usual (404: there is no such pod)
        code, status = _raw(lab, "lab", "GET", "/api/v1/namespaces/default/pods/nope")
        assert (code, status["reason"]) == (404, "NotFound")
        assert _raw(lab, "lab", "GET", "/api/v1/nodes", token="forged")[0] == 401


def test_a_profile_naming_an_unreadable_role_file_is_refused(tmp_path):
    bad = tmp_path / "role.yaml"
    bad.write_text("kind: ConfigMap\n")
    with pytest.raises(ValueError, match="no ClusterRole"):
        LabServer([profile(rbac=str(bad))])


def test_every_call_the_battery_makes_on_any_lab_profile_is_granted_and_every_grant_is_used(
    monkeypatch,
):
    """Recorded under cluster-admin (so nothing is swallowed as a refusal): each request the
    battery and the sweeper make is allowed by the shipped role, and each verb is needed."""
    from lab import rbac
    from lab.profiles import load_profiles

    seen: list[rbac.Attributes] = []
    real = rbac.authorize

    def record(cluster, who, method, path, query):
        seen.append(rbac.attributes(method, path, query))
        return real(cluster, who, method, path, query)

    monkeypatch.setattr(rbac, "authorize", record)
    profiles = [
        dict(p, faults={**p["faults"], "pod_start_delay_s": 0.01})
        for p in load_profiles(ROLE_FILE.parents[2] / "lab" / "profiles")
    ]
    for prof in [*profiles, profile(**LEGACY), profile(kubenet=True)]:
        _run(prof)
    rules = shipped_role()["rules"]
    allowed = [a for a in seen if any(rbac._allows(rule, a) for rule in rules)]
    refused = {(a.verb, a.api_group, a.resource, a.subresource, a.path) for a in seen} - {
        (a.verb, a.api_group, a.resource, a.subresource, a.path) for a in allowed
    }
    assert refused == set()
    for index, rule in enumerate(rules):
        for verb in rule["verbs"]:
            narrowed = {**rule, "verbs": [verb]}
            assert any(rbac._allows(narrowed, a) for a in seen), (
                f"rule {index} grants {verb} unused"
            )


def test_a_profile_file_names_its_role_relative_to_itself_or_to_the_repository(
    tmp_path, monkeypatch
):
    from lab.profiles import load_profiles

    monkeypatch.chdir(ROLE_FILE.parents[2])
    (tmp_path / "roles").mkdir()
    (tmp_path / "roles" / "mine.yaml").write_text(ROLE_FILE.read_text())
    (tmp_path / "a.yaml").write_text("plugin: calico\nrbac: deploy/rbac/battery-role.yaml\n")
    (tmp_path / "b.yaml").write_text("plugin: calico\nrbac: roles/mine.yaml\n")
    a, b = load_profiles(tmp_path)
    assert Path(a["rbac"]).resolve() == ROLE_FILE
    assert Path(b["rbac"]) == tmp_path / "roles" / "mine.yaml"
    with LabServer([a, b]) as lab:
        code, status = _raw(lab, "a", "GET", "/api/v1/namespaces/x/services/s")
        assert (code, status["reason"]) == (404, "NotFound")  # allowed, and there is none
        code, status = _raw(lab, "b", "DELETE", "/api/v1/nodes/n")
        assert code == 403 and 'cannot delete resource "nodes"' in status["message"]


def test_a_profile_may_name_the_rbac_directory_itself():
    rbac_dir = ROLE_FILE.parent
    report, swept = _run(profile(rbac=str(rbac_dir)), battery="basic")
    assert swept == [] and report.errors == []
    assert not [r for r in report.results.values() if PREFIX in r.reason]
