"""The lab held against the real API server (issue 37, item 5).

`manage.py lab_record` (dashboard/domain/management/commands/lab_record.py) drives the API calls
the battery makes (through the official `kubernetes` client, with kernel.battery.pods' bodies,
the 404/409/422/403 paths) and the `kubectl` commands the README documents for the lab against a
real cluster, and keeps every request with the real server's answer. `replay` here sends each
recorded request, in order, to a fresh lab cluster and compares the answers: the status code,
a Status's reason/code/message/causes, and the fields the battery reads (VALUE_PATHS), after the
normalization rules below. Differences not in KNOWN are reported.

    python manage.py lab_record --kubeconfig var/cluster/kubeconfig --kubectl var/cluster/bin/kubectl
    python -m lab.replay replay   # against a fresh lab; exit 1 on a difference not in KNOWN

The recording is tests/fixtures/realcluster/api-recording.json; tests/lab/test_replay_real.py
replays it in `make test` (no cluster needed).
"""

from __future__ import annotations

import argparse
import fnmatch
import ipaddress
import json
import re
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from kubernetes import config as k8s_config

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "tests" / "fixtures" / "realcluster" / "api-recording.json"
# The lab cluster the recording is replayed against: the real cluster's release, one node.
LAB_PROFILE: dict[str, Any] = {
    "name": "replay",
    "plugin": "kubenet",
    "plugin_version": "1.36.3",
    "kubernetes_version": "1.36.3",
    "proxier": "iptables",
    "nodes": 1,
    "faults": {"pod_start_delay_s": 0},
}
# A body larger than this is kept as its digest (kind, top-level keys, size): OpenAPI documents.
MAX_BODY = 40_000

# ------------------------------------------------------------------ what the battery reads

# By the answer's `kind`: the fields kernel/ reads (kernel/battery/context.py, checks/,
# runner.py, kernel/cni.py, kernel/serviceaccount.py). `[]` walks a list.
VALUE_PATHS: dict[str, list[str]] = {
    "Status": [
        "status",
        "reason",
        "code",
        "message",
        "details.name",
        "details.kind",
        "details.causes[].field",
        "details.causes[].reason",
        "details.causes[].message",
    ],
    "Namespace": [
        "metadata.name",
        "metadata.labels",
        "metadata.uid",
        "metadata.resourceVersion",
        "status.phase",
    ],
    "Service": [
        "metadata.name",
        "metadata.uid",
        "metadata.resourceVersion",
        "spec.type",
        "spec.selector",
        "spec.clusterIP",
        "spec.clusterIPs",
        "spec.ipFamilies",
        "spec.ports[].port",
        "spec.ports[].protocol",
        "spec.ports[].targetPort",
        "spec.ports[].nodePort",
        "status.loadBalancer.ingress",
    ],
    "Pod": [
        "metadata.name",
        "metadata.uid",
        "metadata.resourceVersion",
        "spec.nodeName",
        "spec.containers[].ports[].containerPort",
        "spec.containers[].ports[].protocol",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.hostIP",
        "status.containerStatuses[].state.terminated.exitCode",
    ],
    "NetworkPolicy": [
        "metadata.name",
        "metadata.uid",
        "spec.podSelector",
        "spec.ingress[].ports[].protocol",
        "spec.ingress[].ports[].port",
    ],
    "Endpoints": [
        "metadata.name",
        "subsets[].addresses[].ip",
        "subsets[].addresses[].targetRef.name",
        "subsets[].ports[].port",
        "subsets[].ports[].protocol",
    ],
    "EndpointSliceList": [
        "items[].addressType",
        "items[].ports[].port",
        "items[].ports[].protocol",
        "items[].endpoints[].addresses",
        "items[].endpoints[].conditions.ready",
        "items[].endpoints[].targetRef.name",
    ],
    "NodeList": [
        "items[].metadata.name",
        "items[].status.addresses",
        "items[].status.nodeInfo.bootID",
        "items[].spec.unschedulable",
    ],
    "NamespaceList": ["items[].metadata.name"],
    "PodList": ["items[].metadata.name", "items[].status.phase"],
    "DaemonSetList": ["items[].metadata.name"],
    "ConfigMapList": ["items[].metadata.name"],
    "ServiceAccount": ["metadata.name", "metadata.uid"],
    "TokenRequest": ["status.token", "status.expirationTimestamp"],
    "Table": ["columnDefinitions[].name", "rows[].cells"],
    "APIGroupDiscoveryList": ["items[].metadata.name"],
}
VERSION_PATHS = ["gitVersion", "major", "minor", "emulated"]

