"""The evaluation reads three keys of a run's fingerprint, not the whole document.

A fingerprint is the battery's record of the cluster (nodes, boot IDs, every object it created,
the CNI detection): kilobytes per run, and an evaluation reads hundreds of runs. load() reads the
columns the database keeps of the keys run_item() reads (Run.fp_*, policy.RUN_FINGERPRINT_KEYS);
the items it builds must be the ones run_item() builds from the whole run, whatever the
fingerprint holds.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest

from dashboard.domain import policy
from dashboard.domain.models import Run
from dashboard.domain.readiness.evidence_lookup import load, plugins_by_id
from tests import factories as f

pytestmark = pytest.mark.django_db

FINGERPRINTS = [
    {},
    [],
    ["a", "list", "not", "a", "mapping"],
    {"emulated": True},
    {"emulated": None},
    {"emulated": "yes"},
    {"emulated": "false"},
    {"emulated": ""},
    {"emulated": []},
    {"emulated": {"by": "lab"}},
    {"proxier_detected": "123"},
    {"proxier_detected": 1},
    {"proxier_detected": "ipvs", "emulated": "0"},
    {"emulated": 0},
    {"emulated": False, "proxier_detected": "ipvs"},
    {"proxier_detected": "ebpf (cilium)"},
    {"proxier_detected": None},
    {"sctp_module_before": {"node-1": False, "node-2": True}},
    {"sctp_module_before": {"node-1": True}},
    {"sctp_module_before": {"node-1": None}},
    {"sctp_module_before": []},
    {"sctp_module_before": "loaded"},
    {
        "sctp_module_before": {"n": False},
        "proxier_detected": "nftables",
        "facts": {"objects": [{"uid": "u"}] * 50},
        "node_names": ["n"] * 20,
    },
]


def _plain(run: Run) -> policy.Item:
    """run_item() on the whole run, as the run's own page builds it."""
    results = run.results.all()
    plugins = plugins_by_id()
    return policy.run_item(
        run,
        {r.test_key: r.outcome for r in results},
        {r.test_key: r.reason[:300] for r in results},
        policy.plugin_facts(plugins[run.plugin_id]),
    )


@pytest.mark.parametrize("fingerprint", FINGERPRINTS, ids=repr)
@pytest.mark.parametrize("column", ["", "ipvs"])
def test_items_from_the_extracted_keys_are_the_items_of_the_whole_run(fingerprint, column):
    c = f.cluster()
    run = f.run(c, module_before={"node-1": False})
    # the fingerprint as written, and the run's own column (detected mode) set or not
    Run.objects.filter(pk=run.pk).update(fingerprint=fingerprint, proxier_detected=column)
    run = Run.objects.select_related("cluster").get(pk=run.pk)
    try:
        expected = asdict(_plain(run))
    except AttributeError:  # a fingerprint that is not a mapping: the whole-run path cannot read it
        expected = None
    got = asdict(load([run.id], [])[("run", run.id)])
    if expected is None:
        # the extracted keys read as absent: an unchecked invariant, nothing detected
        assert got["invariant"] == "unchecked"
        assert got["proxier"] == (column or None)
    else:
        assert got == expected


def test_the_evaluation_never_reads_the_whole_fingerprint():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    c = f.cluster()
    run = f.run(c)
    with CaptureQueriesContext(connection) as queries:
        load([run.id], [])
    run_query = next(q["sql"] for q in queries.captured_queries if '"dashboard_run"' in q["sql"])
    # only the columns the database keeps of it, never the document itself
    assert '"dashboard_run"."fingerprint"' not in run_query
    for key in policy.RUN_FINGERPRINT_KEYS:
        assert f'"dashboard_run"."fp_{key}"' in run_query


def test_the_stored_keys_are_the_keys_run_item_reads():
    """Run.fp_<key> for every key of policy.RUN_FINGERPRINT_KEYS, each computed from that key."""
    stored = {f.name: f.expression.key for f in Run._meta.get_fields() if f.name.startswith("fp_")}
    assert stored == {f"fp_{key}": key for key in policy.RUN_FINGERPRINT_KEYS}


def test_the_stored_keys_follow_every_write_of_the_fingerprint():
    c = f.cluster()
    run = f.run(c, module_before={"node-1": False})  # save()
    assert load([run.id], [])[("run", run.id)].invariant == "conclusive"
    run.fingerprint = {"sctp_module_before": {"node-1": True}, "emulated": True}
    run.save(update_fields=["fingerprint"])
    stored = Run.objects.values("fp_sctp_module_before", "fp_emulated").get(pk=run.pk)
    assert stored == {"fp_sctp_module_before": {"node-1": True}, "fp_emulated": True}
    Run.objects.filter(pk=run.pk).update(fingerprint={})  # a bulk UPDATE
    stored = Run.objects.values("fp_sctp_module_before", "fp_emulated").get(pk=run.pk)
    assert stored == {"fp_sctp_module_before": None, "fp_emulated": None}
    (made,) = Run.objects.bulk_create(
        [Run(cluster=c, plugin=c.plugin, fingerprint={"emulated": 1})]
    )
    assert Run.objects.values_list("fp_emulated", flat=True).get(pk=made.pk) == 1
