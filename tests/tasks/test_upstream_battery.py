"""The `upstream` battery: a worker runs e2e.test of the cluster's minor against a lab cluster,
and the run's results come from the JUnit it wrote, read through the vendor-file ingest.

The e2e.test here is a STAND-IN (tests/fixtures/e2e/stand_in_e2e.py): a fake of the binary
only, at one seam. It is installed at E2E_DIR/v1.<minor>/e2e.test and run by the project's real
code: the command line, the pinned kubeconfig, the process group, the streamed output, the time
limit, the cancel, the ingest, the run's end and its page. Inside, it does what upstream's
suite would need of the cluster (GET /version with the kubeconfig's CA, a pod that starts), and
selects its specs with our --ginkgo.focus from a real upstream JUnit
(tests/fixtures/e2e-junit/conformance-v1.30-junit_01.xml.gz, see NOTICE.md there), which it
writes back as the run's JUnit with those specs passed.
"""

from __future__ import annotations

import html
import io
import json
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from dashboard.domain.models import Run
from dashboard.domain.runs import RunRequestError, request_run
from kernel.vocabulary import Key
from tests.labtools import lab_clusters, profile
from workers import runner

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STAND_IN = FIXTURES / "e2e" / "stand_in_e2e.py"
REAL_JUNIT = FIXTURES / "e2e-junit" / "conformance-v1.30-junit_01.xml.gz"
RELEASE = "1.30.2"


@pytest.fixture
def e2e_dir(tmp_path, settings) -> Path:
    settings.E2E_DIR = tmp_path / "e2e"
    settings.E2E_TIME_LIMIT_SECONDS = 60
    settings.RUN_HEARTBEAT_SECONDS = 0.2
    return settings.E2E_DIR


def install(e2e_dir: Path, minor: int = 30, **mode: object) -> Path:
    """The stand-in at E2E_DIR/v1.<minor>/e2e.test, run by this interpreter, with its mode."""
    where = e2e_dir / f"v1.{minor}"
    where.mkdir(parents=True)
    body = STAND_IN.read_text().split("\n", 1)[1]
    binary = where / "e2e.test"
    binary.write_text(f"#!{sys.executable}\n{body}")
    binary.chmod(0o755)
    shutil.copy(REAL_JUNIT, where / "real-junit_01.xml.gz")
    (where / "mode").write_text(json.dumps(mode))
    return where


def run_battery(name: str) -> tuple[dict, int]:
    out = io.StringIO()
    try:
        call_command("run_battery", name, "--battery", "upstream", "--sync", "--json", stdout=out)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return json.loads(out.getvalue()), code


