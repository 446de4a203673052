"""The OpenAPI 3 description of /api/v1/, written by hand next to the views it describes."""

from __future__ import annotations

from typing import Any

from dashboard.catalog import ALL_KEYS, Battery, Outcome, Proxier


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERRORS = {str(code): _json(_ref("Error"), text) for code, text in (
    (400, "unreadable or unsupported file or field"), (401, "missing or bad token"),
    (403, "not allowed for this token"), (404, "not found"), (409, "conflict"), (413, "file too large"),
    (422, "no evidence: no SCTP test ran, or the file shows another proxier or CNI than declared"))}


def openapi() -> dict[str, Any]:
    outcome = {"type": "string", "enum": Outcome.values}
    schemas: dict[str, Any] = {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
        "CatalogTest": {"type": "object", "required": ["key", "title", "battery", "tags", "upstream_names"],
                        "properties": {"key": {"type": "string", "enum": list(ALL_KEYS)}, "title": {"type": "string"},
                                       "battery": {"type": "string", "enum": ["basic", "connectivity"]},
                                       "tags": {"type": "array", "items": {"type": "string"}},
                                       "upstream_names": {"type": "array", "items": {"type": "string"}},
                                       "kep_text": {"type": "string"}}},
        "Evidence": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["run", "submission"]},
                                                      "id": {"type": "integer"}, "url": {"type": "string"},
                                                      "label": {"type": "string"}}},
        "Criterion": {"type": "object", "required": ["key", "title", "status", "detail", "evidence"],
                      "properties": {"key": {"type": "string"}, "title": {"type": "string"},
                                     "status": {"type": "string", "enum": ["met", "unmet", "at_risk", "stale"]},
                                     "detail": {"type": "string"},
                                     "evidence": {"type": "array", "items": _ref("Evidence")},
                                     "rows": {"type": "array", "items": {"type": "object"}}}},
        "Readiness": {"type": "object", "required": ["feature", "stage", "transitions"],
                      "properties": {"feature": {"type": "string"},
                                     "stage": {"type": "string", "enum": ["alpha", "beta", "stable"]},
                                     "evaluated_at": {"type": "string", "format": "date-time"},
                                     "transitions": {"type": "array", "items": {
                                         "type": "object", "properties": {
                                             "from": {"type": "string"}, "to": {"type": "string"},
                                             "ready": {"type": "boolean"},
                                             "criteria": {"type": "array", "items": _ref("Criterion")}}}}}},
        "Submission": {"type": "object", "required": ["id", "status", "sha256", "counts", "results", "warnings"],
                       "properties": {
                           "id": {"type": "integer"},
                           "status": {"type": "string", "enum": ["pending_review", "verified", "rejected"]},
                           "sha256": {"type": "string"}, "plugin": {"type": "string"},
                           "plugin_version": {"type": "string"}, "kubernetes_version": {"type": "string"},
                           "proxier": {"type": "string", "enum": Proxier.values}, "kind": {"type": "string"},
                           "counts": {"type": "object", "properties": {k: {"type": "integer"} for k in
                                                                       ("passed", "failed", "skipped", "not_run")}},
                           "results": {"type": "object", "additionalProperties": {
                               "type": "object", "properties": {"outcome": outcome, "upstream_names": {
                                   "type": "array", "items": {"type": "string"}}}}},
                           "warnings": {"type": "array", "items": {"type": "string"}},
                           "report": {"type": "object"}}},
        "Cluster": {"type": "object", "properties": {
            "name": {"type": "string"}, "plugin": {"type": "string"}, "proxier": {"type": "string"},
            "kubernetes_version": {"type": "string"}, "enabled": {"type": "boolean"},
            "last_run": {"type": "object", "nullable": True}}},
        "Run": {"type": "object", "properties": {
            "id": {"type": "integer"}, "cluster": {"type": "string"}, "battery": {"type": "string"},
            "state": {"type": "string", "enum": ["queued", "running", "finished", "cancelled", "error"]},
            "started": {"type": "string", "nullable": True}, "finished": {"type": "string", "nullable": True},
            "fingerprint": {"type": "object"},
            "results": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "outcome": outcome, "reason": {"type": "string"}}}}}},
    }
    token = [{"token": []}]
    paths = {
        "/api/v1/catalog/": {"get": {"summary": "The 8 KEP-614 catalog tests", "responses": {
            "200": _json({"type": "array", "items": _ref("CatalogTest")})}}},
        "/api/v1/readiness/": {"get": {"summary": "Graduation criteria with verdicts and evidence", "responses": {
            "200": _json(_ref("Readiness"))}}},
        "/api/v1/clusters/": {
            "get": {"summary": "Registered clusters (kubeconfigs are never returned)", "responses": {
                "200": _json({"type": "array", "items": _ref("Cluster")})}},
            "post": {"summary": "Register a cluster (vendor token for its plugin, or maintainer)", "security": token,
                     "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                         "type": "object", "required": ["name", "plugin", "proxier", "kubeconfig"],
                         "properties": {"name": {"type": "string"}, "plugin": {"type": "string"},
                                        "plugin_version": {"type": "string"},
                                        "kubernetes_version": {"type": "string"},
                                        "proxier": {"type": "string", "enum": Proxier.values},
                                        "node_access": {"type": "boolean"}, "load_balancer": {"type": "boolean"},
                                        "kubenet": {"type": "boolean"}, "agnhost_image": {"type": "string"},
                                        "kubeconfig": {"type": "string", "format": "binary",
                                                       "description": "inline credentials only; no exec, no file paths"}}}}}},
                     "responses": {"201": _json(_ref("Cluster"), "registered"),
                                   **{k: ERRORS[k] for k in ("400", "401", "403", "409")}}}},
        "/api/v1/clusters/{name}/runs/": {"post": {
            "summary": "Request a battery run (owner or maintainer token)", "security": token,
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                "battery": {"type": "string", "enum": Battery.values}}}}}},
            "responses": {"202": _json({"type": "object", "properties": {"run": {"type": "integer"}}}, "queued"),
                          **{k: ERRORS[k] for k in ("400", "401", "403", "404", "409")}}}},
        "/api/v1/runs/{id}/": {"get": {"summary": "A run with state, timings and per-test results",
                                       "parameters": [{"name": "id", "in": "path", "required": True,
                                                       "schema": {"type": "integer"}}],
                                       "responses": {"200": _json(_ref("Run")), "404": ERRORS["404"]}}},
        "/api/v1/agent-runs/": {"post": {
            "summary": "A run made by the in-cluster agent (vendor token of the cluster's plugin); "
                       "the cluster is registered on first contact, unapproved",
            "security": token,
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False,
                "required": ["cluster", "plugin", "proxier", "battery", "started", "finished",
                             "fingerprint", "results"],
                "properties": {
                    "cluster": {"type": "string"}, "plugin": {"type": "string"},
                    "plugin_version": {"type": "string"}, "kubernetes_version": {"type": "string"},
                    "proxier": {"type": "string", "enum": Proxier.values},
                    "battery": {"type": "string", "enum": Battery.values},
                    "started": {"type": "string", "format": "date-time"},
                    "finished": {"type": "string", "format": "date-time"},
                    "fingerprint": {"type": "object", "properties": {
                        "emulated": {"type": "boolean"},
                        "proxier_detected": {"type": "string", "enum": Proxier.values, "nullable": True},
                        "cni_detected": {"type": "string", "nullable": True}}},
                    "results": {"type": "object", "additionalProperties": {
                        "type": "object", "additionalProperties": False, "required": ["outcome", "reason"],
                        "properties": {"outcome": outcome, "reason": {"type": "string"},
                                       "evidence": {"type": "string"}, "duration": {"type": "number"},
                                       "started": {"type": "string", "format": "date-time"},
                                       "finished": {"type": "string", "format": "date-time"},
                                       "reached": {"type": "boolean"}}}},
                    "errors": {"type": "array", "items": {"type": "string"}},
                    "agent_version": {"type": "string"}}}}}},
            "responses": {"201": _json({"type": "object", "properties": {
                "run": {"type": "integer"}, "url": {"type": "string"}, "state": {"type": "string"},
                "cluster": {"type": "string"}, "cluster_approved": {"type": "boolean"},
                "emulated": {"type": "boolean"}}}, "stored"), **ERRORS}}},
        "/api/v1/submissions/": {
            "get": {"summary": "Submissions, newest first", "parameters": [
                {"name": "plugin", "in": "query", "schema": {"type": "string"}},
                {"name": "status", "in": "query", "schema": {"type": "string"}},
                {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                {"name": "page_size", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}}],
                "responses": {"200": _json({"type": "object", "properties": {
                    "count": {"type": "integer"}, "next": {"type": "string", "nullable": True},
                    "previous": {"type": "string", "nullable": True},
                    "results": {"type": "array", "items": {"type": "object", "description":
                                "a submission without results, report and warnings"}}}})}},
            "post": {"summary": "Submit a result file (vendor token for that plugin)", "security": token,
                     "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                         "type": "object", "required": ["file", "plugin", "plugin_version", "kubernetes_version",
                                                        "proxier"],
                         "properties": {"file": {"type": "string", "format": "binary"},
                                        "plugin": {"type": "string"}, "plugin_version": {"type": "string"},
                                        "kubernetes_version": {"type": "string"},
                                        "proxier": {"type": "string", "enum": Proxier.values},
                                        "cluster": {"type": "string"}}}}}},
                     "responses": {"201": _json(_ref("Submission"), "stored, pending review"), **ERRORS}}},
        "/api/v1/submissions/{id}/": {"get": {"summary": "One submission", "parameters": [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"200": _json(_ref("Submission")), "404": ERRORS["404"]}}},
    }
    for action in ("verify", "reject"):
        paths[f"/api/v1/submissions/{{id}}/{action}"] = {"post": {
            "summary": f"{action.title()} a submission (maintainer token)", "security": token,
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                "reason": {"type": "string"}}}}}},
            "responses": {"200": _json(_ref("Submission")), **{k: ERRORS[k] for k in ("400", "401", "403", "404")}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "SCTP readiness dashboard API", "version": "1",
                 "description": "KEP-614 graduation criteria, battery runs and vendor evidence."},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {"token": {
            "type": "apiKey", "in": "header", "name": "Authorization",
            "description": "`Token <token>` as printed by `manage.py issue_token`"}}},
    }
