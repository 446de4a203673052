"""lab/patch.py's server-side apply and lab/managedfields.py's Update entries: ownership per
field manager, upstream's conflict (409, word for word) with an applier or with the manager of
a create, update or patch, and `force` taking the fields over. The real kubectl does the same
in tests/lab/test_kubectl.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lab import managedfields
from lab.errors import ApiError
from lab.patch import field_path, server_side_apply, strategic_merge

WHEN = "2026-12-02T10:00:00Z"


def service(port_name: str = "sctp", target: int = 5060, app: str = "echo") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "echo", "labels": {"app": app}},
        "spec": {
            "selector": {"app": app},
            "ports": [{"name": port_name, "port": 5060, "protocol": "SCTP", "targetPort": target}],
        },
    }


def managers(obj: dict[str, Any]) -> dict[str, Any]:
    return {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_another_applier_changing_a_field_is_refused_naming_the_field_and_its_manager() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    with pytest.raises(ApiError) as refused:
        server_side_apply("Service", live, service(target=5070), "ops", WHEN)
    error = refused.value
    assert error.code == 409 and error.reason == "Conflict"
    assert error.message == (
        'Apply failed with 1 conflict: conflict with "kubectl": '
        '.spec.ports[port=5060,protocol="SCTP"].targetPort'
    )
    assert error.details == {
        "causes": [
            {
                "type": "FieldManagerConflict",
                "message": 'conflict with "kubectl"',
                "field": '.spec.ports[port=5060,protocol="SCTP"].targetPort',
            }
        ]
    }


def test_the_same_values_are_shared_and_a_manager_changes_its_own_fields_freely() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    shared = server_side_apply("Service", live, service(), "ops", WHEN)
    owners = managers(shared)
    assert set(owners) == {"kubectl", "ops"}
    assert owners["kubectl"] == owners["ops"]
    mine = server_side_apply("Service", live, service(target=5070), "kubectl", WHEN)
    assert mine["spec"]["ports"][0]["targetPort"] == 5070


def test_several_conflicts_are_listed_by_manager_as_upstream_prints_them() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    live = server_side_apply(
        "Service", live, {**service(), "spec": {"selector": {"app": "echo"}}}, "helm", WHEN
    )
    with pytest.raises(ApiError) as refused:
        server_side_apply("Service", live, service(port_name="main", app="other"), "ops", WHEN)
    assert refused.value.message == (
        "Apply failed with 5 conflicts: "
        'conflicts with "helm":\n- .metadata.labels.app\n- .spec.selector\n'
        'conflicts with "kubectl":\n- .metadata.labels.app\n- .spec.selector\n'
        '- .spec.ports[port=5060,protocol="SCTP"].name'
    )


def test_force_takes_the_fields_from_their_managers() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    before = copy.deepcopy(live)
    taken = server_side_apply("Service", live, service(target=5070), "ops", WHEN, force=True)
    assert live == before  # the live object is not modified in place
    assert taken["spec"]["ports"][0]["targetPort"] == 5070
    owners = managers(taken)
    port = 'k:{"port":5060,"protocol":"SCTP"}'
    assert "f:targetPort" in owners["ops"]["f:spec"]["f:ports"][port]
    assert "f:targetPort" not in owners["kubectl"]["f:spec"]["f:ports"][port]
    assert "f:name" in owners["kubectl"]["f:spec"]["f:ports"][port]


def test_a_manager_that_loses_every_field_leaves_the_list() -> None:
    small = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "echo"},
        "spec": {"selector": {"app": "echo"}},
    }
    live = server_side_apply("Service", {}, small, "kubectl", WHEN)
    moved = {**small, "spec": {"selector": {"app": "other"}}}
    taken = server_side_apply("Service", live, moved, "ops", WHEN, force=True)
    assert set(managers(taken)) == {"ops"}


def test_field_paths_print_as_upstream_prints_them() -> None:
    assert field_path(("f:spec", "f:replicas")) == ".spec.replicas"
    assert field_path(("f:spec", "f:containers", 'k:{"name":"nginx"}', "f:image")) == (
        '.spec.containers[name="nginx"].image'
    )


# ------------------------------------------------------------------ Update entries


def test_the_manager_is_the_field_manager_else_the_user_agents_first_word() -> None:
    agent = "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9"
    assert managedfields.manager_name("kubectl-create", agent) == "kubectl-create"
    assert managedfields.manager_name(None, agent) == "kubectl"
    assert managedfields.manager_name("", "Go-http-client/1.1") == "Go-http-client"
    assert managedfields.manager_name(None, "my\ttool/1") == "mytool"  # unprintable: dropped
    assert managedfields.manager_name(None, "x" * 200) == "x" * 128
    assert managedfields.manager_name(None, None) == ""


def test_a_create_records_an_update_entry_with_the_fields_it_set() -> None:
    made = service()
    entries = managedfields.record_update("Service", None, made, "kubectl-create", WHEN)
    assert entries == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": WHEN,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:selector": {},  # an atomic map: one leaf
                    "f:ports": {
                        ".": {},  # a list the create added, as upstream marks it
                        'k:{"port":5060,"protocol":"SCTP"}': {
                            ".": {},
                            "f:name": {},
                            "f:port": {},
                            "f:protocol": {},
                            "f:targetPort": {},
                        },
                    },
                },
            },
        }
    ]


def created(obj: dict[str, Any], manager: str = "kubectl-create") -> dict[str, Any]:
    live = copy.deepcopy(obj)
    live["metadata"]["managedFields"] = managedfields.record_update(
        "Service", None, live, manager, WHEN
    )
    return live


def test_an_applier_changing_a_field_of_the_creator_meets_upstreams_conflict() -> None:
    live = created(service())
    with pytest.raises(ApiError) as refused:
        server_side_apply("Service", live, service(port_name="main"), "ops", WHEN)
    assert refused.value.code == 409
    assert refused.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-create" using v1: '
        '.spec.ports[port=5060,protocol="SCTP"].name'
    )
    assert refused.value.details == {
        "causes": [
            {
                "type": "FieldManagerConflict",
                "message": 'conflict with "kubectl-create" using v1',
                "field": '.spec.ports[port=5060,protocol="SCTP"].name',
            }
        ]
    }
    # the same values are shared without a conflict; --force-conflicts takes the field
    shared = server_side_apply("Service", live, service(), "ops", WHEN)
    assert set(managers(shared)) == {"ops", "kubectl-create"}
    taken = server_side_apply("Service", live, service(port_name="main"), "ops", WHEN, force=True)
    owners = managers(taken)
    port = 'k:{"port":5060,"protocol":"SCTP"}'
    assert "f:name" in owners["ops"]["f:spec"]["f:ports"][port]
    assert "f:name" not in owners["kubectl-create"]["f:spec"]["f:ports"][port]
    assert [e["operation"] for e in taken["metadata"]["managedFields"]] == ["Apply", "Update"]


def test_a_patch_takes_the_fields_it_changes_from_an_applier() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    later = "2026-12-02T10:05:00Z"
    edited = strategic_merge(
        "Service", live, {"spec": {"ports": [{"port": 5060, "targetPort": 5070}]}}
    )
    entries = managedfields.record_update("Service", live, edited, "kubectl-edit", later)
    edited["metadata"]["managedFields"] = entries
    owners = managers(edited)
    port = 'k:{"port":5060,"protocol":"SCTP"}'
    assert owners["kubectl-edit"] == {"f:spec": {"f:ports": {port: {"f:targetPort": {}}}}}
    assert "f:targetPort" not in owners["kubectl"]["f:spec"]["f:ports"][port]
    assert entries[-1]["time"] == later
    # the applier now meets the editor when it applies its old value again
    with pytest.raises(ApiError) as refused:
        server_side_apply("Service", edited, service(), "kubectl", WHEN)
    assert refused.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: '
        '.spec.ports[port=5060,protocol="SCTP"].targetPort'
    )


def test_several_conflicts_group_appliers_and_updaters_by_their_identifiers() -> None:
    live = created(service(), "kubectl-create")
    live = server_side_apply("Service", live, service(), "helm", WHEN)
    with pytest.raises(ApiError) as refused:
        server_side_apply("Service", live, service(port_name="main", target=5070), "ops", WHEN)
    port = '.spec.ports[port=5060,protocol="SCTP"]'
    assert refused.value.message == (
        "Apply failed with 4 conflicts: "
        f'conflicts with "helm":\n- {port}.name\n- {port}.targetPort\n'
        f'conflicts with "kubectl-create" using v1:\n- {port}.name\n- {port}.targetPort'
    )


def test_removed_fields_leave_every_manager_and_an_empty_entry_leaves_the_list() -> None:
    live = created(service(), "kubectl-create")
    live = server_side_apply(
        "Service", live, {**service(), "spec": {"selector": {"app": "echo"}}}, "helm", WHEN
    )
    trimmed = copy.deepcopy(live)
    del trimmed["spec"]["selector"]
    del trimmed["metadata"]["labels"]
    trimmed["spec"]["ports"][0]["name"] = "main"
    entries = managedfields.record_update("Service", live, trimmed, "kubectl-replace", WHEN)
    owners = {e["manager"]: e["fieldsV1"] for e in entries}
    assert "helm" not in owners  # it owned only what was removed
    assert "f:selector" not in owners["kubectl-create"]["f:spec"]
    assert "f:metadata" not in owners["kubectl-create"]
    assert owners["kubectl-replace"] == {
        "f:spec": {"f:ports": {'k:{"port":5060,"protocol":"SCTP"}': {"f:name": {}}}}
    }


def test_a_request_may_reset_the_managed_fields_and_a_no_op_keeps_the_time() -> None:
    live = created(service(), "kubectl-create")
    reset = copy.deepcopy(live)
    reset["metadata"]["managedFields"] = []
    assert managedfields.record_update("Service", live, reset, "tool", WHEN) == []
    same = copy.deepcopy(live)
    later = "2026-12-02T11:00:00Z"
    again = managedfields.record_update("Service", live, same, "kubectl-create", later)
    assert again == live["metadata"]["managedFields"]
