"""Peak memory and time of ingest for each hostile upload shape of issue 12.

Each shape runs in a fresh child process, the way an upload reaches the web process: the
file on disk (Django spools uploads over 5 MB to a temporary file), hashed as a stream,
then ingested. Reported per shape: the answer, wall time, the peak of Python allocations
(tracemalloc, a second pass) and the peak RSS added (VmHWM after minus VmRSS before,
the high-water mark reset through /proc/self/clear_refs).

The adversarial-names corpus (finding 1) is ingested at growing sizes to show time linear
in file size; the regex it replaced is timed on small names for contrast.

Run: .venv/bin/python bench/bench_hostile.py [--smoke]  (exit 1 when a shape misses a target)
Targets: peak < 64 MB (RSS and tracemalloc) and time < the 20 s budget for every shape;
names corpus: seconds per MB of the largest size within 3x of the smallest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

MiB = 1 << 20
BUDGET_MB = 64
NAME_SIZES_KB = [256, 1024, 4096, 16384]


def shapes(sizes: list[int] = NAME_SIZES_KB) -> dict[str, str]:
    """name -> Python expression (in the child) building the shape's bytes or file path."""
    table = {
        "gzip bomb JUnit (700 MB inflated)": "s.gzip_bomb_junit(700)",
        "tar.gz, 2 JUnit/e2e.log members of 250 MB": "s.tar_huge_members(250, wanted=True)",
        "tar.gz, 2 skipped members of 250 MB + JUnit": "s.tar_huge_members(250, wanted=False, count=2)",
        "JUnit of 47 MB of <property> children": "s.properties_flood(tmp + '/props.xml', 47)",
        "zip, 20,000 central-directory entries": "s.zip_many_entries(20_000)",
        "zip, EOCD announcing a 400 MB directory": "s.zip_claiming_a_huge_directory(400)",
        "zip, 40,000 entries, EOCD claiming 5": "s.zip_lying_end_record(40_000)",
        "JUnit with one 40 MB attribute": "s.long_attribute(tmp + '/attr.xml', 40)",
        "JUnit with 49 MB of system-err text (legit)": "s.long_text(tmp + '/text.xml', 49)",
        "3,000 unknown 1 KB SCTP names (warnings)": "s.unknown_sctp_names(3_000, 1_000)",
        "real v1.30 JUnit, SCTP tests passed": "b.with_sctp_status(b.real_v130(), 'passed')",
    }
    for kb in sizes:
        table[f"names corpus {kb:>5} KB"] = (
            f"s.label_list_names({kb} * 1024, with_real_test=True, names={kb} // 64)"
        )
    return table


CHILD = r"""
import gc, json, os, sys, tempfile, time, tracemalloc
sys.path.insert(0, {root!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
import django; django.setup()
from tests.domain.ingest import hostile_shapes as s, builders as b
from dashboard.domain.ingest import IngestError, ingest
from dashboard.domain.submissions import hash_bounded
tmp = tempfile.mkdtemp()
made = {expr}
if isinstance(made, bytes):
    path = tmp + "/upload.bin"
    open(path, "wb").write(made)
else:
    path = made
del made
size = os.path.getsize(path)

def once():
    with open(path, "rb") as f:
        hash_bounded(f, 50 * 1024 * 1024)
        try:
            r = ingest(f, declared_proxier="iptables", declared_plugin="calico")
            return "accepted: %d passed, %d warnings" % (r.counts["passed"], len(r.warnings))
        except IngestError as e:
            return "%d %s" % (e.status, e.message[:70])

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

gc.collect()
try:
    open("/proc/self/clear_refs", "w").write("5")
except OSError:
    pass
before = status("VmRSS:")
t = time.monotonic(); answer = once(); seconds = time.monotonic() - t
rss = status("VmHWM:") - before
tracemalloc.start(); base = tracemalloc.get_traced_memory()[0]; once()
peak = tracemalloc.get_traced_memory()[1] - base; tracemalloc.stop()
print(json.dumps({{"size": size, "seconds": seconds, "rss": rss, "peak": peak, "answer": answer}}))
"""


def measure(expr: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), expr=expr)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    if out.returncode:
        raise SystemExit(f"child failed for {expr}:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def old_regex_seconds(size: int) -> float:
    old = re.compile(r"\s+\[[^\[\]]*,\s[^\[\]]*\]\s*$")
    name = "sctp [" + ", " * (size // 2)
    started = time.process_time()
    old.sub("", name)
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--smoke", action="store_true", help="the names corpus at 256 KB and 1 MB only"
    )
    args = parser.parse_args(argv)
    failures = []
    rows = []
    with tempfile.TemporaryDirectory():
        for name, expr in shapes(NAME_SIZES_KB[:2] if args.smoke else NAME_SIZES_KB).items():
            m = measure(expr)
            rows.append((name, m))
            if max(m["rss"], m["peak"]) >= BUDGET_MB * MiB or m["seconds"] >= 20:
                failures.append(name)
    print(f"{'shape':<46} {'file':>9} {'time':>8} {'RSS+':>8} {'py peak':>8}  answer")
    for name, m in rows:
        print(
            f"{name:<46} {m['size'] / MiB:>7.2f}MB {m['seconds']:>7.2f}s {m['rss'] / MiB:>6.1f}MB "
            f"{m['peak'] / MiB:>6.1f}MB  {m['answer']}"
        )
    names = [(m["size"], m["seconds"]) for n, m in rows if n.startswith("names corpus")]
    per_mb = [seconds / (size / MiB) for size, seconds in names]
    linear = per_mb[-1] <= 3 * max(per_mb[0], 1e-3)
    print(
        "\nnames corpus, seconds per MB: "
        + ", ".join(f"{p:.3f}" for p in per_mb)
        + f"  ({'linear' if linear else 'NOT linear'})"
    )
    print(
        "the replaced _LABEL_LIST regex on one name: "
        + ", ".join(f"{kb} KB {old_regex_seconds(kb * 1024):.2f}s" for kb in (4, 8, 16))
    )
    if not linear:
        failures.append("names corpus linearity")
    if failures:
        print("missed a target: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
