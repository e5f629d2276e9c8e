"""`globaltables sweep topologies/ --seeds 1-100 --modes mrec,mrsc --nemesis random`: one sweep per topology file,
on one executor, with one progress bar and one summary: the project's reliability figure in one command.

A directory stands for its `*.yaml` files (sorted by name). Each topology is swept in every requested mode it can
run (or its own mode when --modes is not given). A mode it cannot run (an MRSC witness topology in MREC, five
regions in MRSC) is listed as not applicable with the topology loader's reason, and a file without a `workload:`
section is listed as skipped: neither is a failure, and neither is counted as a run. Every other error (a bad
seed range, a bad topology file, a chaos schedule that does not fit a topology) refuses the whole suite before
anything runs, naming the file.

Each topology's sweep writes what a single sweep writes (sweep.json, summary.md, failures/ with replays) into
DIR/<topology name>/; DIR/suite.json holds the plan and every sweep's totals, DIR/summary.md the totals by topology
and mode and over the whole suite. The exit status is the worst of the sweeps'.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter
from concurrent.futures import Executor
from pathlib import Path
from typing import IO, Any

from ..topology.load import TopologyError
from .sweep import (
    DEFAULT_KEEP_FAILURES,
    EXIT_INCOMPLETE,
    ModeNotApplicable,
    Sweep,
    SweepError,
    exit_status,
    parse_modes,
    plan_sweep,
    run_sweep,
    totals,
    totals_lines,
    with_progress,
)
from .topology import load_topology

SUITE_VERSION = 1


def topology_files(paths: list[Path]) -> list[Path]:
    """The topology files named, a directory standing for its *.yaml files; SweepError for a path that is neither."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.yaml"))
            if not found:
                raise SweepError(f"{path}: a directory with no *.yaml topology files")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise SweepError(f"{path}: no such topology file or directory")
    return list(dict.fromkeys(files))


def plan_suite(paths: list[Path], seeds: str, *, modes: str | None = None, chaos_path: Path | None = None,
               nemesis: str | None = None, duration_s: float | None = None,
               hooks: Any = None) -> tuple[list[Sweep], list[dict[str, str]]]:  # fmt: skip
    """(the sweeps to run, one per topology with the modes it can run; what was left out and why)."""
    requested = parse_modes(modes)
    sweeps: list[Sweep] = []
    left_out: list[dict[str, str]] = []
    for path in topology_files(paths):
        try:
            topology = load_topology(path)
        except (TopologyError, OSError) as error:  # the loader's own error names the field and the file
            raise SweepError(str(error)) from None
        if topology.workload is None:
            left_out.append({"topology": str(path), "mode": "", "reason": "no workload: section"})
            continue
        planned: list[Sweep] = []  # one per mode the topology can run
        for mode in requested or [topology.mode]:
            try:
                planned.append(plan_sweep(path, seeds, modes=[mode], chaos_path=chaos_path, nemesis=nemesis,
                                          duration_s=duration_s, hooks=hooks))  # fmt: skip
            except ModeNotApplicable as error:
                left_out.append({"topology": str(path), "mode": mode, "reason": error.reason})
        if planned:
            sweeps.append(dataclasses.replace(
                planned[0], modes=[mode for one in planned for mode in one.modes],
                topology_texts={mode: text for one in planned for mode, text in one.topology_texts.items()}))  # fmt: skip
    if not sweeps:
        raise SweepError("no topology here can be swept: " + "; ".join(_left_out_line(entry) for entry in left_out))
    return sweeps, left_out


def _left_out_line(entry: dict[str, str], name_only: bool = False) -> str:
    where = Path(entry["topology"]).name if name_only else entry["topology"]
    return f"{where}{' ' + entry['mode'] if entry['mode'] else ''}: {entry['reason']}"


def sweep_dir_name(sweep: Sweep, taken: set[str]) -> str:
    """The topology file's name, made unique when two directories hold files of one name."""
    name, index = sweep.topology_path.stem, 2
    while name in taken:
        name, index = f"{sweep.topology_path.stem}-{index}", index + 1
    taken.add(name)
    return name


