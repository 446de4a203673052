"""The lab held against the real API server: the committed recording of kube-apiserver v1.36.3
(tests/fixtures/realcluster/api-recording.json, `python -m lab.replay record`) replayed against
a fresh lab cluster. Any difference outside lab.replay.KNOWN fails; so does a KNOWN entry that
no difference uses any more (the lab was fixed: the entry goes)."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest

from lab import replay
from lab.server import LabServer


@pytest.fixture(scope="module")
def recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(replay.RECORDING.read_text())
    return data


@pytest.fixture(scope="module")
def results(recording: dict[str, Any]) -> list[dict[str, Any]]:
    with LabServer([replay.LAB_PROFILE]) as lab:
        return replay.replay(recording, lab)


def test_the_recording_is_the_real_servers(recording: dict[str, Any]) -> None:
    assert "kube-apiserver v1.36.3 built from source" in recording["attribution"]
    version = next(e for e in recording["exchanges"] if e["step"] == "version")
    assert version["response"]["body"]["gitVersion"] == "v1.36.3"
    assert "emulated" not in version["response"]["body"]
    sources = {e["source"] for e in recording["exchanges"]}
    assert sources == {"python-client", "kubectl"}


def test_every_difference_is_known(results: list[dict[str, Any]]) -> None:
    text, unknown = replay.report(results)
    assert unknown == 0, text
    assert len(results) >= 50


def test_every_known_entry_is_still_needed(results: list[dict[str, Any]]) -> None:
    used = {
        entry
        for r in results
        for d in r["differences"]
        for entry in replay.KNOWN
        if fnmatch.fnmatchcase(r["step"], entry[0]) and fnmatch.fnmatchcase(d["path"], entry[1])
    }
    assert set(replay.KNOWN) - used == set()


@pytest.mark.parametrize(
    "step",
    [
        "namespace-create-again-409",
        "namespace-create-invalid-422",
        "service-create-protocol-sctp-422",
        "pod-create-protocol-sctp-422",
        "netpol-create-protocol-sctp-422",
        "pod-read-missing-404",
        "pod-in-missing-namespace-404",
        "netpol-delete-again-404",
        "hostexec-create-restricted-403",
        "serviceaccount-token-missing-404",
        "kubectl-get-ns-missing",
    ],
)
def test_refusals_are_the_real_servers_word_for_word(
    results: list[dict[str, Any]], step: str
) -> None:
    # Status code, reason, message and causes compared: none may differ, known or not.
    found = [r for r in results if r["step"] == step]
    assert found
    for r in found:
        assert r["differences"] == [], r
    assert any(r["real_status"] >= 400 for r in found)


def test_a_restricted_namespace_refuses_the_hostexec_pod_as_upstream() -> None:
    from lab.admission import namespace_refusal

    spec = {
        "hostNetwork": True,
        "containers": [{"name": "c", "securityContext": {"privileged": True}}],
        "volumes": [{"name": "rootfs", "hostPath": {"path": "/"}}],
    }
    assert (
        namespace_refusal("p", spec, {"pod-security.kubernetes.io/enforce": "privileged"}) is None
    )
    assert namespace_refusal("p", spec, None) is None
    baseline = namespace_refusal("p", spec, {"pod-security.kubernetes.io/enforce": "baseline"})
    assert baseline is not None and baseline.code == 403
    assert baseline.message == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": host namespaces '
        '(hostNetwork=true), hostPath volumes (volume "rootfs"), privileged (container "c" '
        "must not set securityContext.privileged=true)"
    )


def test_normalization_rules() -> None:
    assert replay.normalize("metadata.uid", "004cc82a-990b-497d-966e-e9af4e89583a") == "<uid>"
    assert replay.normalize("metadata.uid", "bef33ab7-5f78") == "bef33ab7-5f78"  # not a UUID
    assert replay.normalize("metadata.resourceVersion", "960") == "<rv>"
    assert replay.normalize("spec.clusterIP", "10.0.0.12") == "<ip>"
    assert replay.normalize("spec.clusterIP", "None") == "None"  # headless stays itself
    assert replay.normalize("spec.ports[].nodePort", [30001, 80]) == ["<nodePort>", 80]
    assert replay.normalize("rows[].cells", [["a", "b"], ["c", "d"]]) == [2, 2]


def test_kubectl_log_lines_become_exchanges() -> None:
    log = "\n".join(
        [
            'I1207 round_trippers.go:527] "Request" curlCommand=<',
            (
                '\tcurl -v -XGET  -H "Accept: application/json" \'https://127.0.0.1:1/api/v1/'
                "namespaces/x?timeout=32s'"
            ),
            " >",
            (
                'I1207 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:1/api/v1/'
                'namespaces/x?timeout=32s" status="404 Not Found" headers=<'
            ),
            " >",
            'I1207 helper.go:1] "Response Body" body=<',
            '\t{"kind":"Status","code":404,"reason":"NotFound"}',
            " >",
        ]
    )
    [exchange] = replay.parse_kubectl_log("s", log)
    assert exchange["request"]["path"] == "/api/v1/namespaces/x"
    assert exchange["request"]["query"] == [["timeout", "32s"]]
    assert exchange["request"]["accept"] == "application/json"
    assert exchange["response"] == {
        "status": 404,
        "body": {"kind": "Status", "code": 404, "reason": "NotFound"},
    }
