"""`globaltables shrink RESULTS_DIR`: from a failing simulated run, a smaller case that still fails, as files.

Theory of operation: a case is (seed, the topology's workload, the run's duration, the chaos schedule's faults).
Every candidate is a simulated run (experiment/simulated_run.py) with the *same seed*; it is kept when the checker
that failed first still says invalid. Dimensions, each a greedy search (delta debugging after Zeller and
Hildebrandt, "Simplifying and Isolating Failure-Inducing Input", 2002: big cuts first, then smaller ones):
shorter duration (halving, then the warm-up dropped), fewer faults (ddmin over the schedule's faults: halves,
quarters, ... single faults removed), fewer keys (halving), a lower rate (halving), fewer load regions, fewer
operation kinds in the mix. The dimensions are tried again while any of them shrinks, within `max_runs` candidates.

The result goes to RESULTS_DIR/shrunk/: `topology.yaml` (the topology with the shrunk workload), `chaos.yaml`
(the faults left, in chaos/schedule.py's format; absent when none are needed), `case.json` (seed, duration, the
replay command, the sizes before and after), `story.md` (the operations of the first violation: region, time,
operation, value, version) and `run/`, the shrunk case run once more, which is how the result is known to still fail.

Input: a sweep's failure dir (`failures/<mode>-seed-N/`, its case.json names topology.yaml and chaos.yaml).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ..chaos.faults import Fault
from ..chaos.schedule import Schedule
from ..chaos.swarm import dump_schedule, schedule_document
from ..runtime.yaml_documents import load_yaml
from .runner import RunAborted, load_chaos, load_experiment
from .simulated_run import run_simulated

DEFAULT_MAX_RUNS = 200
MIN_DURATION_S = 0.1


class ShrinkError(ValueError):
    """A results dir shrink cannot start from."""


@dataclasses.dataclass(frozen=True)
class Case:
    workload: dict[str, Any]  # the topology's workload: section
    duration_s: float
    faults: tuple[Fault, ...]

    def size(self, operations: int) -> dict[str, Any]:
        return {"operations": operations, "faults": len(self.faults), "duration_s": self.duration_s,
                "keys": self.workload.get("keys"), "rate_per_region": self.workload.get("rate_per_region"),
                "warmup_s": self.workload.get("warmup_s")}  # fmt: skip


class Shrinker:
    def __init__(self, directory: Path, *, hooks: Any = None, max_runs: int = DEFAULT_MAX_RUNS) -> None:
        self.directory = Path(directory)
        self.record = read_case(self.directory)
        self.seed = int(self.record["seed"])
        self.hooks, self.max_runs, self.runs = hooks, max_runs, 0
        self.work = self.directory / "shrunk"
        self.topology_file = self.directory / self.record["topology"]
        self.document = load_yaml(self.topology_file.read_text(encoding="utf-8"))
        if not isinstance(self.document.get("workload"), dict):
            raise ShrinkError(f"{directory}: the topology has no workload: section")
        topology, workload = load_experiment(self.topology_file)
        chaos = self.record.get("chaos")
        self.schedule: Schedule | None = load_chaos(self.directory / chaos, topology, self.seed) if chaos else None
        duration = self.record.get("duration_s") or workload.duration_s
        self.case = Case(dict(self.document["workload"]), float(duration),
                         self.schedule.faults if self.schedule else ())  # fmt: skip
        first = self.record.get("first_violation") or {}
        self.checker = first.get("check") or (self.record.get("failed") or [None])[0]
        if self.checker is None:
            raise ShrinkError(f"{directory}: case.json records no failing checker; the run did not fail")

    # -- one candidate ------------------------------------------------------------------------------------------

    def _topology_path(self, case: Case, where: Path) -> Path:
        document = dict(self.document)
        document["workload"] = dict(case.workload)
        where.mkdir(parents=True, exist_ok=True)
        path = where / "topology.yaml"
        path.write_text(f"# shrunk by globaltables shrink from {self.directory}\n"
                        + yaml.safe_dump(document, sort_keys=False))  # fmt: skip
        return path

    def _schedule(self, case: Case) -> Schedule | None:
        if self.schedule is None or not case.faults:
            return None
        return dataclasses.replace(self.schedule, faults=case.faults, duration_s=0.0)

    def run(self, case: Case, out_dir: Path | None = None):
        self.runs += 1
        path = self._topology_path(case, self.work / "candidate")
        topology, workload = load_experiment(path)
        return run_simulated(topology, workload, self._schedule(case), self.seed, case.duration_s, out_dir,
                             hooks=self.hooks, topology_path=path, make_plots=False)  # fmt: skip

    def fails(self, case: Case) -> bool:
        if self.runs >= self.max_runs:
            return False
        try:
            return self.run(case).verdicts.get(self.checker) == "invalid"
        except RunAborted:
            return False

    # -- the search ---------------------------------------------------------------------------------------------

    def shrink(self) -> Case:
        case = self.case
        while True:
            before = case
            for step in (self._duration, self._faults, self._keys, self._rate, self._regions, self._mix):
                case = step(case)
            if case == before or self.runs >= self.max_runs:
                return case

    def _try(self, case: Case, **changes: Any) -> Case | None:
        workload = {**case.workload, **changes.pop("workload", {})}
        candidate = dataclasses.replace(case, workload=workload, **changes)
        if candidate.faults:  # faults past the shorter run's end cannot be part of it
            candidate = dataclasses.replace(
                candidate,
                faults=tuple(
                    f for f in candidate.faults if (f.end if f.end is not None else f.at) <= candidate.duration_s
                ),
            )
        return candidate if candidate != case and self.fails(candidate) else None

    def _duration(self, case: Case) -> Case:
        while case.duration_s / 2 >= MIN_DURATION_S and (smaller := self._try(case, duration_s=round(
                case.duration_s / 2, 3))):  # fmt: skip
            case = smaller
        if case.workload.get("warmup_s", 1) != 0 and (smaller := self._try(case, workload={"warmup_s": 0})):
            case = smaller
        return case

    def _faults(self, case: Case) -> Case:
        chunks = 2
        while case.faults and chunks <= 2 * len(case.faults):
            faults = list(case.faults)
            size = max(1, len(faults) // chunks)
            shrunk = False
            for start in range(0, len(faults), size):
                if (smaller := self._try(case, faults=tuple(faults[:start] + faults[start + size :]))) is not None:
                    case, shrunk = smaller, True
                    break
            if not shrunk:
                if size == 1:
                    break
                chunks *= 2
        return case

    def _halve(self, case: Case, name: str, default: float, minimum: float, integer: bool) -> Case:
        while True:
            current = case.workload.get(name, default)
            value = int(current // 2) if integer else round(current / 2, 3)
            if value < minimum or (smaller := self._try(case, workload={name: value})) is None:
                return case
            case = smaller

    def _keys(self, case: Case) -> Case:
        return self._halve(case, "keys", 1000, 1, True)

    def _rate(self, case: Case) -> Case:
        return self._halve(case, "rate_per_region", 100.0, 1.0, False)

    def _regions(self, case: Case) -> Case:
        replicas = [r["name"] for r in self.document.get("regions", []) if r.get("role", "replica") != "witness"]
        for region in list(case.workload.get("regions") or replicas):
            current = list(case.workload.get("regions") or replicas)
            if len(current) > 1 and region in current and (
                smaller := self._try(case, workload={"regions": [r for r in current if r != region]})
            ):
                case = smaller
        return case

    def _mix(self, case: Case) -> Case:
        mix = case.workload.get("mix")
        if not isinstance(mix, dict):
            return case
        for name in list(mix):
            current = dict(case.workload["mix"])
            if len(current) > 1 and name in current:
                del current[name]
                if smaller := self._try(case, workload={"mix": current}):
                    case = smaller
        return case

    # -- the result -------------------------------------------------------------------------------------------

    def write(self, case: Case) -> dict[str, Any]:
        """shrunk/: topology.yaml, chaos.yaml, case.json, story.md and run/ (the shrunk case replayed)."""
        original_ops = _operations(self.run(self.case))
        out = self.work
        if (out / "run").exists():
            shutil.rmtree(out / "run")
        topology_path = self._topology_path(case, out)
        chaos_path = out / "chaos.yaml"
        chaos_path.unlink(missing_ok=True)
        schedule = self._schedule(case)
        if schedule is not None:
            chaos_path.write_text(dump_schedule(schedule_document(schedule),
                                                f"shrunk by globaltables shrink for seed {self.seed}"))  # fmt: skip
        topology, workload = load_experiment(topology_path)
        final = run_simulated(topology, workload, chaos_path if schedule is not None else None, self.seed,
                              case.duration_s, out / "run", hooks=self.hooks, topology_path=topology_path,
                              make_plots=False)  # fmt: skip
        shutil.rmtree(out / "candidate", ignore_errors=True)
        words = ["globaltables", "run", str(topology_path), "--simulated", "--seed", str(self.seed)]
        if schedule is not None:
            words += ["--chaos", str(chaos_path)]
        words += ["--duration", f"{case.duration_s:g}"]
        record = {"seed": self.seed, "checker": self.checker, "topology": "topology.yaml",
                  "chaos": "chaos.yaml" if schedule is not None else None, "duration_s": case.duration_s,
                  "mode": self.record.get("mode"), "replay": shlex.join(words),
                  "still_fails": final.verdicts.get(self.checker) == "invalid", "verdicts": final.verdicts,
                  "first_violation": final.first_violation, "candidate_runs": self.runs,
                  "before": self.case.size(original_ops), "after": case.size(_operations(final))}  # fmt: skip
        (out / "case.json").write_text(json.dumps(record, indent=1) + "\n")
        (out / "story.md").write_text(story(record, case))
        return record


def read_case(directory: Path) -> dict[str, Any]:
    """What shrink starts from: a sweep failure's case.json, or a `run --simulated` results dir (results.json's
    seed, checks and replay command, whose files are taken relative to the current directory)."""
    if (directory / "case.json").exists():
        return json.loads((directory / "case.json").read_text())
    try:
        results = json.loads((directory / "results.json").read_text())
    except (OSError, ValueError):
        raise ShrinkError(f"{directory}: neither case.json (a sweep's failures/<mode>-seed-N/) nor the results.json "
                          "of a simulated run") from None  # fmt: skip
    if not results.get("simulated") or not results.get("replay"):
        raise ShrinkError(f"{directory}: not a simulated run (shrink replays candidates on the simulator)")
    words = shlex.split(results["replay"])

    def option(name: str) -> str | None:
        return words[words.index(name) + 1] if name in words else None

    from ..chaos.checkers.result import verdict_of

    failed = [check["name"] for check in results.get("checks", []) if verdict_of(check) == "invalid"]
    first = next((check for check in results.get("checks", []) if check["name"] in failed), None)
    violation = {"check": first["name"], **(first.get("findings") or [{}])[0]} if first else None
    duration = option("--duration")
    return {"topology": str(Path(words[2]).resolve()), "chaos": option("--chaos") and str(Path(option("--chaos")).resolve()),
            "seed": int(results["seed"]), "mode": results.get("mode"), "duration_s": float(duration) if duration else None,
            "failed": failed, "first_violation": violation}  # fmt: skip


def _operations(run) -> int:
    return sum(sum(counts.values()) for counts in run.results.get("outcomes", {}).values())


def story(record: dict[str, Any], case: Case) -> str:
    """The violation as a short story: what the checker says, then its operations in time order, and the faults."""
    violation = record.get("first_violation") or {}
    before, after = record["before"], record["after"]
    lines = [f"# Shrunk case: seed {record['seed']}, {record['checker']} fails",
             "",
             (f"From {before['operations']} operations and {before['faults']} faults over {before['duration_s']:g}s "
              f"to {after['operations']} operations and {after['faults']} faults over {after['duration_s']:g}s "
              f"({after['keys']} keys), in {record['candidate_runs']} candidate runs."),
             "",
             f"Replay: `{record['replay']}`",
             "",
             f"## {violation.get('check', record['checker'])}: {violation.get('problem', '')}",
             "",
             f"{violation.get('detail', '')}",
             ""]  # fmt: skip
    if violation.get("key"):
        lines.append(f"Key `{violation['key']}` of table {violation.get('table')}:")
        lines.append("")
    for op in sorted(violation.get("operations") or [], key=lambda op: (op.get("mono") or 0, op.get("index", 0))):
        value = f" {json.dumps(op['value'])}" if op.get("value") is not None else ""
        version = f" version {op['version']}" if op.get("version") else ""
        error = f" ({op['error']})" if op.get("error") else ""
        lines.append(f"- t={op.get('mono', 0) or 0:.3f}s {op.get('region')} {op['type']} {op['f']}{value}"
                     f"{version}{error}")  # fmt: skip
    if case.faults:
        lines += ["", "## Faults in the shrunk schedule", ""]
        for fault in case.faults:
            where = " ".join(fault.regions) or " | ".join(",".join(side) for side in fault.sides)
            length = f" for {fault.duration:g}s" if fault.duration is not None else ""
            lines.append(f"- t={fault.at:g}s {fault.verb} {where}{length}")
    return "\n".join(lines) + "\n"


def shrink(directory: Path, *, hooks: Any = None, max_runs: int = DEFAULT_MAX_RUNS) -> dict[str, Any]:
    shrinker = Shrinker(directory, hooks=hooks, max_runs=max_runs)
    return shrinker.write(shrinker.shrink())


def shrink_command(directory: Path, *, max_runs: int = DEFAULT_MAX_RUNS, hooks: Any = None,
                   out: Callable[[str], None] | None = None) -> int:  # fmt: skip
    out = out or print
    try:
        record = shrink(directory, hooks=hooks, max_runs=max_runs)
    except (ShrinkError, RunAborted, OSError, ValueError) as error:
        print(f"globaltables shrink: {error}", file=sys.stderr)
        return 2
    before, after = record["before"], record["after"]
    out(f"shrunk: {before['operations']} -> {after['operations']} operations, {before['faults']} -> "
        f"{after['faults']} faults, {before['duration_s']:g}s -> {after['duration_s']:g}s, "
        f"{before['keys']} -> {after['keys']} keys ({record['candidate_runs']} runs)")  # fmt: skip
    out(f"still fails: {'yes' if record['still_fails'] else 'NO'} ({record['checker']})")
    out(f"replay: {record['replay']}")
    out(f"story: {Path(directory) / 'shrunk' / 'story.md'}")
    return 0 if record["still_fails"] else 1
