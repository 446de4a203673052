"""Issue 36, item 2: the API answers as its own OpenAPI document says (schemathesis).

The document is the one the application serves (`GET /api/v1/schema/`, loaded through the WSGI
application with `schemathesis.openapi.from_wsgi`), and every operation in it is called with
property-based requests (valid and invalid), anonymously and with each role's token: a vendor
for its own plugin, a vendor of another plugin, a maintainer, and a revoked token (the API has
no other token roles; operators act through `manage.py` and the admin). The database holds what
breaks verdicts: counted and stale runs, an emulated (lab) cluster's, an unapproved and a
disabled cluster's, an unverified self-reported run, and submissions verified, undated (no run
time), stale, emulated, pending, rejected and withdrawn, each with its own plugin facts.

Each answer must not be a 5xx (`not_a_server_error`), must have a status the operation
documents (`status_code_conformance`), the documented content type and a body that matches the
documented schema (`response_schema_conformance`), and carry no property the schema leaves out
where it names an object's properties (`no_undocumented_properties`, this module's own: the
readiness answer's `min_kubernetes` and `policy` were such properties until the schema named
them). Bounded: SCHEMA_FUZZ_EXAMPLES examples per operation and role (default 15, `make fuzz`
runs more), derandomized.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils.timezone import now
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from dashboard.domain import heads
from dashboard.domain.models import ApiToken, Cluster, Run, Submission
from dashboard.domain.withdrawals import withdraw
from tests import factories as f

EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "15"))
ROLES = ["anonymous", "vendor", "other-vendor", "maintainer", "revoked"]
SCHEMA_PATH = "/api/v1/schema/"


# --- the strict check: nothing in an answer that its schema leaves out ----------------------


def _resolve(node: Any, document: dict[str, Any]) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def undocumented(value: Any, node: Any, document: dict[str, Any], at: str = "") -> list[str]:
    """The paths of properties in `value` that `node` (an OpenAPI 3 schema) does not name, where
    it names an object's properties and allows no others."""
    node = _resolve(node, document)
    if not isinstance(node, dict):
        return []
    for combinator in ("allOf", "anyOf", "oneOf"):
        if combinator in node:
            branches = [b for b in node[combinator] if isinstance(b, dict)]
            found = [undocumented(value, b, document, at) for b in branches]
            if combinator == "allOf":  # a property named by any part is documented
                named = {p for b in branches for p in _resolve(b, document).get("properties", {})}
                return [
                    p for missing in found for p in missing if p.rsplit("/", 1)[-1] not in named
                ]
            return min(found, key=len) if found else []
    if isinstance(value, list):
        items = node.get("items")
        return [
            p for i, v in enumerate(value) for p in undocumented(v, items, document, f"{at}/{i}")
        ]
    if not isinstance(value, dict):
        return []
    properties = node.get("properties")
    extra = node.get("additionalProperties")
    out: list[str] = []
    for key, item in value.items():
        if properties is not None and key in properties:
            out += undocumented(item, properties[key], document, f"{at}/{key}")
        elif isinstance(extra, dict):
            out += undocumented(item, extra, document, f"{at}/{key}")
        elif properties is not None and extra is not True:
            out.append(f"{at}/{key}")
    return out


def no_undocumented_properties(ctx: Any, response: Any, case: Any) -> bool | None:
    """The answer carries only what its schema documents (for statuses it documents)."""
    if not response.content or "json" not in (response.headers.get("content-type") or [""])[0]:
        return None
    sent = (getattr(response.request, "method", None) or case.method or "").upper()
    if sent != case.operation.method.upper():
        return None  # another method probed on the path (DRF answers OPTIONS with metadata)
    document = case.operation.schema.raw_schema
    operation = document["paths"][case.operation.path][case.operation.method.lower()]
    documented = operation["responses"].get(str(response.status_code))
    if documented is None:
        return None  # status_code_conformance reports it
    body_schema = documented.get("content", {}).get("application/json", {}).get("schema")
    if body_schema is None:
        return None
    missing = undocumented(json.loads(response.content), body_schema, document)
    if missing:
        raise AssertionError(
            f"{case.operation.method.upper()} {case.operation.path} {response.status_code} "
            f"carries properties its schema does not document: {', '.join(sorted(missing)[:10])}"
        )
    return True


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    no_undocumented_properties,
]


# --- the application, its document, the data ------------------------------------------------


