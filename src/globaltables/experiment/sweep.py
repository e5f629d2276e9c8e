"""`globaltables sweep TOPOLOGY [--chaos X | --nemesis random] --seeds 1-1000 [--modes mrec,mrsc] [--jobs N]
[--executor local|dask://HOST:PORT] [--out DIR] [--duration S]`: one simulated run per seed and mode.

Theory of operation: the sweep is a list of `SeedTask`s (seed, mode, the topology file's text for that mode, the
chaos schedule's text, the run's duration), each run by `run_seed` on an executor (experiment/executors.py: local
processes, or a Dask cluster). A task carries everything its run needs as text, so a worker on another machine needs
only globaltables itself; it runs in a temporary directory and returns a `SeedVerdict` (a small JSON-able dict), and
the directory is removed. With `--nemesis random` each task draws its own fault mix from its seed (chaos/swarm.py)
and returns the schedule document, so the sweep can write it out.

Then, on the machine that ran the sweep: the failing seeds are run again here, one after another (at most
`--keep-failures`, default 10), into `DIR/failures/<mode>-seed-N/`, each with its `topology.yaml`, `chaos.yaml` and a
`case.json` naming them (what `globaltables shrink` reads), and the replay's verdict and first violation are compared
with the sweep's: the summary says whether each replay reproduced. `DIR/sweep.json` holds every seed's verdict;
`DIR/summary.md` the summary printed at the end: runs, operations, acknowledged writes, faults injected, failures
by checker, and per failing seed its first violation and the exact replay command.

Exit status: 0 every run's checks are valid, 1 a run's check is invalid, 2 none is invalid but one is unknown or a
run could not complete (bad files: refused before anything runs).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, as_completed
from pathlib import Path
from typing import IO, Any

import yaml

from ..chaos.schedule import ScheduleError
from ..chaos.swarm import draw_schedule, dump_schedule, schedule_of
from ..runtime.yaml_documents import load_yaml
from ..topology.load import TopologyError
from . import run_log
from .topology import load_topology

EXIT_PASSED, EXIT_CHECK_FAILED, EXIT_INCOMPLETE = 0, 1, 2
SWEEP_VERSION = 1
MAX_SEEDS = 1_000_000
DEFAULT_KEEP_FAILURES = 10
SUMMARY_FAILURES = 50  # failing seeds listed in the summary; sweep.json has every one
NEMESIS_CHOICES = ("random",)


class SweepError(ValueError):
    """A sweep that cannot start: the message names the option or file (exit status 2)."""


class ModeNotApplicable(SweepError):
    """--modes names a mode the topology cannot run in (a witness in MREC, five regions in MRSC); `reason` is the
    topology loader's."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


# ------------------------------------------------------------------------------------------------------ seeds


def parse_seeds(text: str) -> list[int]:
    """`1-1000`, `7`, `1,5,9-12`: the seeds in order, without repeats; SweepError naming the bad part."""
    seeds: list[int] = []
    seen: set[int] = set()
    parts = [part.strip() for part in str(text).split(",")]
    if not any(parts):
        raise SweepError("--seeds: expected a range such as 1-1000, a seed such as 7, or a list such as 1,5,9-12")
    for part in parts:
        if not part:
            raise SweepError(f"--seeds {text!r}: an empty item between commas")
        first, dash, last = part.partition("-")
        try:
            low = int(first)
            high = int(last) if dash else low
        except ValueError:
            raise SweepError(f"--seeds {text!r}: {part!r} is not a seed (an integer) or a range A-B of seeds") from None
        if low < 0:
            raise SweepError(f"--seeds {text!r}: {part!r}: seeds are non-negative integers")
        if high < low:
            raise SweepError(f"--seeds {text!r}: {part!r}: a range runs from low to high, as in {high}-{low}")
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise SweepError(f"--seeds {text!r}: more than {MAX_SEEDS} seeds; sweep them in several runs")
        for seed in range(low, high + 1):
            if seed not in seen:
                seen.add(seed)
                seeds.append(seed)
    return seeds


def parse_modes(text: str | None) -> list[str] | None:
    if text is None:
        return None
    modes = [mode.strip() for mode in text.split(",") if mode.strip()]
    unknown = [mode for mode in modes if mode not in ("mrec", "mrsc")]
    if not modes or unknown:
        raise SweepError(f"--modes {text!r}: expected a comma-separated list of mrec and mrsc")
    return list(dict.fromkeys(modes))


