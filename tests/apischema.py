"""Answers of /api/v1/ checked against the schema drf-spectacular generates from the code.

`check(response)` finds the operation (path template, method) and the documented response of
that status, and validates the JSON body against its schema. An undocumented status, an
unknown path or a body that does not match fails the test that made the call. tests/conftest.py
applies it to every call made through Django's test client.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema

PREFIX = "/api/v1/"


@functools.cache
def openapi() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema's null type; everything else as it is."""
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@functools.cache
def _operations() -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
    ops = []
    for template, item in openapi()["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)) + "$")
        ops += [(pattern, method, op) for method, op in item.items()]
    return ops


@functools.cache
def _components() -> dict[str, Any]:
    return to_json_schema(openapi().get("components", {}))


def operation(method: str, path: str) -> dict[str, Any] | None:
    # `…/verify/` and `…/reject/` are aliases the schema leaves out; they answer the same
    for candidate in (path, path.rstrip("/")):
        for pattern, m, op in _operations():
            if m == method.lower() and pattern.match(candidate):
                return op
    return None


def check(method: str, path: str, status: int, content_type: str, body: bytes) -> None:
    if not path.startswith(PREFIX) or path in (PREFIX + "docs/", PREFIX + "schema/"):
        return  # the schema itself and its Swagger UI
    op = operation(method, path)
    if op is None and status == 404:
        return  # no such path: the catch-all's JSON 404 (tests/web/api/test_api_boundaries.py)
    assert op is not None, f"{method} {path} is not in the generated schema"
    responses = op["responses"]
    documented = responses.get(str(status)) or responses.get("default")
    assert documented is not None, (
        f"{method} {path} answered {status}, which its schema does not document "
        f"(documented: {', '.join(responses)})"
    )
    if status == 204 or not body:
        return
    assert content_type.startswith("application/json"), (
        f"{method} {path} answered {content_type}, not JSON"
    )
    schema = documented.get("content", {}).get("application/json", {}).get("schema")
    assert schema is not None, f"{method} {path} {status} has no JSON schema"
    document = {**to_json_schema(schema), "components": _components()}
    try:
        jsonschema.Draft202012Validator(document).validate(json.loads(body))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise AssertionError(
            f"{method} {path} {status}: the answer does not match its schema at "
            f"'{where}': {exc.message}"
        ) from None


def check_response(response: Any) -> None:
    req = response.request
    check(
        req["REQUEST_METHOD"],
        req["PATH_INFO"],
        response.status_code,
        response.get("Content-Type", ""),
        response.content if not getattr(response, "streaming", False) else b"",
    )