def gone(pid: int) -> bool:
    """The process ended (a zombie waiting for a parent that never reaps it has ended too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_it_runs_upstreams_specs_and_their_junit_becomes_the_runs_results(e2e_dir, client):
    where = install(e2e_dir)
    with lab_clusters(profile(name="up-calico", kubernetes_version=RELEASE)):
        data, code = run_battery("up-calico")
    assert code == 0 and data["status"] == "finished", data.get("error")
    outcomes = {key: value["outcome"] for key, value in data["results"].items()}
    for key in (
        Key.DECLARE_SCTP_PORTS,
        Key.HOSTPORT_KUBENET,
        Key.NETPOL_SCTP_BLOCKS_TCP_UDP,
        Key.POD_TO_POD,
        Key.POD_TO_SERVICE,
        Key.NETPOL_ALLOW_DENY,
    ):
        assert outcomes[key] == "passed", key
    # No upstream spec feeds these in 1.30: never a stand-in verdict. The ingest's not_run is
    # stored, but upstream has no outcome for them to show (issue 39): the answer omits them.
    assert Key.SERVICE_IPTABLES_RULES not in outcomes
    assert Key.POD_TO_LOADBALANCER not in outcomes
    run = Run.objects.get(pk=data["run"])
    stored = run.results.get(test_key=Key.POD_TO_LOADBALANCER)
    assert stored.outcome == "not_run" and "no upstream e2e test" in stored.reason
    assert run.upstream["binary"] == "v1.30/e2e.test" and run.upstream["minor"] == 30
    assert len(run.upstream["specs"]) == 13
    # The lab is single-stack: [Feature:IPv6DualStack] is left out, as upstream's runners do,
    # decided by the secondary-family check's own fact; its one spec ends skipped with that.
    single = "not a dual-stack cluster: a RequireDualStack Service got one ClusterIP"
    assert [f["feature"] for f in run.upstream["left_out"]] == ["[Feature:IPv6DualStack]"]
    assert run.upstream["left_out"][0]["reason"].startswith(single)
    assert run.upstream["skip"] == r"\[Feature:IPv6DualStack\]"
    assert (
        f"--ginkgo.skip={run.upstream['skip']}"
        in json.loads((where / "seen.json").read_text())["argv"]
    )
    skipped = [s for s in run.upstream["specs"] if s["outcome"] == "skipped"]
    assert [s["name"] for s in skipped] == [
        n for n in (s["name"] for s in run.upstream["specs"]) if "[Feature:IPv6DualStack]" in n
    ]
    assert skipped[0]["message"].startswith(single)
    assert {s["outcome"] for s in run.upstream["specs"]} == {"passed", "skipped"}
    assert all(s["key"] for s in run.upstream["specs"])
    assert run.upstream["progress"] == {"running": "", "done": 12, "total": 12}
    assert run.fingerprint["emulated"] is True and run.emulated  # the lab: never counted
    assert "Ran 12 of" in run.upstream_log

    # e2e.test got a kubeconfig of ours: one context, the checked address, in a private
    # directory that is gone now, and an environment without the worker's secrets.
    seen = json.loads((where / "seen.json").read_text())
    assert seen["contexts"] == 1 and seen["servers"][0].startswith("https://127.0.0.1:")
    assert not Path(seen["kubeconfig"]).exists()
    assert set(seen["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "KUBECONFIG", "LC_CTYPE"}
    assert "Kubernetes server version: v1.30.2" in run.upstream_log

    page = client.get(f"/runs/{run.id}/").content.decode()
    assert "Upstream&#x27;s specs" in page or "Upstream's specs" in page
    assert html.escape(run.upstream["specs"][0]["name"]) in page
    assert "12 of 12 specs ran" in page
    assert "data-left-out" in page and html.escape(single) in page
    junit = client.get(f"/runs/{run.id}/junit.xml")
    assert junit.status_code == 200 and junit["Content-Type"] == "application/xml"
    assert junit.content == bytes(Run.objects.defer(None).get(pk=run.id).upstream_junit)
    assert b'<testsuite name="Kubernetes e2e suite"' in junit.content
    # The focus it ran with is in upstream's own file, as ginkgo records it.
    assert html.escape(run.upstream["focus"]).encode() in junit.content


def test_an_e2e_test_that_crashes_without_a_junit_ends_the_run_in_error_with_its_last_lines(
    e2e_dir, client
):
    install(e2e_dir, mode="crash")
    with lab_clusters(profile(name="up-crash", kubernetes_version=RELEASE)):
        data, code = run_battery("up-crash")
    assert code == 1 and data["status"] == "error"
    assert "without writing a JUnit file" in data["error"] and "exit status 1" in data["error"]
    assert "[signal SIGSEGV" in data["error"]  # its last line
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}  # nothing counted
    run = Run.objects.get(pk=data["run"])
    assert "nil pointer dereference" in run.upstream_log  # the partial output is kept
    assert run.upstream["progress"]["done"] == 2
    assert client.get(f"/runs/{run.id}/junit.xml").status_code == 404
    assert "nil pointer dereference" in client.get(f"/runs/{run.id}/").content.decode()


def test_an_e2e_test_past_its_time_limit_is_killed_with_its_process_group(e2e_dir, settings):
    where = install(e2e_dir, mode="hang")
    settings.E2E_TIME_LIMIT_SECONDS = 3
    with lab_clusters(profile(name="up-hang", kubernetes_version=RELEASE)):
        data, code = run_battery("up-hang")
    assert code == 1 and data["status"] == "error"
    assert "ran past its time limit of 3 s (E2E_TIME_LIMIT_SECONDS)" in data["error"]
    assert "process group was killed" in data["error"]
    assert "waiting for the server pod" in data["error"]
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}
    child = int((where / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(child), "a child of e2e.test outlived the run"


def test_a_minor_without_a_binary_is_refused_by_name_not_guessed(e2e_dir):
    install(e2e_dir, minor=31)  # another minor's binary is there; this cluster's is not
    with lab_clusters(profile(name="up-none", kubernetes_version=RELEASE)):
        data, code = run_battery("up-none")
    assert code == 1 and data["status"] == "error"
    assert data["error"].startswith(
        f"no e2e.test for Kubernetes 1.30: this worker has e2e.test for 1.31 only (in {e2e_dir}); "
        "build it with `make e2e-binaries` or put it at "
    )
    assert str(e2e_dir / "v1.30" / "e2e.test") in data["error"]
    assert Run.objects.get(pk=data["run"]).upstream == {"minor": 30, "binary": "", "specs": []}
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}


def test_a_cluster_that_cannot_run_pods_ends_the_run_in_error_with_the_suites_reason(e2e_dir):
    install(e2e_dir, pod_wait=1)
    stuck = profile(name="up-stuck", kubernetes_version=RELEASE, faults={"stuck_pending": True})
    with lab_clusters(stuck):
        data, code = run_battery("up-stuck")
    assert code == 1 and data["status"] == "error"
    assert "could not start on this cluster ([SynchronizedBeforeSuite] failed: " in data["error"]
    assert "did not start within 1s: phase Pending" in data["error"]
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}
    run = Run.objects.get(pk=data["run"])
    assert run.upstream["specs"]  # upstream's JUnit is kept and listed, nothing of it counted
    assert Run.objects.filter(pk=run.pk, upstream_junit__isnull=False).exists()


def test_a_cancelled_run_stops_e2e_test_and_keeps_what_it_printed(e2e_dir, client):
    install(e2e_dir, mode="slow", pause=0.5)
    with lab_clusters(profile(name="up-cancel", kubernetes_version=RELEASE)) as (_, clusters):
        run = request_run(clusters["up-cancel"], "upstream", dispatch_on_commit=False)

        def execute() -> None:
            try:
                runner.execute(run.id, worker="test")
            finally:
                connection.close()

        worker = threading.Thread(target=execute)
        worker.start()
        deadline = time.monotonic() + 30
        progress: dict = {}
        while time.monotonic() < deadline:
            progress = Run.objects.get(pk=run.pk).upstream.get("progress") or {}
            if progress.get("done", 0) >= 1 and progress.get("running"):
                break
            time.sleep(0.1)
        assert progress.get("running"), "e2e.test never reported a running spec"
        page = client.get(f"/runs/{run.id}/progress/").content.decode()
        assert (
            "running: " in page and " of 12 done" in page
        )  # the live progress (the single-stack lab: 12)
        Run.objects.filter(pk=run.pk).update(state=Run.State.CANCELLED)
        worker.join(timeout=30)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert run.state == "cancelled"
    assert "Will run 12 of" in Run.objects.defer(None).get(pk=run.pk).upstream_log
    assert not run.results.exclude(outcome="not_run").exists()


def test_a_basic_only_cluster_refuses_the_upstream_battery(e2e_dir):
    install(e2e_dir)
    with lab_clusters(profile(name="up-basic", kubernetes_version=RELEASE)) as (_, clusters):
        cluster = clusters["up-basic"]
        cluster.basic_only = True
        cluster.save(update_fields=["basic_only"])
        with pytest.raises(RunRequestError) as refused:
            request_run(cluster, "upstream")
        assert refused.value.status == 409
        assert "basic-only" in refused.value.message and "sctp.ko" in refused.value.message
        with pytest.raises(CommandError, match="basic-only"):
            call_command("run_battery", "up-basic", "--battery", "upstream", "--sync")
    assert not Run.objects.filter(cluster=cluster).exists()


REAL_E2E = Path(__file__).resolve().parents[2] / "var" / "e2e" / "v1.36"


def test_the_real_binary_on_a_lab_profile_past_its_limit_ends_in_error_with_its_output(
    tmp_path, settings
):
    """The whole path (run_battery, the worker's execute, the pinned kubeconfig, the ingest)
    with upstream's REAL e2e.test v1.36.3 (`make e2e-binaries`; skipped without it) against a
    lab profile of that release: its suite setup passes on the lab (docs/lab-vs-e2e.md), a
    spec starts, and at the limit the group is stopped, the run ends `error`, nothing counts."""
    binary = REAL_E2E / "e2e.test"
    if not binary.is_file():
        pytest.skip(f"no real e2e.test at {binary} (`make e2e-binaries` builds it)")
    where = tmp_path / "e2e" / "v1.36"
    where.mkdir(parents=True)
    (where / "e2e.test").symlink_to(binary)
    if (REAL_E2E / "kubectl").is_file():
        (where / "kubectl").symlink_to(REAL_E2E / "kubectl")
    settings.E2E_DIR = tmp_path / "e2e"
    settings.E2E_TIME_LIMIT_SECONDS = 12
    settings.RUN_HEARTBEAT_SECONDS = 0.2
    with lab_clusters(profile(name="up-real", kubernetes_version="1.36.3")):
        data, code = run_battery("up-real")
    assert code == 1 and data["status"] == "error"
    assert data["error"].startswith(
        "e2e.test ran past its time limit of 12 s (E2E_TIME_LIMIT_SECONDS): its process group "
        "was killed, nothing is counted"
    )
    assert {v["outcome"] for v in data["results"].values()} == {"not_run"}
    run = Run.objects.defer(None).get(pk=data["run"])
    assert run.upstream["binary"] == "v1.36/e2e.test"
    # The lab is single-stack: upstream's [Feature:IPv6DualStack] spec is left out.
    assert [f["feature"] for f in run.upstream["left_out"]] == ["[Feature:IPv6DualStack]"]
    assert "Will run 12 of 942 specs" in run.upstream_log
    assert "[SynchronizedBeforeSuite] PASSED" in run.upstream_log  # the lab answers its setup
    assert run.upstream["progress"]["total"] == 12
    assert not run.results.exclude(outcome="not_run").exists()


def test_a_cluster_without_the_features_has_their_specs_left_out_with_the_batterys_reasons(
    e2e_dir, client
):
    """No SCTP in the nodes' kernels (the battery's kernelsctp probe), a plugin that implements
    no NetworkPolicy (the netpol tests' skip), single-stack (the secondary-family check's
    fact): e2e.test gets one --ginkgo.skip for the three labels, and every spec it left out ends
    skipped with the battery's reason, mapped to its catalog key by the ingest."""
    where = install(e2e_dir)
    lab = profile(
        name="up-bare",
        kubernetes_version=RELEASE,
        plugin="kubenet",
        kubenet=True,
        faults={"no_kernel_sctp": True},
    )
    with lab_clusters(lab):
        data, code = run_battery("up-bare")
    assert code == 0 and data["status"] == "finished", data.get("error")
    run = Run.objects.get(pk=data["run"])
    left = {f["feature"]: f["reason"] for f in run.upstream["left_out"]}
    assert list(left) == [
        "[Feature:NetworkPolicy]",
        "[Feature:SCTPConnectivity]",
        "[Feature:IPv6DualStack]",
    ]
    assert left["[Feature:NetworkPolicy]"] == "the plugin kubenet does not implement NetworkPolicy"
    assert left["[Feature:SCTPConnectivity]"].startswith(
        "[Feature:SCTPConnectivity]: the kernel of node up-bare-worker has no SCTP sockets"
    ) or left["[Feature:SCTPConnectivity]"].startswith(
        "[Feature:SCTPConnectivity]: the kernels of nodes up-bare-worker"
    )
    assert any("protocol not supported" in e for e in run.upstream["left_out_evidence"])
    argv = json.loads((where / "seen.json").read_text())["argv"]
    assert (
        r"--ginkgo.skip=\[Feature:NetworkPolicy\]|\[Feature:SCTPConnectivity\]|"
        r"\[Feature:IPv6DualStack\]"
    ) in argv
    by_name = {s["name"]: s for s in run.upstream["specs"]}
    assert len(by_name) == 13
    ran = {n for n, s in by_name.items() if s["outcome"] == "passed"}
    assert all("[Feature:" not in n for n in ran) and len(ran) == 2
    for name, spec in by_name.items():
        if name in ran:
            continue
        assert spec["outcome"] == "skipped", name
        wanted = [why for label, why in left.items() if label in name]
        assert spec["message"] == "; ".join(wanted), name
    outcomes = data["results"]
    assert outcomes[Key.DECLARE_SCTP_PORTS]["outcome"] == "passed"
    assert outcomes[Key.HOSTPORT_KUBENET]["outcome"] == "passed"
    for key in (Key.POD_TO_POD, Key.POD_TO_SERVICE, Key.NETPOL_ALLOW_DENY):
        assert outcomes[key]["outcome"] == "skipped", key
        assert "no SCTP sockets" in outcomes[key]["reason"], key
    assert outcomes[Key.NETPOL_SCTP_BLOCKS_TCP_UDP]["outcome"] == "skipped"
    assert outcomes[Key.NETPOL_SCTP_BLOCKS_TCP_UDP]["reason"] == left["[Feature:NetworkPolicy]"]
    page = client.get(f"/runs/{run.id}/").content.decode()
    for label in left:
        assert f'data-feature="{label}"' in page
    assert html.escape(left["[Feature:NetworkPolicy]"]) in page