def run_suite(sweeps: list[Sweep], left_out: list[dict[str, str]], out_dir: Path, executor: Executor, *,
              seeds: str, keep_failures: int = DEFAULT_KEEP_FAILURES, on_done=None) -> dict[str, Any]:  # fmt: skip
    """Every sweep on `executor`, one after another, each into its own directory; suite.json and summary.md."""
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    taken: set[str] = set()
    entries = []
    for sweep in sweeps:
        name = sweep_dir_name(sweep, taken)
        record = run_sweep(sweep, out_dir / name, executor, keep_failures=keep_failures, on_done=on_done)
        entries.append({"topology": str(sweep.topology_path), "dir": name, "modes": sweep.modes,
                        "totals": record["totals"], "by_mode": _by_mode(record),
                        "failing": [{"mode": v["mode"], "seed": v["seed"], "failed": v["failed"],
                                     "replay": v.get("replay")} for v in record["runs"] if v["verdict"] == "invalid"],
                        "status": exit_status(record)})  # fmt: skip
    suite = {"suite_version": SUITE_VERSION, "seeds": seeds, "nemesis": sweeps[0].nemesis,
             "chaos": str(sweeps[0].chaos_path) if sweeps[0].chaos_path else None,
             "duration_s": sweeps[0].duration_s, "elapsed_s": round(time.monotonic() - began, 3),
             "totals": _sum_totals([entry["totals"] for entry in entries]), "sweeps": entries,
             "left_out": left_out}  # fmt: skip
    (out_dir / "suite.json").write_text(json.dumps(suite, indent=1) + "\n")
    (out_dir / "summary.md").write_text(suite_summary_text(suite))
    return suite


def _by_mode(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {mode: totals(v for v in record["runs"] if v["mode"] == mode) for mode in record["modes"]}


def _sum_totals(many: list[dict[str, Any]]) -> dict[str, Any]:
    summed: dict[str, Any] = {key: sum(t.get(key, 0) for t in many)
                              for key in ("runs", "valid", "invalid", "unknown", "operations", "acknowledged_writes",
                                          "faults", "log_records")}  # fmt: skip
    by_checker: Counter = Counter()
    for t in many:
        by_checker.update(t["failures_by_checker"])
    summed["failures_by_checker"] = dict(sorted(by_checker.items()))
    return summed


def suite_status(suite: dict[str, Any]) -> int:
    return max((entry["status"] for entry in suite["sweeps"]), default=EXIT_INCOMPLETE)


def suite_summary_text(suite: dict[str, Any]) -> str:
    t = suite["totals"]
    how = f"nemesis {suite['nemesis']}" if suite["nemesis"] else (f"chaos {suite['chaos']}" if suite["chaos"]
                                                                  else "no faults")  # fmt: skip
    lines = [
        f"# Sweep of {len(suite['sweeps'])} topologies (seeds {suite['seeds']}, {how})",
        "",
        "| topology | mode | runs | invalid | unknown | operations | acknowledged writes | faults |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for entry in suite["sweeps"]:
        for mode, m in entry["by_mode"].items():
            lines.append(f"| {Path(entry['topology']).name} | {mode} | {m['runs']} | {m['invalid']} | {m['unknown']} "
                         f"| {m['operations']} | {m['acknowledged_writes']} | {m['faults']} |")  # fmt: skip
    lines += [
        "",
        *totals_lines(t),
        *([f"log records: {t['log_records']} (each run's in its sweep's sweep.json `log`)"] if t["log_records"] else []),
    ]
    failing = [(entry, f) for entry in suite["sweeps"] for f in entry["failing"]]
    if failing:
        lines += ["", "## Failing seeds (each sweep's summary.md has its first violations)", ""]
        lines += [f"- {Path(entry['topology']).name} {f['mode']} seed {f['seed']}: {', '.join(f['failed'])}; "
                  f"replay: `{f['replay']}`" for entry, f in failing[:50]]  # fmt: skip
    if suite["left_out"]:
        lines += ["", "## Not swept", ""]
        lines += [f"- {_left_out_line(entry, name_only=True)}" for entry in suite["left_out"]]
    return "\n".join(lines) + "\n"


def suite_command(paths: list[Path], seeds: str, *, chaos_path: Path | None = None, nemesis: str | None = None,
                  modes: str | None = None, jobs: int | None = None, executor: str | None = None,
                  out_dir: Path | None = None, duration_s: float | None = None,
                  keep_failures: int = DEFAULT_KEEP_FAILURES, stream: IO[str] | None = None) -> int:  # fmt: skip
    stream = stream if stream is not None else sys.stdout
    try:
        sweeps, left_out = plan_suite(paths, seeds, modes=modes, chaos_path=chaos_path, nemesis=nemesis,
                                      duration_s=duration_s)  # fmt: skip
    except SweepError as error:
        print(f"globaltables sweep: {error}", file=sys.stderr)
        return EXIT_INCOMPLETE
    out_dir = out_dir if out_dir is not None else Path("results") / f"sweep-suite-{time.strftime('%Y%m%d-%H%M%S')}"
    total = sum(len(sweep.seeds) * len(sweep.modes) for sweep in sweeps)
    suite = with_progress(executor, jobs, total,
                          lambda pool, advance: run_suite(sweeps, left_out, out_dir, pool, seeds=seeds,
                                                          keep_failures=keep_failures, on_done=advance))  # fmt: skip
    if suite is None:
        return EXIT_INCOMPLETE
    stream.write(suite_summary_text(suite))
    stream.write(f"\nsuite: {out_dir / 'suite.json'}\n")
    return suite_status(suite)
