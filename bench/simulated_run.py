"""Whole simulated runs: client operations per wall second of `globaltables run topologies/quickstart.yaml
--simulated`, in MREC and in MRSC (the same topology with `mode: mrsc`, as `sweep --modes` writes it), one core.

What one run is: experiment/simulated_run.py's `run_simulated`, as the CLI calls it, for `--duration` virtual
seconds: the cluster built, the workload and the lag probe on the scheduler, replication (or the strong-mode
protocol), the quiesce, the final reads, every checker, the lost-write ledger and results.json's content. With
`--files` the artifacts are written too (history.jsonl, report.md ..., no plots: plotting is matplotlib's time,
not the simulator's); by default nothing is written. Imports are paid before the clock starts (one short warm-up
run of each mode), so the figure is the run's own.

Client operations: the history's invocations by clients, i.e. the workload's operations and the lag probe's
writes and polls (each one a request a region answered, as in a process run); the workload's share is printed
beside it. The rate is client operations / wall seconds of the whole `run_simulated` call. Since the simulated
probe sends only the polls that can end its watch (docs/results.md, "The lag probe in virtual time"), a run has
about half the client operations of a tree from before that change for the same workload: compare such trees on
the workload's figure (its operations are the same for a seed) or on the CPU seconds of a run.

The baseline, measured in the same run: bench/sim_throughput.py's MREC figure (client PutItems applied in all
three regions per wall second, `run_cluster`, with --baseline-puts puts), the simulator's raw speed with no
workload generator, history or checkers. The targets (issue: experiments in virtual time) are checked on the
first two figures. On a shared machine the wall figures move with the others' load; the CPU-second figures (this
process's own time) less so.
Usage: python bench/simulated_run.py [--duration S] [--seed N] [--rounds N] [--files] [--baseline-puts N]
       [--baseline-rev REV [--baseline-rounds N]]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _baseline

_baseline.use_source_tree()

import sim_throughput  # bench/: the baseline figure's own code

from globaltables.chaos.history import NEMESIS, History
from globaltables.experiment.load import is_probe_key
from globaltables.experiment.simulated_run import run_simulated
from globaltables.sim.collector import simulation_collector

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "topologies" / "quickstart.yaml"
TARGETS = {"mrec": 50_000, "mrsc": 10_000}


def mode_copy(mode: str, folder: Path) -> Path:
    """The quickstart topology in `mode` (the file itself for its own mode; else sweep's mode copy)."""
    from globaltables.experiment.sweep import _mode_text
    from globaltables.topology.load import load_topology

    if load_topology(QUICKSTART).mode == mode:
        return QUICKSTART
    path = folder / f"quickstart-{mode}.yaml"
    path.write_text(_mode_text(QUICKSTART, mode))
    return path


_HISTORIES: list[History] = []  # every History made since the last run: the run's is the longest


def _tracking(init):
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _HISTORIES.append(self)

    return __init__


History.__init__ = _tracking(History.__init__)  # costs nothing per operation, and works on a baseline's tree too


def counted_run(topology: Path, seed: int, duration: float, files: bool) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, client operations, workload operations) of one whole `run_simulated` call; the
    operations are counted afterwards, off the clock, in the run's History."""
    gc.collect()
    _HISTORIES.clear()
    with tempfile.TemporaryDirectory(prefix="bench-simulated-") as scratch:
        out = Path(scratch) / "run" if files else None
        started, cpu = time.perf_counter(), time.process_time()
        run = run_simulated(topology, None, None, seed, duration, out, make_plots=False)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert run.exit_code == 0, (topology.name, [c["name"] for c in run.results["checks"]])
    clients, workload = _counts(max(_HISTORIES, key=len))
    _HISTORIES.clear()
    return elapsed, cpu, clients, workload


def _counts(history) -> tuple[int, int]:
    invocations = [op for op in history.ops if op.type == "invoke" and op.process != NEMESIS]
    return len(invocations), sum(not is_probe_key(op.key) for op in invocations)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="measured virtual seconds per run (60)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="runs per mode; the median is reported")
    parser.add_argument("--files", action="store_true", help="also write the run's artifacts (no plots)")
    parser.add_argument("--baseline-puts", type=int, default=30_000, help="sim_throughput.py's MREC puts")
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    metrics: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-topologies-") as folder:
        topologies = {mode: mode_copy(mode, Path(folder)) for mode in TARGETS}
        for topology in topologies.values():  # imports and first-call costs, off the clock
            counted_run(topology, args.seed, 1.0, args.files)
        lines = []
        for mode, topology in topologies.items():
            runs = [counted_run(topology, args.seed, args.duration, args.files) for _ in range(max(1, args.rounds))]
            elapsed = statistics.median(run[0] for run in runs)
            cpu = statistics.median(run[1] for run in runs)
            clients, workload = runs[0][2], runs[0][3]
            rate = clients / elapsed
            metrics[f"{mode} client ops/s"] = rate
            metrics[f"{mode} workload ops/s"] = workload / elapsed
            metrics[f"{mode} client ops/CPU s"] = clients / cpu
            metrics[f"{mode} workload ops/CPU s"] = workload / cpu  # comparable across the probe change
            verdict = "met" if rate >= TARGETS[mode] else "NOT met"
            lines.append(f"{mode.upper()} quickstart, {args.duration:g} virtual s, seed {args.seed}: {clients} client "
                         f"operations ({workload} of the workload, the rest the lag probe's) in {elapsed:.2f} s wall "
                         f"({cpu:.2f} s CPU) = {rate:,.0f} client ops/s ({workload / elapsed:,.0f} workload ops/s, "
                         f"{clients / cpu:,.0f} client ops per CPU second); target {TARGETS[mode]:,}: {verdict}")  # fmt: skip
    gc.collect()
    with simulation_collector():
        cpu = time.process_time()
        took, everywhere, _client_s = sim_throughput.run_cluster(args.baseline_puts, 500)
        cpu = time.process_time() - cpu
    metrics["sim_throughput MREC puts/s"] = everywhere / took
    metrics["sim_throughput MREC puts/CPU s"] = everywhere / cpu
    for line in lines:
        print(line)
    print(
        f"baseline, same run: bench/sim_throughput.py's MREC figure {everywhere / took:,.0f} puts/s "
        f"({everywhere / cpu:,.0f} per CPU second) "
        f"({everywhere} puts applied in all 3 regions, the simulator alone: no workload generator, history or "
        f"checkers); whole-run MREC / baseline = {metrics['mrec client ops/s'] / (everywhere / took):.3f}, "
        f"MRSC / baseline = {metrics['mrsc client ops/s'] / (everywhere / took):.3f}"
    )
    _baseline.report(metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main())