# ------------------------------------------------------------------------------------------------------ tasks


@dataclasses.dataclass(frozen=True)
class SeedTask:
    """One simulated run, carried whole to a worker."""

    seed: int
    mode: str
    topology_text: str  # the topology file for this mode (compare.mode_copy's text when --modes rewrote it)
    chaos_text: str | None = None  # --chaos: the schedule file's text
    nemesis: str | None = None  # "random": the seed draws its own schedule (chaos/swarm.py)
    duration_s: float | None = None
    hooks: Any = None  # the simulated run's hooks (planted bugs, for tests of the checkers); picklable


def run_seed(task: SeedTask, out_dir: Path | None = None) -> dict[str, Any]:
    """Run one task; its verdict (JSON-able). `out_dir`: keep the run's files there (else a temporary directory,
    removed afterwards). Never raises for a run that could not complete: verdict `unknown` with the reason."""
    keep = out_dir is not None
    directory = Path(out_dir) if keep else Path(tempfile.mkdtemp(prefix=f"globaltables-sweep-{task.seed}-"))
    directory.mkdir(parents=True, exist_ok=True)
    # The run's log records go with its verdict (and to run.log when kept), not through the sweep's progress bar.
    with run_log.captured() as log:
        verdict = _run_task(task, directory, keep)
    verdict["log"] = log.summary()
    if keep and log.lines:  # beside the run's results (the case's directory when the run made none)
        where = directory / "run" if (directory / "run").is_dir() else directory
        (where / "run.log").write_text("".join(line + "\n" for line in log.lines))
    return verdict


def _run_task(task: SeedTask, directory: Path, keep: bool) -> dict[str, Any]:
    try:
        topology_path = directory / "topology.yaml"
        topology_path.write_text(task.topology_text)
        schedule_document, mix = None, None
        chaos_path = None
        if task.nemesis == "random":
            topology = load_topology(topology_path)
            schedule_document, mix = random_schedule(task, topology)
            chaos_path = directory / "chaos.yaml"
            chaos_path.write_text(dump_schedule(schedule_document, _schedule_header(task)))
        elif task.chaos_text is not None:
            chaos_path = directory / "chaos.yaml"
            chaos_path.write_text(task.chaos_text)
        verdict = simulate(topology_path, chaos_path, task, directory / "run")
        verdict.update(seed=task.seed, mode=task.mode)
        if mix is not None:
            verdict["nemesis"] = mix.to_dict()
            verdict["schedule"] = schedule_document
        return verdict
    except (TopologyError, ScheduleError, OSError) as error:
        return {"seed": task.seed, "mode": task.mode, "verdict": "unknown", "failed": [], "reason": str(error),
                "operations": 0, "acknowledged_writes": 0, "faults": 0, "first_violation": None}  # fmt: skip
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)


def random_schedule(task: SeedTask, topology) -> tuple[dict[str, Any], Any]:
    """The swarm schedule of this task's seed, fitted to its topology, over the run's duration."""
    duration = task.duration_s
    if duration is None:
        duration = float((topology.workload or {}).get("duration_s", 20.0))
    witnesses = [region.name for region in topology.regions if region.role == "witness"]
    tables = [spec.name for spec in topology.tables]
    document, mix = draw_schedule(task.seed, list(topology.region_names), duration_s=duration, witnesses=witnesses,
                                  mode=topology.mode, tables=tables)  # fmt: skip
    schedule_of(document, list(topology.region_names), witnesses)  # refuse a draw the validator would refuse
    return document, mix


def _schedule_header(task: SeedTask) -> str:
    return f"Drawn by `globaltables sweep --nemesis random` for seed {task.seed} ({task.mode}); rerun it as is."


def simulate(topology_path: Path, chaos_path: Path | None, task: SeedTask, out_dir: Path) -> dict[str, Any]:
    """One simulated run (experiment/simulated_run.py) as a verdict dict: verdict, failed checkers, first violation,
    operations, acknowledged writes, faults injected. A run that cannot be made is `unknown`, with the reason."""
    from .runner import RunAborted, load_experiment
    from .simulated_run import run_simulated

    try:
        topology, workload = load_experiment(topology_path)
        run = run_simulated(topology, workload, chaos_path, task.seed, task.duration_s, out_dir, hooks=task.hooks,
                            topology_path=topology_path, make_plots=False)  # fmt: skip
    except RunAborted as error:
        return {"verdict": "unknown", "failed": [], "reason": str(error), "operations": 0,
                "acknowledged_writes": 0, "faults": 0, "first_violation": None}  # fmt: skip
    return verdict_of_run(run, out_dir)