@pytest.fixture
def in_test_transaction(settings):
    """Raw WSGI calls would close the test's connection at each request end, as a server does;
    Django's own test client turns that off the same way. Limits stay out of the way."""
    settings.API_RATE_LIMIT_TOKEN = settings.API_RATE_LIMIT_IP = "1000000/60"
    settings.CLUSTER_REGISTER_RATE_LIMIT = "1000000/3600"
    settings.TASKS_SEND = "tests.task_layer.record_send"  # no broker
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def seed_evidence() -> None:
    """Evidence of every kind an evaluation and the API must get through."""
    calico_vendor = f.vendor("Calico vendor", ("calico",))
    real = f.cluster("calico-a", plugin_slug="calico", owner=calico_vendor)
    f.run(real)  # counted
    f.run(real, days_ago=200)  # stale
    f.run(real, state=Run.State.ERROR, outcomes={"pod-to-pod": "error"})
    sched = f.schedule(real)
    for days in (0.2, 1.2, 2.2):
        f.run(real, battery="basic", trigger=Run.Trigger.PERIODIC, schedule=sched, days_ago=days)
    ipvs = f.cluster("cilium-ipvs", plugin_slug="cilium", proxier="ipvs")
    f.run(ipvs, detected=None)  # proxier undetermined
    f.run(ipvs, detected="ebpf (cilium)")
    f.run(f.cluster("lab-calico", plugin_slug="calico", lab=True, emulated=True))  # emulated
    f.run(f.cluster("unapproved", plugin_slug="cilium", approved=False))
    f.run(f.cluster("disabled", plugin_slug="flannel", enabled=False))
    f.run(f.cluster("old-release", kubernetes_version="1.29.0"))
    agent = f.run(f.cluster("agent-calico", plugin_slug="calico", mode=Cluster.Mode.AGENT))
    Run.objects.filter(pk=agent.pk).update(trigger=Run.Trigger.AGENT)  # self-reported
    heads.refresh_runs([agent.pk])  # a bulk UPDATE: as the application's own do
    f.run(f.cluster("kubenet-1", plugin_slug="kubenet"))  # in-tree
    verified = Submission.Status.VERIFIED
    f.submission("calico", proxier="ipvs")  # counted
    undated = f.submission("cilium", proxier="ipvs")
    Submission.objects.filter(pk=undated.pk).update(run_at=None, run_at_source="")
    undated_iptables = f.submission("calico", proxier="iptables", status=verified)
    Submission.objects.filter(pk=undated_iptables.pk).update(run_at=None, run_at_source="")
    f.submission("cilium", run_days_ago=400)  # stale
    f.submission("calico", emulated=True)  # emulated
    f.submission("flannel", status=Submission.Status.PENDING)
    f.submission("cilium", status=Submission.Status.REJECTED)
    f.submission("calico", kubernetes_version="1.21.1")  # under the release floor
    f.submission("cilium", f.with_outcome("pod-to-service", "failed"), proxier="nftables")
    gone = f.submission("calico", proxier="ipvs")
    withdraw(gone, actor="maria", reason="the vendor asked")
    # Times in the future of the evidence window's edge, exactly on it, and just past it.
    f.submission("cilium", run_days_ago=90 - 1 / 24)
    f.submission("calico", proxier="nftables", run_days_ago=90 + 1 / 24)
    assert Submission.objects.filter(run_at__isnull=True).count() == 2
    assert Submission.objects.filter(run_at__lt=now() - timedelta(days=90)).exists()


@pytest.fixture
def world(db, maintainer, in_test_transaction):
    seed_evidence()
    revoked, revoked_token = ApiToken.issue(
        role=ApiToken.Role.VENDOR, vendor=f.vendor("Calico vendor", ("calico",))
    )
    ApiToken.objects.filter(pk=revoked.pk).update(revoked=True)
    return {
        "anonymous": None,
        "vendor": ApiToken.issue(
            role=ApiToken.Role.VENDOR, vendor=f.vendor("Calico vendor", ("calico",))
        )[1],
        "other-vendor": ApiToken.issue(
            role=ApiToken.Role.VENDOR, vendor=f.vendor("Cilium vendor", ("cilium",))
        )[1],
        "maintainer": ApiToken.issue(role=ApiToken.Role.MAINTAINER, user=maintainer)[1],
        "revoked": revoked_token,
    }


# The OpenAPI document as the application serves it (GET /api/v1/schema/ through the WSGI
# application: no database involved), with the application to call.
schema = schemathesis.openapi.from_wsgi(SCHEMA_PATH, get_wsgi_application())


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_the_api_answers_as_its_schema_says_for_every_role(case, role, world) -> None:
    headers = {"Authorization": f"Token {world[role]}"} if world[role] else {}
    case.call_and_validate(headers=headers, checks=CHECKS)


def test_the_readiness_answer_documents_everything_it_carries(client, world) -> None:
    """The answer every page is made from, on evidence that includes undated, stale, emulated
    and rejected items: each property it carries is in the served schema (min_kubernetes and
    policy were not)."""
    document = client.get(SCHEMA_PATH, HTTP_ACCEPT="application/json").json()
    operation = document["paths"]["/api/v1/readiness/"]["get"]
    body_schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    answer = client.get("/api/v1/readiness/").json()
    assert {"min_kubernetes", "policy"} <= set(answer)
    assert undocumented(answer, body_schema, document) == []
    # and the check itself sees what a schema leaves out
    assert undocumented({**answer, "surprise": 1}, body_schema, document) == ["/surprise"]
