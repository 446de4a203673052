"""bench_ingest's comparison taken apart, the rounds interleaved so that load moves all alike.

Run: .venv/bin/python bench/bench_ingest_split.py [--rounds N]

Each round times, one after the other in one process with the same gc settings: junitparser
parsing and iterating the real v1.30 JUnit, ``ingest`` of it, the JUnit reader alone
(``parse_junit``, which keeps the identity's testcase records as it reads) and the run
identity's digests alone (``content_id`` and ``near_id``: sorting and hashing the records). Per-round ratios to junitparser are less sensitive to a busy machine than the
ratio of two medians taken one after the other (bench_ingest.py); the identity digests are
also given as a share of the reader's time. Advisory: it judges nothing.
"""

from __future__ import annotations

import argparse
import gzip
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_ingest

from dashboard.domain.ingest.identity import content_id, near_id
from dashboard.domain.ingest.junit import parse_junit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    bench_ingest.FILE.write_bytes(gzip.decompress(bench_ingest.FIXTURE.read_bytes()))
    data = bench_ingest.FILE.read_bytes()

    def reader_alone() -> None:
        parse_junit(io.BytesIO(data))

    scan = parse_junit(io.BytesIO(data)).scan

    def identity_alone() -> None:
        scan._digests.clear()  # the sorting and hashing, as each ingest does them once
        scan._sorted_records = (None, "")
        content_id(scan), near_id(scan, "2024-05-01T14:20:30", [])

    functions: dict[str, Callable[[], object]] = {
        "junitparser parse + iterate": bench_ingest.junitparser_parse_and_iterate,
        "ingest (reader + identity + report)": bench_ingest.ingest_file,
        "parse_junit alone": reader_alone,
        "identity digests alone": identity_alone,
    }
    times: dict[str, list[float]] = {name: [] for name in functions}
    for function in functions.values():
        function()  # warm-up
    for _ in range(args.rounds):
        for name, function in functions.items():
            started = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - started)
    base = times["junitparser parse + iterate"]
    print(f"{'part':<38} {'median':>9} {'min':>9} {'ratio to junitparser':>21}")
    for name, values in times.items():
        ratios = [value / b for value, b in zip(values, base, strict=True)]
        print(
            f"{name:<38} {statistics.median(values) * 1000:>7.1f}ms {min(values) * 1000:>7.1f}ms"
            f" {statistics.median(ratios):>21.2f}"
        )
    shares = [
        i / r
        for i, r in zip(times["identity digests alone"], times["parse_junit alone"], strict=True)
    ]
    print(f"{'identity digests / reader (per round)':<38} {statistics.median(shares):>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