def verdict_of_run(run: Any, out_dir: Path) -> dict[str, Any]:
    results = run.results
    verdicts = dict(run.verdicts)
    failed = sorted(name for name, verdict in verdicts.items() if verdict == "invalid")
    overall = "invalid" if failed else ("unknown" if "unknown" in verdicts.values() or not verdicts else "valid")
    operations, acknowledged = _history_counts(out_dir / "history.jsonl")
    faults = sum(1 for op in results.get("faults", []) if (op.get("value") or {}).get("phase") == "start")
    return {"verdict": overall, "failed": failed, "checks": verdicts,
            "first_violation": _jsonable(getattr(run, "first_violation", None)),
            "operations": operations, "acknowledged_writes": acknowledged, "faults": faults}  # fmt: skip


def _history_counts(path: Path) -> tuple[int, int]:
    """(client operations invoked, writes acknowledged) in a history.jsonl."""
    if not path.exists():
        return 0, 0
    from ..chaos.history import WRITE_FUNCTIONS, History
    from .load import is_probe_key

    history = History.read_jsonl(path)
    operations = sum(1 for op in history.ops if op.type == "invoke" and op.process != "nemesis"
                     and not is_probe_key(op.key))  # fmt: skip
    writes = WRITE_FUNCTIONS | {"conditional_update", "append"}
    acknowledged = sum(1 for op in history.ops if op.type == "ok" and op.f in writes and not is_probe_key(op.key))
    return operations, acknowledged


def _jsonable(value: Any) -> Any:
    if value is None:
        return None
    return json.loads(json.dumps(value, default=lambda o: getattr(o, "to_dict", lambda: str(o))()))


# ------------------------------------------------------------------------------------------------------ sweep


@dataclasses.dataclass
class Sweep:
    """A sweep's inputs, checked before anything runs."""

    topology_path: Path
    seeds: list[int]
    modes: list[str]
    topology_texts: dict[str, str]  # mode -> the topology file's text for that mode
    chaos_path: Path | None = None
    nemesis: str | None = None
    duration_s: float | None = None
    hooks: Any = None

    def tasks(self) -> list[SeedTask]:
        chaos_text = self.chaos_path.read_text(encoding="utf-8") if self.chaos_path else None
        return [SeedTask(seed, mode, self.topology_texts[mode], chaos_text, self.nemesis, self.duration_s, self.hooks)
                for mode in self.modes for seed in self.seeds]  # fmt: skip


def plan_sweep(topology_path: Path, seeds: str | Sequence[int], *, modes: str | Sequence[str] | None = None,
               chaos_path: Path | None = None, nemesis: str | None = None, duration_s: float | None = None,
               hooks: Any = None) -> Sweep:  # fmt: skip
    """The sweep, with every file and option checked (SweepError naming what is wrong)."""
    seed_list = parse_seeds(seeds) if isinstance(seeds, str) else list(seeds)
    if chaos_path is not None and nemesis is not None:
        raise SweepError("--chaos and --nemesis: give one (a fixed schedule, or a random one per seed)")
    if nemesis is not None and nemesis not in NEMESIS_CHOICES:
        raise SweepError(f"--nemesis {nemesis!r}: use {', '.join(NEMESIS_CHOICES)}")
    if duration_s is not None and not duration_s > 0:
        raise SweepError(f"--duration {duration_s}: must be positive")
    try:
        topology = load_topology(topology_path)
    except TopologyError as error:
        raise SweepError(str(error)) from None
    if topology.workload is None:
        raise SweepError(f"{topology_path}: workload: is required to run an experiment (see docs/results.md)")
    mode_list = parse_modes(modes) if isinstance(modes, str) or modes is None else list(modes)
    mode_list = mode_list or [topology.mode]
    texts = {}
    for mode in mode_list:
        texts[mode] = (
            topology_path.read_text(encoding="utf-8") if mode == topology.mode else _mode_text(topology_path, mode)
        )
    if chaos_path is not None:
        from .runner import RunAborted, load_chaos

        for mode, text in texts.items():
            try:
                load_chaos(chaos_path, _load_text(text, topology_path), seed_list[0] if seed_list else 1)
            except RunAborted as error:
                raise SweepError(f"--chaos ({mode}): {error}") from None
    return Sweep(Path(topology_path), seed_list, mode_list, texts, chaos_path, nemesis, duration_s, hooks)


