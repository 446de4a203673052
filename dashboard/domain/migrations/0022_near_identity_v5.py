"""Near identity v5: a run's near identity (the suite key: its start, nodes and suite) reads
the suite as the number of testcases and the SCTP testcases' names, not every name again
(issues 21 and 25: identifying a run must add at most a fifth to the ingest; cutting the
thousands of names out of the records a second time was a quarter of the identity). Every
stored submission's identity is read again from its own bytes, as 0018 and 0021 did."""

from __future__ import annotations

from importlib import import_module

from django.db import migrations

reidentify = import_module("dashboard.domain.migrations.0018_run_identity_v2").reidentify


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0021_run_identity_v4")]

    operations = [migrations.RunPython(reidentify, migrations.RunPython.noop, elidable=True)]
