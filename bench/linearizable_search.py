"""How fast the linearizability checker decides MRSC histories, with its sound reductions against the search of the
history as recorded (the baseline, measured in the same run).

What it does: for each seed, the seeded flaky-links MRSC run of tests/sim/test_mrsc_checker_budget.py (the shipped
chaos/flaky-links.yaml on topologies/mrsc-test.yaml in the simulator, ten clients per replica racing on one item
with a 50 ms client deadline, so a fifth of the writes end in doubt), then `linearizable.check` twice: as recorded
(`reductions=False`) and reduced. Prints per seed the steps and wall seconds of each and the verdicts, and the ratio
of total times. The seeds where the search as recorded runs out of its 2,000,000 steps are the false alarms the
reductions remove.

Usage: python bench/linearizable_search.py [--seeds 1-15]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests"), str(HERE.parent / "tests" / "sim")]

from test_mrsc_checker_budget import flaky_links_run

from globaltables.chaos.checkers import linearizable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-15", help="a range like 1-15")
    args = parser.parse_args()
    first, last = (int(part) for part in args.seeds.split("-"))
    logging.disable(logging.WARNING)
    totals = {"recorded": 0.0, "reduced": 0.0}
    print("seed  ops  as-recorded: verdict steps s   reduced: verdict steps s")
    for seed in range(first, last + 1):
        history = flaky_links_run(seed).history
        row = [f"{seed:4d} {len(history.ops):5d}"]
        for name, reductions in (("recorded", False), ("reduced", True)):
            began = time.perf_counter()
            result = linearizable.check(history, reductions=reductions)
            elapsed = time.perf_counter() - began
            totals[name] += elapsed
            row.append(f"{result.verdict:>8} {result.stats['steps_max']:8d} {elapsed:6.3f}")
        print("   ".join(row), flush=True)
    ratio = totals["recorded"] / totals["reduced"] if totals["reduced"] else float("inf")
    print(f"total: as recorded {totals['recorded']:.2f} s, reduced {totals['reduced']:.2f} s ({ratio:.1f}x faster)")


if __name__ == "__main__":
    main()
