"""Identity v4: a run's identity is read from the records the JUnit reader keeps as it goes
(each testcase's name, JUnit-level outcome and time, sorted and hashed once), with no second
pass over the bytes (issues 21 and 25: identifying a run must add at most a fifth to the
ingest). Every stored submission's identity is read again from its own bytes, as identity
v2's migration did (0018: the same re-read, the same rules for a file the ingest cannot read
again and for a second submission of one run)."""

from __future__ import annotations

from importlib import import_module

from django.db import migrations

reidentify = import_module("dashboard.domain.migrations.0018_run_identity_v2").reidentify


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0020_evidence_heads")]

    operations = [migrations.RunPython(reidentify, migrations.RunPython.noop, elidable=True)]
