"""deploy/: every kustomization renders with `kubectl kustomize`, and every object it renders
validates against the Kubernetes OpenAPI schema as shipped in the `kubernetes` client's models
(strict pydantic models generated from the OpenAPI spec: unknown fields, wrong types and
missing required fields are errors; the API group/version/kind must exist, with the right
scope)."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

REPO = Path(__file__).resolve().parents[2]
KUSTOMIZATIONS = [
    "deploy/rbac",
    "deploy/rbac/node-access",
    "deploy/rbac/upstream",
    "deploy/base",
    "deploy/agent",
]


def _kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        message = "kubectl is not installed (Debian: apt-get install -y kubernetes-client)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def render(directory: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [_kubectl(), "kustomize", str(REPO / directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """What is wrong with `obj` by the client's OpenAPI models; [] when it is valid."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    group, _, version = api_version.rpartition("/")
    prefix = (
        "".join(w.capitalize() for w in group.removesuffix(".k8s.io").split("."))
        if group
        else "Core"
    )
    api = getattr(k8s, f"{prefix}{version.capitalize()}Api", None)
    if api is None:
        return [f"no API {api_version}"]
    namespaced = getattr(api, f"read_namespaced_{_snake(kind)}", None)
    read = namespaced or getattr(api, f"read_{_snake(kind)}", None)
    if read is None:
        return [f"no kind {kind} in {api_version}"]
    errors = []
    has_ns = bool((obj.get("metadata") or {}).get("namespace"))
    if namespaced is not None and not has_ns:
        errors.append(f"{kind} is namespaced but has no namespace")
    if namespaced is None and has_ns:
        errors.append(f"{kind} is cluster-scoped but names a namespace")
    model = inspect.signature(read).return_annotation
    try:
        model.model_validate(obj)
    except Exception as exc:  # pydantic.ValidationError, with every problem listed
        errors.append(str(exc))
    return errors


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {directory: render(directory) for directory in KUSTOMIZATIONS}


@pytest.mark.parametrize("directory", KUSTOMIZATIONS)
def test_every_rendered_object_is_valid_kubernetes(rendered, directory):
    objects = rendered[directory]
    assert objects
    problems = {
        f"{o.get('kind')}/{(o.get('metadata') or {}).get('name')}": schema_errors(o)
        for o in objects
    }
    assert {name: p for name, p in problems.items() if p} == {}
    assert not [o for o in objects if o["kind"] == "Secret"]  # secrets are never committed


def test_the_validator_catches_what_an_api_server_would_refuse():
    good = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "a", "namespace": "n"},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "image": "i"}],
                            "restartPolicy": "Never",
                        }
                    }
                }
            },
        },
    }
    assert schema_errors(good) == []
    typo = yaml.safe_load(yaml.safe_dump(good))
    typo["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["comand"] = ["x"]
    assert "comand" in schema_errors(typo)[0]
    no_name = yaml.safe_load(yaml.safe_dump(good))
    del no_name["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["name"]
    assert schema_errors(no_name)
    wrong_type = yaml.safe_load(yaml.safe_dump(good))
    wrong_type["spec"]["jobTemplate"]["spec"]["backoffLimit"] = "3"
    assert schema_errors(wrong_type)
    assert schema_errors({**good, "apiVersion": "batch/v2"}) == ["no API batch/v2"]
    assert schema_errors({**good, "apiVersion": "apps/v1"}) == ["no kind CronJob in apps/v1"]
    assert schema_errors({**good, "metadata": {"name": "a"}}) == [
        "CronJob is namespaced but has no namespace"
    ]


def _containers(obj):
    spec = obj["spec"]
    spec = spec.get("jobTemplate", {}).get("spec", spec)
    return spec["template"]["spec"]["containers"]


def test_the_dashboard_base_has_its_parts_and_probes(rendered):
    objects = {(o["kind"], o["metadata"]["name"]): o for o in rendered["deploy/base"]}
    assert {
        ("Deployment", "sctp-dashboard-web"),
        ("Deployment", "sctp-dashboard-worker"),
        ("Deployment", "sctp-dashboard-beat"),
        ("Job", "sctp-dashboard-migrate"),
        ("Service", "sctp-dashboard-web"),
        ("ConfigMap", "sctp-dashboard"),
    } <= set(objects)
    web = _containers(objects[("Deployment", "sctp-dashboard-web")])[0]
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert objects[("Deployment", "sctp-dashboard-beat")]["spec"]["replicas"] == 1
    for part in ("web", "worker", "beat"):  # each starts once the schema is migrated
        init = objects[("Deployment", f"sctp-dashboard-{part}")]["spec"]["template"]["spec"][
            "initContainers"
        ]
        assert "migrate --check" in init[0]["command"][-1]
    for obj in objects.values():
        if obj["kind"] in ("Deployment", "Job"):
            for container in _containers(obj):
                refs = {next(iter(r.values()))["name"] for r in container["envFrom"]}
                assert refs == {"sctp-dashboard"}  # the ConfigMap and the Secret by that name
                assert container["resources"]["limits"]["memory"]
    config = objects[("ConfigMap", "sctp-dashboard")]["data"]
    assert "DATABASE_URL" not in config and "SECRET_KEY" not in config


def test_the_agent_overlay_runs_the_agent_under_the_tested_role(rendered):
    objects = {(o["kind"], o["metadata"]["name"]): o for o in rendered["deploy/agent"]}
    cron = objects[("CronJob", "sctp-agent")]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert (
        pod["serviceAccountName"] == "sctp-battery"
        and cron["spec"]["concurrencyPolicy"] == "Forbid"
    )
    assert _containers(cron)[0]["command"] == ["python", "-m", "kernel.agent"]
    shipped = yaml.safe_load((REPO / "deploy/rbac/battery-role.yaml").read_text())
    assert objects[("ClusterRole", "sctp-battery")]["rules"] == shipped["rules"]
    binding = objects[("ClusterRoleBinding", "sctp-battery")]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "sctp-battery", "namespace": "sctp-battery"}
    ]
