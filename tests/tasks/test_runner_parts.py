"""The parts of a run around the battery, in this process: the heartbeat thread, the worker
host's own SCTP check, the readiness refresh the beat sends."""

from __future__ import annotations

import socket
import time

import pytest

from dashboard.domain.models import PublishedReadiness, Run
from kernel import sctp_host
from tests import factories as f
from workers import runner, tasks
from workers.lease import Lease


def wait_until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def beating(settings):
    """A running run holding its cluster's database lease, and a fast heartbeat thread for it."""
    settings.EMBEDDED_BROKER = True
    settings.RUN_HEARTBEAT_SECONDS = 0.05
    cluster = f.cluster()
    run = Run.objects.create(
        cluster=cluster,
        plugin=cluster.plugin,
        proxier=cluster.proxier,
        battery="basic",
        state=Run.State.RUNNING,
    )
    lease = Lease(cluster.id, ttl=30, holder=runner.lease_holder(run.id))
    assert lease.acquire()
    beat = runner.Heartbeat(run.id, lease)
    beat.start()
    yield run, lease, beat
    beat.stop.set()
    beat.join(timeout=5)
    lease.release()


# the thread has its own database connection: the data must be committed
@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_marks_the_run_alive_and_notices_a_cancel(beating) -> None:
    run, _, beat = beating
    assert wait_until(lambda: Run.objects.get(pk=run.pk).heartbeat is not None)
    assert not beat.cancel.is_set()
    Run.objects.filter(pk=run.pk).update(state=Run.State.CANCELLED)
    assert wait_until(beat.cancel.is_set)
    assert beat.reason in ("the run was cancelled or ended elsewhere", "lost the cluster lease")


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_notices_a_lost_lease(beating) -> None:
    run, _lease, beat = beating
    Lease(run.cluster_id).release()  # not the holder: nothing happens
    time.sleep(0.2)
    assert not beat.cancel.is_set()
    from dashboard.domain.models import ClusterLease

    ClusterLease.objects.filter(
        cluster_id=run.cluster_id
    ).delete()  # as if it expired and was taken
    assert wait_until(beat.cancel.is_set)
    assert beat.reason == "lost the cluster lease"


def _host_has_sctp() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(_host_has_sctp(), reason="this host has kernel SCTP")
def test_the_worker_host_says_why_it_cannot_reach_a_load_balancer_over_sctp_itself() -> None:
    found = sctp_host.check_worker_sctp()
    assert found["available"] is False and found["reason"].startswith("kernel has no SCTP")
    assert found["pysctp_version"]
    ok, detail = sctp_host.sctp_connect("127.0.0.1", 9, timeout=0.5)
    assert not ok and detail.startswith("OTHER: ")


def test_an_unresolvable_load_balancer_is_a_dns_failure() -> None:
    ok, detail = sctp_host.sctp_connect("no-such-host.invalid", 9, timeout=0.5)
    assert not ok and detail.startswith(("DNS: no-such-host.invalid", "OTHER: pysctp"))


@pytest.mark.django_db
def test_the_readiness_refresh_task_stores_the_evaluation() -> None:
    tasks.refresh_readiness(reason="beat")
    assert PublishedReadiness.objects.exists()
