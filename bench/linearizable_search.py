"""How fast the linearizability checker decides MRSC histories: as recorded (the baseline, measured in the same
run), with the reductions before the search only (rule 4), and with them and the search's pruning (rules 4 and 8).

Cases:
  flaky-links  the seeded flaky-links MRSC run of tests/sim/test_mrsc_checker_budget.py (the shipped
               chaos/flaky-links.yaml on topologies/mrsc-test.yaml in the simulator, ten clients per replica racing
               on one item with a 50 ms client deadline, so a fifth of the writes end in doubt);
  hot-key      `globaltables sweep topologies/hot-key.yaml --modes mrsc --nemesis random`, one seed at a time: the
               hot item's writes mostly refused at once (ReplicatedWriteConflictException), strong reads long and
               often timing out. Its strong reads are `strong_get`.
Prints per seed the steps (the hottest key's) and wall seconds of each search and its verdict, and the ratio of
total times against the history as recorded. A search that runs out of its 2,000,000 steps per key says unknown.

Usage: python bench/linearizable_search.py [--case flaky-links|hot-key] [--seeds 1-15]
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE.parent / "tests"), str(HERE.parent / "tests" / "sim")]

from test_mrsc_checker_budget import flaky_links_run

from globaltables.chaos.checkers import linearizable
from globaltables.chaos.history import History
from globaltables.experiment.sweep import parse_seeds, plan_sweep, run_seed

SEARCHES = (("recorded", {"reductions": False}), ("rule 4", {"pruning": False}), ("rules 4+8", {}))


def hot_key_history(seed: int) -> History:
    sweep = plan_sweep(HERE.parent / "topologies" / "hot-key.yaml", [seed], modes="mrsc", nemesis="random")
    (task,) = sweep.tasks()
    with tempfile.TemporaryDirectory(prefix="bench-hot-key-") as directory:
        run_seed(task, out_dir=Path(directory))
        return History.read_jsonl(Path(directory) / "run" / "history.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("flaky-links", "hot-key"), default="flaky-links")
    parser.add_argument("--seeds", default="1-15", help="seeds: 1-15, 7, or 1,5,9-12")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    reads = ("strong_get",) if args.case == "hot-key" else ("get",)
    totals = dict.fromkeys((name for name, _ in SEARCHES), 0.0)
    print("seed   ops  " + "   ".join(f"{name + ': verdict steps s':>33}" for name, _ in SEARCHES))
    for seed in parse_seeds(args.seeds):
        history = hot_key_history(seed) if args.case == "hot-key" else flaky_links_run(seed).history
        row = [f"{seed:4d} {len(history.ops):5d}"]
        for name, options in SEARCHES:
            began = time.perf_counter()
            result = linearizable.check(history, reads=reads, explain=False, **options)
            elapsed = time.perf_counter() - began
            totals[name] += elapsed
            row.append(f"{result.verdict:>17} {result.stats['steps_max']:8d} {elapsed:6.3f}")
        print("   ".join(row), flush=True)
    base = totals["recorded"]
    print(
        "total: "
        + ", ".join(f"{name} {t:.2f} s ({base / t if t else float('inf'):.1f}x)" for name, t in totals.items())
    )


if __name__ == "__main__":
    main()
