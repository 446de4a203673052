#!/usr/bin/env python3
"""A Ginkgo dry run of one built e2e.test with the `upstream` battery's own focus: the command
line the worker runs (kernel.upstream.command, the focus from workers.upstream.spec_names and
kernel.upstream.focus_regex) plus `--ginkgo.dry-run`, so nothing is sent to any cluster (the
kubeconfig names 127.0.0.1:9, which is never dialled). Prints ginkgo's "Will run N of M specs"
and the names of the specs it selected, and copies the JUnit it wrote to --junit.

    .venv/bin/python deploy/e2e/dry-run.py 36 [--e2e-dir var/e2e] [--junit out.xml]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:9"}}],
    "users": [{"name": "none", "user": {"token": "dry-run"}}],
    "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
    "current-context": "none",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("minor", type=int)
    parser.add_argument("--e2e-dir", type=Path, default=ROOT / "var" / "e2e")
    parser.add_argument("--junit", type=Path, help="where to copy the JUnit it wrote")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from kernel import upstream as e2e
    from workers.upstream import spec_names

    binary = e2e.binary_for(args.e2e_dir, args.minor)
    names = spec_names(args.minor)
    with tempfile.TemporaryDirectory(prefix="sctp-e2e-dry-") as work:
        workdir = Path(work)
        config = workdir / "kubeconfig"
        config.write_text(json.dumps(KUBECONFIG))
        report = workdir / "report"
        report.mkdir()
        argv = [*e2e.command(binary, config, e2e.focus_regex(names), report, 600)]
        argv.append("--ginkgo.dry-run")
        env = {"PATH": "/usr/bin:/bin", "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8"}
        done = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, check=False)
        will = [line for line in done.stdout.splitlines() if "Will run" in line]
        junit = report / e2e.JUNIT_NAME
        if not junit.is_file():
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
            print(f"exit {done.returncode}: no JUnit written", file=sys.stderr)
            return 1
        selected = [
            case.get("name", "")
            for case in ET.parse(junit).getroot().iter("testcase")
            if case.find("skipped") is None and case.get("name", "").startswith("[It] ")
        ]
        if args.junit:
            shutil.copyfile(junit, args.junit)
    print(f"{binary}: exit {done.returncode}; {' '.join(will) or 'no Will run line'}")
    print(f"focus: {e2e.focus_regex(names)}")
    for name in selected:
        print(f"  {name}")
    print(f"{len(selected)} specs selected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