def _mode_text(topology_path: Path, mode: str) -> str:
    """The topology file with `mode:` replaced (as `compare` does), checked to be valid in that mode."""
    document = load_yaml(topology_path.read_text(encoding="utf-8"))
    document["mode"] = mode
    text = f"# {topology_path} with mode: {mode} (written by globaltables sweep)\n" + yaml.safe_dump(
        document, sort_keys=False
    )
    try:
        _load_text(text, topology_path)
    except TopologyError as error:
        raise ModeNotApplicable(f"--modes {mode}: {topology_path} is not a valid {mode} topology: {error}",
                                str(error)) from None  # fmt: skip
    return text


def _load_text(text: str, like: Path):
    """The topology `text` loaded as if it were the file `like` (errors name `like`, not a scratch copy)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / like.name
        path.write_text(text)
        try:
            return load_topology(path)
        except TopologyError as error:
            raise TopologyError(line.replace(str(path), f"{like} (mode rewritten)") for line in error.errors) from None


def run_sweep(sweep: Sweep, out_dir: Path, executor: Executor, *,
              keep_failures: int = DEFAULT_KEEP_FAILURES,
              on_done: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Every task on `executor`, then the failing seeds replayed here into out_dir/failures/; sweep.json,
    summary.md; the sweep's record (sweep.json's content)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tasks = sweep.tasks()
    futures = {executor.submit(run_seed, task): task for task in tasks}
    verdicts: list[dict[str, Any]] = []
    for future in as_completed(futures):
        task = futures[future]
        try:
            verdict = future.result()
        except Exception as error:  # noqa: BLE001 - a worker that died: that seed is unknown, the sweep goes on
            verdict = {"seed": task.seed, "mode": task.mode, "verdict": "unknown", "failed": [],
                       "reason": f"{type(error).__name__}: {error}", "operations": 0, "acknowledged_writes": 0,
                       "faults": 0, "first_violation": None}  # fmt: skip
        verdicts.append(verdict)
        if on_done is not None:
            on_done(verdict)
    order = {(task.mode, task.seed): index for index, task in enumerate(tasks)}
    verdicts.sort(key=lambda v: order[(v["mode"], v["seed"])])
    by_key = {(task.mode, task.seed): task for task in tasks}
    failing = [v for v in verdicts if v["verdict"] == "invalid"]
    for verdict in failing:  # every failing seed's files, so each replay command runs as printed
        _write_case_files(out_dir, by_key[(verdict["mode"], verdict["seed"])], verdict)
        verdict["replay"] = replay_command(sweep, out_dir, verdict)
    for verdict in failing[:keep_failures]:
        _keep_failure(sweep, out_dir, by_key[(verdict["mode"], verdict["seed"])], verdict)
    record = {"sweep_version": SWEEP_VERSION, "topology": str(sweep.topology_path), "modes": sweep.modes,
              "seeds": _seed_ranges(sweep.seeds), "chaos": str(sweep.chaos_path) if sweep.chaos_path else None,
              "nemesis": sweep.nemesis, "duration_s": sweep.duration_s, "elapsed_s": round(time.monotonic() - began, 3),
              "totals": totals(verdicts), "runs": verdicts}  # fmt: skip
    (out_dir / "sweep.json").write_text(json.dumps(record, indent=1) + "\n")
    (out_dir / "summary.md").write_text(summary_text(record))
    return record


def replay_command(sweep: Sweep, out_dir: Path, verdict: dict[str, Any]) -> str:
    """`globaltables run ... --simulated --seed N`, with the files that make it exact: the topology of that mode,
    and the fixed schedule or the schedule the seed drew."""
    mode, seed = verdict["mode"], verdict["seed"]
    case = _case_dir(out_dir, mode, seed)
    topology = (
        sweep.topology_path if sweep.topology_texts[mode] == _read(sweep.topology_path) else case / "topology.yaml"
    )
    words = ["globaltables", "run", str(topology), "--simulated", "--seed", str(seed)]
    if sweep.nemesis == "random":
        words += ["--chaos", str(case / "chaos.yaml")]
    elif sweep.chaos_path is not None:
        words += ["--chaos", str(sweep.chaos_path)]
    if sweep.duration_s is not None:
        words += ["--duration", f"{sweep.duration_s:g}"]
    return shlex.join(words)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _case_dir(out_dir: Path, mode: str, seed: int) -> Path:
    return out_dir / "failures" / f"{mode}-seed-{seed}"


def _write_case_files(out_dir: Path, task: SeedTask, verdict: dict[str, Any]) -> None:
    case = _case_dir(out_dir, task.mode, task.seed)
    case.mkdir(parents=True, exist_ok=True)
    (case / "topology.yaml").write_text(task.topology_text)
    if verdict.get("schedule") is not None:
        (case / "chaos.yaml").write_text(dump_schedule(verdict["schedule"], _schedule_header(task)))
    elif task.chaos_text is not None:
        (case / "chaos.yaml").write_text(task.chaos_text)


def _keep_failure(sweep: Sweep, out_dir: Path, task: SeedTask, verdict: dict[str, Any]) -> None:
    """The failing seed run again here, with its files; whether it reproduced the sweep's verdict."""
    case = _case_dir(out_dir, task.mode, task.seed)
    if case.exists():
        shutil.rmtree(case)
    replay = run_seed(task, out_dir=case)
    same = replay["verdict"] == verdict["verdict"] and replay["first_violation"] == verdict["first_violation"]
    verdict["reproduced"] = same
    verdict["results_dir"] = str(case / "run")
    case_record = {"topology": "topology.yaml", "chaos": "chaos.yaml" if (case / "chaos.yaml").exists() else None,
                   "seed": task.seed, "mode": task.mode, "duration_s": task.duration_s, "replay": verdict["replay"],
                   "verdict": replay["verdict"], "failed": replay["failed"],
                   "first_violation": replay["first_violation"], "nemesis": replay.get("nemesis")}  # fmt: skip
    (case / "case.json").write_text(json.dumps(case_record, indent=1) + "\n")