# ------------------------------------------------------------------ normalization rules

_UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def normalize(path: str, value: Any) -> Any:
    """What legitimately differs between two servers, replaced by what it must be:
    - uid: any UUID -> "<uid>"; resourceVersion: any non-empty string -> "<rv>";
    - an IP (clusterIP, podIP, hostIP, node address) -> "<ip>" (each server allocates from its
      own ranges), a nodePort in 30000-32767 -> "<nodePort>";
    - a token -> "<token>", a timestamp -> "<time>", a node's bootID -> "<bootID>";
    - a Table row's cells -> their count (ages and IPs differ in every cell)."""
    last = path.rsplit(".", 1)[-1]
    if last == "cells" and isinstance(value, list):
        return [len(row) if isinstance(row, list) else row for row in value]
    if isinstance(value, list):
        return [normalize(path, v) for v in value]
    if value is None:
        return None
    if last == "uid" and _UID.match(str(value)):
        return "<uid>"
    if last == "resourceVersion" and str(value):
        return "<rv>"
    if last in ("clusterIP", "clusterIPs", "podIP", "hostIP", "ip", "addresses") and _is_ip(value):
        return "<ip>"
    if last == "nodePort" and isinstance(value, int) and 30000 <= value <= 32767:
        return "<nodePort>"
    if last == "token" and str(value):
        return "<token>"
    if last == "bootID" and str(value):
        return "<bootID>"
    if isinstance(value, str) and _STAMP.match(value):
        return "<time>"
    if path.endswith(("podIPs", "status.addresses")):
        return value  # lists of dicts: normalized item by item below
    if isinstance(value, dict):
        return {k: normalize(f"{path}.{k}", v) for k, v in value.items()}
    return value


def pick(obj: Any, path: str) -> Any:
    """The value at a dotted path; `a[].b` maps over the list at a."""
    head, _, rest = path.partition(".")
    many = head.endswith("[]")
    key = head[:-2] if many else head
    value = obj.get(key) if isinstance(obj, dict) else None
    if many:
        items = value if isinstance(value, list) else []
        return [pick(v, rest) if rest else v for v in items]
    return pick(value, rest) if rest and value is not None else value


def extract(body: Any) -> dict[str, Any]:
    """{path: normalized value} of what the battery reads in one answer."""
    if isinstance(body, dict) and "watchEvents" in body:
        out: dict[str, Any] = {"events[].type": [e.get("type") for e in body["watchEvents"]]}
        for i, event in enumerate(body["watchEvents"]):
            for path, value in extract(event.get("object") or {}).items():
                out[f"events[{i}].{path}"] = value
        return out
    if not isinstance(body, dict):
        return {"body": "<not JSON>" if body else None}
    if "_text" in body:
        return {}  # rule: a body that kubectl's log cut short is compared by its status only
    if isinstance(body.get("paths"), dict) and "openapi" not in body:
        return {"openapi-documents": sorted(body["paths"])}  # GET /openapi/v3
    kind = str(body.get("kind") or "")
    if "gitVersion" in body:
        return {p: body.get(p) for p in VERSION_PATHS}
    out = {"kind": kind}
    if body.get("_digest"):
        out["keys"] = body.get("keys")
        return out
    for path in VALUE_PATHS.get(kind, []):
        value = pick(body, path)
        if path.endswith(("status.addresses", "podIPs")):
            value = (
                [[{k: normalize(k, v) for k, v in a.items()} for a in x or []] for x in value]
                if path.startswith("items")
                else [{k: normalize(k, v) for k, v in a.items()} for a in value or []]
            )
        out[path] = normalize(path, value)
    return out


# ------------------------------------------------------------------ known differences

