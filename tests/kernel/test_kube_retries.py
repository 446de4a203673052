"""Kube.call: bounded retries of transient errors, adoption of retried creates, fail-fast."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from kernel.kube import ApiCallFailed, ClusterUnreachable, Kube, api_error_message


def api_exception(
    status: int, message: str = "boom", reason: str = "InternalError"
) -> ApiException:
    exc = ApiException(status=status, reason=reason)
    exc.body = json.dumps({"kind": "Status", "message": message, "reason": reason, "code": status})
    return exc


class Flaky:
    def __init__(self, *failures: BaseException, result: object = "ok") -> None:
        self.failures = list(failures)
        self.result = result
        self.calls: list[dict] = []

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs)
        if self.failures:
            raise self.failures.pop(0)
        return self.result


@pytest.fixture
def kube():
    sleeps: list[float] = []
    instance = Kube(k8s.ApiClient(), request_timeout=1.5, tries=4, backoff=0.5, sleep=sleeps.append)
    instance.sleeps = sleeps
    return instance


def test_transient_errors_are_retried_with_exponential_backoff(kube):
    fn = Flaky(api_exception(503), api_exception(500), result="done")
    assert kube.call(fn) == "done"
    assert kube.sleeps == [0.5, 1.0]
    assert all(call["_request_timeout"] == 1.5 for call in fn.calls)


def test_client_errors_are_raised_at_once(kube):
    fn = Flaky(api_exception(422, reason="Invalid"))
    with pytest.raises(ApiException):
        kube.call(fn)
    assert len(fn.calls) == 1


def test_retries_are_bounded_and_the_last_cause_is_named(kube):
    fn = Flaky(*(api_exception(500, "etcd timed out") for _ in range(5)))
    with pytest.raises(
        ApiCallFailed, match="API kept failing after 4 tries: 500 InternalError: etcd timed out"
    ):
        kube.call(fn)
    assert len(fn.calls) == 4
    assert kube.unreachable is None


def test_a_create_retried_after_it_went_through_adopts_the_existing_object(kube):
    fn = Flaky(api_exception(503), api_exception(409, reason="AlreadyExists"))
    assert kube.call(fn, adopt=lambda: "existing") == "existing"


def test_a_conflict_on_the_first_try_is_a_real_conflict(kube):
    fn = Flaky(api_exception(409, reason="AlreadyExists"))
    with pytest.raises(ApiException):
        kube.call(fn, adopt=lambda: "existing")


def test_connection_errors_mark_the_cluster_unreachable_and_later_calls_try_once(kube):
    reset = urllib3.exceptions.ProtocolError(
        "Connection aborted.", ConnectionResetError(104, "reset")
    )
    with pytest.raises(
        ClusterUnreachable, match="cluster unreachable after 4 tries: ProtocolError"
    ):
        kube.call(Flaky(*(reset for _ in range(4))))
    assert kube.unreachable
    later = Flaky(ConnectionRefusedError(111, "refused"), result="late")
    with pytest.raises(ClusterUnreachable, match="after 1 tries"):
        kube.call(later)
    assert len(later.calls) == 1


def test_api_error_messages_use_the_status_object():
    exc = api_exception(422, 'Pod "x" is invalid: Unsupported value: "SCTP"', "Invalid")
    assert api_error_message(exc) == '422 Invalid: Pod "x" is invalid: Unsupported value: "SCTP"'