def totals(verdicts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    verdicts = list(verdicts)
    by_checker: Counter = Counter()
    for verdict in verdicts:
        by_checker.update(verdict.get("failed", []))
    counts = Counter(verdict["verdict"] for verdict in verdicts)
    return {"runs": len(verdicts), "valid": counts["valid"], "invalid": counts["invalid"],
            "unknown": counts["unknown"], "operations": sum(v.get("operations", 0) for v in verdicts),
            "acknowledged_writes": sum(v.get("acknowledged_writes", 0) for v in verdicts),
            "faults": sum(v.get("faults", 0) for v in verdicts),
            "failures_by_checker": dict(sorted(by_checker.items())),
            "log_records": sum((v.get("log") or {}).get("records", 0) for v in verdicts)}  # fmt: skip


def exit_status(record: dict[str, Any]) -> int:
    t = record["totals"]
    return EXIT_CHECK_FAILED if t["invalid"] else (EXIT_INCOMPLETE if t["unknown"] else EXIT_PASSED)


def _seed_ranges(seeds: Sequence[int]) -> str:
    """1,2,3,7 -> "1-3,7" (sweep.json's `seeds`, the --seeds that sweeps them again)."""
    parts: list[str] = []
    ordered = sorted(seeds)
    index = 0
    while index < len(ordered):
        start = index
        while index + 1 < len(ordered) and ordered[index + 1] == ordered[index] + 1:
            index += 1
        parts.append(str(ordered[start]) if start == index else f"{ordered[start]}-{ordered[index]}")
        index += 1
    return ",".join(parts)


def describe_violation(violation: Any) -> str:
    if not violation:
        return "(no violation recorded)"
    if isinstance(violation, dict):
        where = f"{violation.get('table', '')}[{violation.get('key', '')}]" if violation.get("key") else ""
        text = " ".join(str(part) for part in (violation.get("checker"), where, violation.get("problem"))
                        if part)  # fmt: skip
        detail = violation.get("detail")
        return f"{text}: {detail}" if detail else (text or json.dumps(violation)[:200])
    return str(violation)


def totals_lines(t: dict[str, Any]) -> list[str]:
    """The summary's lines of `totals` (a sweep's, or a suite's sum of them), log records aside."""
    return [
        f"runs: {t['runs']} ({t['valid']} valid, {t['invalid']} invalid, {t['unknown']} unknown)",
        f"operations: {t['operations']}",
        f"acknowledged writes: {t['acknowledged_writes']}",
        f"faults injected: {t['faults']}",
        "failures by checker: " + (", ".join(f"{name} {count}" for name, count in t["failures_by_checker"].items())
                                   or "none"),
    ]  # fmt: skip


def summary_text(record: dict[str, Any]) -> str:
    t = record["totals"]
    lines = [
        f"# Sweep of {record['topology']} ({', '.join(record['modes'])}, seeds {record['seeds']})",
        "",
        *totals_lines(t),
    ]
    if t.get("log_records"):
        logged = sum(1 for v in record["runs"] if (v.get("log") or {}).get("records"))
        lines.append(f"log records: {t['log_records']} from {logged} runs (each run's in sweep.json `log`)")
    failing = [v for v in record["runs"] if v["verdict"] == "invalid"]
    if failing:
        lines += ["", "## Failing seeds", ""]
        for verdict in failing[:SUMMARY_FAILURES]:
            reproduced = {True: " (replayed here: reproduced)", False: " (replayed here: DID NOT reproduce)"}.get(
                verdict.get("reproduced"), ""
            )
            lines.append(f"- {verdict['mode']} seed {verdict['seed']}: {', '.join(verdict['failed'])}{reproduced}")
            lines.append(f"  first violation: {describe_violation(verdict.get('first_violation'))}")
            lines.append(f"  replay: `{verdict['replay']}`")
        if len(failing) > SUMMARY_FAILURES:
            lines.append(
                f"- ... and {len(failing) - SUMMARY_FAILURES} more failing seeds, each with its replay, in sweep.json"
            )
    unknown = [v for v in record["runs"] if v["verdict"] == "unknown"]
    if unknown:
        lines += ["", "## Undecided or incomplete seeds", ""]
        lines += [f"- {v['mode']} seed {v['seed']}: {v.get('reason') or ', '.join(n for n, s in v.get('checks', {}).items() if s == 'unknown')}"
                  for v in unknown[:50]]  # fmt: skip
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------- CLI


def sweep_command(topology_path: Path, seeds: str, *, chaos_path: Path | None = None, nemesis: str | None = None,
                  modes: str | None = None, jobs: int | None = None, executor: str | None = None,
                  out_dir: Path | None = None, duration_s: float | None = None,
                  keep_failures: int = DEFAULT_KEEP_FAILURES, stream: IO[str] | None = None) -> int:  # fmt: skip
    stream = stream if stream is not None else sys.stdout
    try:
        sweep = plan_sweep(topology_path, seeds, modes=modes, chaos_path=chaos_path, nemesis=nemesis,
                           duration_s=duration_s)  # fmt: skip
    except SweepError as error:
        print(f"globaltables sweep: {error}", file=sys.stderr)
        return EXIT_INCOMPLETE
    name = Path(topology_path).stem
    out_dir = out_dir if out_dir is not None else Path("results") / f"sweep-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    total = len(sweep.seeds) * len(sweep.modes)
    record = with_progress(executor, jobs, total,
                           lambda pool, advance: run_sweep(sweep, out_dir, pool, keep_failures=keep_failures,
                                                           on_done=advance))  # fmt: skip
    if record is None:
        return EXIT_INCOMPLETE
    stream.write(summary_text(record))
    stream.write(f"\nsweep: {out_dir / 'sweep.json'}\n")
    return exit_status(record)


def with_progress(executor: str | None, jobs: int | None, total: int, work: Callable[[Executor, Any], Any]) -> Any:
    """`work(pool, advance)` on the executor named, under a progress bar of `total` runs; None, said on stderr, when
    the executor cannot be had or the user interrupts."""
    from .executors import ExecutorError, open_executor

    try:
        with open_executor(executor, jobs) as pool, progress_bar(total, sys.stderr) as advance:
            return work(pool, advance)
    except ExecutorError as error:
        print(f"globaltables sweep: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("globaltables sweep: interrupted", file=sys.stderr)
    return None


class progress_bar:
    """A live progress bar (rich) while runs complete: done/total, failures so far, time left."""

    def __init__(self, total: int, stream: IO[str]) -> None:
        self.total, self.stream = total, stream
        self.failures = 0

    def __enter__(self) -> Callable[[dict[str, Any]], None]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[failures]} failing"), TimeRemainingColumn(),
                            console=Console(file=self.stream), transient=False)  # fmt: skip
        self.bar.__enter__()
        self.task = self.bar.add_task("sweep", total=self.total, failures=0)

        def advance(verdict: dict[str, Any]) -> None:
            if verdict["verdict"] == "invalid":
                self.failures += 1
            self.bar.update(self.task, advance=1, failures=self.failures)

        return advance

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)
