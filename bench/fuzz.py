"""A long fuzz run against one region process: the fuzzers of tests/fuzz (structure-aware requests from the botocore
model's shapes, byte-level HTTP framing cases) with a seed and a count, and what they found.

It starts an in-memory region (`globaltables region --in-memory`, its log in a file) unless --endpoint names a
running one (then --log names that region's log, if the sites of 5xx answers should be read from it), sends
--count requests, and prints: statuses, undocumented 5xx answers, non-DynamoDB error bodies, checksum errors, hangs,
the distinct 5xx sites (file, line, function, exception, read from the region's tracebacks), whether the region is
alive and the canary items intact, and the region log's size. Exit status 0 when nothing was found.

Usage: python bench/fuzz.py [--seed N] [--count N] [--byte-share 0.2] [--endpoint URL [--log FILE]] [--data-dir DIR]
                            [--answer-timeout S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
# This script is bench/fuzz.py: drop its own folder from the path, or `fuzz` would name the script, not tests/fuzz.
sys.path[:] = [str(ROOT / "src"), str(ROOT / "tests")] + [
    entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "bench"
]

from fuzz import harness
from fuzz.harness import run_fuzz
from region_process import REGION_NAME, RegionProcess


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--byte-share", type=float, default=0.2, help="share of byte-level cases (default 0.2)")
    parser.add_argument("--endpoint", help="fuzz this running region instead of starting one")
    parser.add_argument("--log", type=Path, help="with --endpoint: that region's log file")
    parser.add_argument("--data-dir", type=Path, help="start the region on SQLite here instead of in memory")
    parser.add_argument("--answer-timeout", type=float, default=harness.ANSWER_TIMEOUT_S,
                        help="seconds without an answer that count as a hang (default %(default)s)")  # fmt: skip
    args = parser.parse_args()
    harness.ANSWER_TIMEOUT_S = args.answer_timeout
    harness.CLOSE_TIMEOUT_S = min(harness.CLOSE_TIMEOUT_S, args.answer_timeout)

    region = None
    if args.endpoint:
        parts = urlsplit(args.endpoint)
        address, log_path = (parts.hostname, parts.port), args.log

        def alive() -> bool:
            return True
    else:
        workdir = Path(tempfile.mkdtemp(prefix="globaltables-fuzz-"))
        region = RegionProcess(REGION_NAME, workdir, data_dir=args.data_dir)
        region.start()
        address, log_path = region.address, region.log_path

        def alive() -> bool:
            return region.process.poll() is None

        print(f"region at {region.endpoint}, log {log_path}", flush=True)
    try:
        report = run_fuzz(
            address, args.seed, args.count, log_path, byte_share=args.byte_share, process_alive=alive,
            progress=lambda n: print(f"... {n} requests", flush=True),
        )  # fmt: skip
    finally:
        if region is not None:
            code = region.stop()
            print(f"region stopped with exit code {code}")
    print(report.summary())
    for problem in report.problems():
        print(problem)
    return 0 if not report.problems() else 1


if __name__ == "__main__":
    sys.exit(main())
