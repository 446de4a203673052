"""lab/patch.py's server-side apply: ownership per field manager, upstream's conflict between
appliers (409, word for word) and `force` taking the fields over. The real kubectl does the
same in tests/lab/test_kubectl.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from lab.errors import ApiError
from lab.patch import field_path, server_side_apply

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
        'Apply failed with 1 conflict: conflict with "kubectl": .spec.ports[port=5060].targetPort'
    )
    assert error.details == {
        "causes": [
            {
                "type": "FieldManagerConflict",
                "message": 'conflict with "kubectl"',
                "field": ".spec.ports[port=5060].targetPort",
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
        'conflicts with "helm":\n- .metadata.labels.app\n- .spec.selector.app\n'
        'conflicts with "kubectl":\n- .metadata.labels.app\n- .spec.selector.app\n'
        "- .spec.ports[port=5060].name"
    )


def test_force_takes_the_fields_from_their_managers() -> None:
    live = server_side_apply("Service", {}, service(), "kubectl", WHEN)
    before = copy.deepcopy(live)
    taken = server_side_apply("Service", live, service(target=5070), "ops", WHEN, force=True)
    assert live == before  # the live object is not modified in place
    assert taken["spec"]["ports"][0]["targetPort"] == 5070
    owners = managers(taken)
    port = 'k:{"port":5060}'
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