# (step glob, path glob) -> why the lab answers otherwise. Everything else is a difference.
NODE = (
    "the real cluster's one node is `vm` (its InternalIP the host's); the lab's profile names "
    "its node replay-control-plane, with an address of its own"
)
STARTS_LATER = (
    "the real pod is created Pending and unscheduled; the scheduler binds it to node vm and "
    "the kubelet starts it within seconds; the lab's pod is scheduled and Running when it is "
    "created"
)
WATCH_AFTER_START = (
    STARTS_LATER + ": the real watch from the create's resourceVersion sees each step as a "
    "MODIFIED event (scheduled, container creating, Running), the lab's has none to send"
)
SUBSET = (
    "the lab serves the groups the battery and kubectl use (lab/discovery.py, lab/openapi.py); "
    "the real server every group of its release (admissionregistration, batch, ...)"
)
KNOWN: dict[tuple[str, str], str] = {
    ("version", "emulated"): (
        "the lab marks its answers emulated on purpose: the evidence policy keeps its runs "
        "apart (docs/contract.md); the real server has no such field"
    ),
    ("nodes", "*"): NODE,
    ("pod-*", "spec.nodeName"): NODE,
    ("pod-created", "status.*"): STARTS_LATER,
    ("pod-read", "status.*"): STARTS_LATER,
    ("pod-watch", "events*"): WATCH_AFTER_START,
    ("hostexec-create", "status.*"): STARTS_LATER,
    ("hostexec-create", "spec.nodeName"): STARTS_LATER,
    ("daemonsets", "*"): (
        "the lab emulates its profile's CNI and kube-proxy DaemonSets (what kernel/cni.py "
        "detects); the real control plane runs no DaemonSet"
    ),
    ("configmaps-kube-system", "*"): (
        "the real control plane's kube-system holds what its controllers wrote "
        "(extension-apiserver-authentication, kube-root-ca.crt, ...); the lab's only its "
        "profile's kube-proxy and CNI ConfigMaps"
    ),
    ("kubectl-get-pods-A", "rows[].cells"): (
        "namespace deletion is asynchronous: kubectl listed the real cluster right after the "
        "battery's namespaces were deleted, before its namespace controller removed the "
        "hostexec pod (Pending, age 0s); the lab removes a deleted namespace's pods at once"
    ),
    ("kubectl-explain*", "openapi-documents"): SUBSET,
}


def known(step: str, path: str) -> str | None:
    for (step_glob, path_glob), reason in KNOWN.items():
        if reason and fnmatch.fnmatchcase(step, step_glob) and fnmatch.fnmatchcase(path, path_glob):
            return reason
    return None


# ------------------------------------------------------------------ the recording's form


def body_of(data: bytes, content_type: str) -> Any:
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    if "watch=true" in content_type or content_type.startswith("watch"):
        events = [json.loads(line) for line in text.splitlines() if line.strip()]
        return {"watchEvents": events}
    try:
        body = json.loads(text)
    except ValueError:
        return {"_text": text[:2000]}
    if len(text) > MAX_BODY and isinstance(body, dict):
        return {
            "_digest": True,
            "kind": body.get("kind"),
            "keys": sorted(body)[:50],
            "size": len(text),
        }
    return body


_CURL = re.compile(r"curl -v -X(\w+)\s+(.*?)'(https?://[^']+)'", re.S)
_HEADER = re.compile(r'-H "([^:"]+): ([^"]*)"')
_RESPONSE = re.compile(r'"Response" verb="(\w+)" url="([^"]+)" status="(\d+)')


def parse_kubectl_log(step: str, log: str) -> list[dict[str, Any]]:
    """kubectl -v=9's klog lines -> exchanges: the curl command of each request, the status
    of its response and the response body that follows it."""
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    lines = log.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if '"Request" curlCommand=<' in line:
            block = lines[i + 1]
            found = _CURL.search(block)
            if found:
                method, headers_text, url = found.groups()
                headers = dict(_HEADER.findall(headers_text))
                split = urllib.parse.urlsplit(url)
                pending = {
                    "step": step,
                    "source": "kubectl",
                    "request": {
                        "method": method,
                        "path": split.path,
                        "query": [list(q) for q in urllib.parse.parse_qsl(split.query)],
                        "content_type": headers.get("Content-Type"),
                        "accept": headers.get("Accept"),
                        "body": None,
                    },
                    "response": {"status": 0, "body": None},
                }
                out.append(pending)
        elif '"Response" verb=' in line and pending is not None:
            found = _RESPONSE.search(line)
            if found:
                pending["response"]["status"] = int(found.group(3))
        elif '"Response Body" body=' in line and pending is not None:
            if '"Response Body" body=<' in line:
                text = lines[i + 1].lstrip("\t")
            else:  # one line, a Go-quoted string
                quoted = line.split('"Response Body" body=', 1)[1]
                try:
                    text = json.loads(quoted)
                except ValueError:
                    text = ""
            pending["response"]["body"] = body_of(text.encode(), "")
        i += 1
    return out


# ------------------------------------------------------------------ replay


def _rv_of(body: Any) -> str | None:
    meta = body.get("metadata") if isinstance(body, dict) else None
    return (
        str(meta.get("resourceVersion"))
        if isinstance(meta, dict) and meta.get("resourceVersion")
        else None
    )


def _openapi_paths(body: Any) -> dict[str, str]:
    paths = body.get("paths") if isinstance(body, dict) else None
    return (
        {k: v.get("serverRelativeURL", "") for k, v in (paths or {}).items()}
        if isinstance(paths, dict)
        else {}
    )


def replay(recording: dict[str, Any], lab: Any, name: str = "replay") -> list[dict[str, Any]]:
    """Sends every recorded request to the lab cluster NAME, in order; one entry per answer
    with the real and the lab's extracted values and the differences."""
    api = k8s_config.new_client_from_config_dict(lab.kubeconfig(name))
    cfg = api.configuration
    auth = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    prefix = cfg.api_key_prefix.get("authorization") or cfg.api_key_prefix.get("BearerToken")
    token = f"{prefix} {auth}" if prefix and auth else auth
    pool = api.rest_client.pool_manager
    rv_map: dict[str, str] = {}
    openapi_lab: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    try:
        for exchange in recording["exchanges"]:
            req, real = exchange["request"], exchange["response"]
            query = []
            for key, value in req["query"]:
                if key == "resourceVersion":
                    # Rule: a resourceVersion the real server gave is the lab's of the same answer.
                    value = rv_map.get(value, value)
                query.append((key, value))
            path = req["path"]
            if path.startswith("/openapi/v3/"):
                # Rule: each server names its documents with its own hash (its root's
                # serverRelativeURL); the lab's document for the same group version is asked.
                wanted = path[len("/openapi/v3/") :]
                lab_url = openapi_lab.get(wanted)
                if lab_url:
                    split = urllib.parse.urlsplit(lab_url)
                    query = urllib.parse.parse_qsl(split.query)
            headers = {"Authorization": token} if token else {}
            if req.get("accept"):
                headers["Accept"] = req["accept"]
            body = None
            if req.get("body") is not None:
                headers["Content-Type"] = req.get("content_type") or "application/json"
                body = json.dumps(req["body"]).encode()
            url = cfg.host + path + ("?" + urllib.parse.urlencode(query) if query else "")
            watching = any(k == "watch" and v == "true" for k, v in query)
            resp = pool.request(
                req["method"], url, headers=headers, body=body, timeout=30, preload_content=True
            )
            lab_body = body_of(resp.data or b"", "watch=true" if watching else "")
            if exchange["source"] == "kubectl" and path == "/openapi/v3":
                openapi_lab = _openapi_paths(lab_body)
            real_rv, lab_rv = _rv_of(real["body"]), _rv_of(lab_body)
            if real_rv and lab_rv:
                rv_map[real_rv] = lab_rv
            want = {"status": real["status"], **extract(real["body"])}
            truncated = isinstance(real["body"], dict) and "_text" in real["body"]
            got = {"status": resp.status, **({} if truncated else extract(lab_body))}
            diffs = []
            for key in sorted(set(want) | set(got)):
                if want.get(key) != got.get(key):
                    diffs.append(
                        {
                            "path": key,
                            "real": want.get(key),
                            "lab": got.get(key),
                            "known": known(exchange["step"], key),
                        }
                    )
            results.append(
                {
                    "step": exchange["step"],
                    "source": exchange["source"],
                    "method": req["method"],
                    "path": path,
                    "real_status": real["status"],
                    "lab_status": resp.status,
                    "differences": diffs,
                }
            )
    finally:
        api.close()
    return results


def report(results: list[dict[str, Any]]) -> tuple[str, int]:
    """Text of every difference (known ones with their reason); the count of unknown ones."""
    lines, unknown = [], 0
    for r in results:
        for d in r["differences"]:
            mark = "known" if d["known"] else "DIFF "
            unknown += 0 if d["known"] else 1
            lines.append(
                f"{mark} {r['step']} {r['method']} {r['path']} {d['path']}: real "
                f"{json.dumps(d['real'])[:200]} lab {json.dumps(d['lab'])[:200]}"
            )
    total = len(results)
    same = sum(1 for r in results if not r["differences"])
    lines.append(
        f"{total} requests replayed: {same} answered alike, "
        f"{total - same} with differences ({unknown} not in KNOWN)"
    )
    return "\n".join(lines), unknown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.replay", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("replay", help="replay the recording against a fresh lab")
    rep.add_argument("--recording", default=str(RECORDING))
    rep.add_argument("-v", "--verbose", action="store_true", help="list the known ones too")
    args = parser.parse_args(argv)
    from lab.server import LabServer

    recording = json.loads(Path(args.recording).read_text())
    with LabServer([LAB_PROFILE]) as lab:
        results = replay(recording, lab)
    text, unknown = report(results)
    for line in text.splitlines():
        if args.verbose or not line.startswith("known"):
            print(line)
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
