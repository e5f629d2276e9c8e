"""`globaltables run TOPOLOGY.yaml [--chaos chaos/X.yaml] [--seed N] [--out DIR]`: one whole experiment.

Steps: start the topology's regions (the `up` Supervisor, in-process, on a throw-away state dir; or, with `--attach`,
find them already running where the topology places them: experiment/deployment.py) → they create the declared
tables → warm-up and measured load (experiment/load.py) → stop the load → quiesce (every lane's acked ==
log_end on two consecutive polls of each region's /control/status, as `globaltables check` waits) → read every
replica's final items (consistent Scans) → checkers (chaos/checkers: lww, and causal under the HLC, for MREC;
linearizable for MRSC; convergence) → stop the regions → write DIR: results.json (docs/results.md), history.jsonl,
final_state.jsonl, report.md, *.png, logs/. Each step is a phase function over one RunContext (`_run_against`).

Exit status: 0 every checker's verdict is valid, 1 one is invalid, 2 none is invalid but one is unknown (a search
ran out of budget: its keys are listed) or the run could not complete (bad files, regions that would not start, a
mode the regions do not run). A bad `--chaos` schedule is refused with exit 2 before anything starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import aiohttp
import orjson

from ..chaos.checkers.causal import check_causal
from ..chaos.checkers.convergence import check_convergence
from ..chaos.checkers.linearizable import check as check_linearizable
from ..chaos.checkers.list_append import check_list_append
from ..chaos.checkers.lww import check_lww
from ..chaos.checkers.result import LABEL, CheckResult, exit_status, verdict_of
from ..chaos.checkers.staleness import check_staleness
from ..chaos.exports import write_exports
from ..chaos.history import History, key_id
from ..chaos.schedule import ScheduleError, fit_tables, load_schedule
from ..engine.throttling import FINAL_READ_BACKOFF_S
from ..region.control_client import AsyncControlClient
from ..runtime.clock import SystemClock
from ..runtime.rng import Rng
from ..runtime.task_owner import task_owner
from ..topology.load import TopologyError
from ..topology.model import Topology
from . import capacity as capacity_phase
from . import ledger
from . import results as results_module
from .deployment import Deployment, DeploymentError, attached
from .load import LoadGenerator, is_probe_key
from .sdk_retries import THROTTLES
from .supervisor import Supervisor, SupervisorError
from .topology import load_topology
from .workload import Workload, parse_workload

EXIT_PASSED, EXIT_CHECK_FAILED, EXIT_INCOMPLETE = 0, 1, 2
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0  # for the supervisor to stop its regions after the run
STATUS_POLL_S = 0.05
DEFAULT_SEED = 1


class RunAborted(RuntimeError):
    """The experiment could not complete; the message says why (exit status 2)."""


@dataclass
class RunOutcome:
    exit_code: int
    out_dir: Path | None
    results: dict[str, Any] | None = None
    reason: str | None = None


@dataclass
class Progress:
    """What the live progress line shows."""

    phase: str = "starting"
    began: float = field(default_factory=time.monotonic)
    load: LoadGenerator | None = None
    measure_from: float | None = None
    duration_s: float = 0.0
    controller: Any = None

    def line(self) -> str:
        parts = [f"[{self.phase}]"]
        load = self.load
        if load is not None and self.measure_from is not None:
            elapsed = time.monotonic() - self.measure_from
            shown = max(0.0, min(elapsed, self.duration_s))
            parts.append(f"{shown:5.1f}/{self.duration_s:.0f} s")
            recent = [s for s in load.samples[-5000:] if s.done > time.monotonic() - 1.0 and not s.probe]
            parts.append(f"rate {len(recent):4d}/s")
            parts.append(f"in flight {load.sent - load.completed:3d}")
            parts.append(f"errors {load.errors}")
        active = []
        if self.controller is not None:
            active = [f"{f.verb} {'/'.join(f.regions)}" for f in list(self.controller.active)]
        parts.append(f"faults: {', '.join(active) if active else 'none'}")
        return "  ".join(parts)


async def _show_progress(progress: Progress, stream: IO[str]) -> None:
    interactive = stream.isatty()
    last_plain = 0.0
    try:
        while True:
            await asyncio.sleep(0.5)
            line = progress.line()
            if interactive:
                stream.write("\r\x1b[2K" + line)
                stream.flush()
            elif time.monotonic() - last_plain >= 5.0:
                stream.write(line + "\n")
                stream.flush()
                last_plain = time.monotonic()
    finally:
        if interactive:
            stream.write("\r\x1b[2K")
            stream.flush()


class _ReadyWatcher:
    """The supervisor's stdout: it prints JSON lines, the last being {"ready": true}."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.lines: list[dict] = []

    def write(self, text: str) -> None:
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                self.lines.append(record)
                if record == {"ready": True}:
                    self.ready.set()

    def flush(self) -> None:
        pass


# --------------------------------------------------------------------------------------------- region calls


class Regions:
    """Control-API and data reads against the running regions."""

    def __init__(
        self, endpoints: dict[str, str], secret: str, session: aiohttp.ClientSession, credentials=None
    ) -> None:
        self.endpoints = endpoints
        self.session = session
        self.control = AsyncControlClient(session, secret)
        self.credentials = credentials  # the topology's access keys, to sign data reads with (None: any key)

    async def status(self, region: str) -> dict:
        return await self.control.call(self.endpoints[region], "/control/status", region=region)

    async def quiesced(self) -> bool:
        for region in self.endpoints:
            status = await self.status(region)
            if any(link["acked"] != link["log_end"] for link in status.get("links", [])):
                return False
        return True

    async def wait_quiesced(self, timeout: float) -> float | None:
        """Seconds until two consecutive polls find every lane drained; None when `timeout` passed first."""
        began = time.monotonic()
        streak = 0
        while time.monotonic() - began < timeout:
            try:
                streak = streak + 1 if await self.quiesced() else 0
            except (TimeoutError, aiohttp.ClientError, OSError):
                streak = 0
            if streak >= 2:
                return time.monotonic() - began
            await asyncio.sleep(STATUS_POLL_S)
        return None

    async def apply_decisions(self, region: str) -> list[dict]:
        """The region's apply decisions (region/apply_decisions.py), for the lost-write ledger."""
        answer = await self.control.call(self.endpoints[region], "/control/apply-decisions", region=region)
        return answer["decisions"]

    async def scan(self, region: str, table: str, key_names: list[str]) -> dict[str, dict]:
        from .load import signed_headers

        items: dict[str, dict] = {}
        request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        backoff = iter(FINAL_READ_BACKOFF_S)
        while True:
            data = orjson.dumps(request)
            headers = signed_headers(self.endpoints[region], region, "Scan", data, time.time(), self.credentials)
            async with self.session.post(self.endpoints[region] + "/", data=data, headers=headers) as response:
                body = orjson.loads(await response.read())
            if response.status != 200:
                throttled = str(body.get("__type", "")).rpartition("#")[2] in THROTTLES
                delay = next(backoff, None) if throttled else None
                if delay is None:
                    raise RunAborted(f"reading the final state of {table} in {region} failed: {body}")
                await asyncio.sleep(delay)  # a replica in capacity debt: back off and read the page again
                continue
            last = add_scan_page(items, body, key_names)
            if not last:
                return dict(sorted(items.items()))
            request = {**request, "ExclusiveStartKey": last}


def add_scan_page(items: dict[str, dict], body: dict, key_names: list[str]) -> dict | None:
    """Add one Scan page's items to `items` (by key id, as the checkers compare them); the page's
    LastEvaluatedKey, or None after the last page. Process and simulated runs read final states through it."""
    for item in body.get("Items", []):
        items[key_id({name: item[name] for name in key_names})] = item
    return body.get("LastEvaluatedKey") or None


# ------------------------------------------------------------------------------------------------ checkers


def run_checkers(
    mode: str, history: History, final_states: dict, conflict_clock: str | None = "hlc"
) -> list[CheckResult]:
    """MREC: every replica holds the LWW winner and, under `conflict_clock: hlc`, a write that causally follows
    another wins (chaos/checkers/causal.py: what the HLC promises and wall clocks break); MRSC: strong reads are
    linearizable per key. Both: convergence. A list-append workload (its history has `append` ops) is checked by
    the list-append checker instead of lww, causal and linearizable."""
    checks = [check_convergence(final_states, history=history)]
    if any(op.f == "append" for op in history.ops):
        checks.insert(0, check_list_append(history, final_states, strong=mode == "mrsc"))
    elif mode == "mrec":
        checks.insert(0, check_lww(history, final_states))
        if conflict_clock == "hlc":
            checks.insert(1, check_causal(history, final_states))
    else:
        checks.insert(0, check_linearizable(history, reads=("strong_get",)))
    return checks


def check_summary(check: CheckResult, findings: int = 10) -> dict[str, Any]:
    """A check as results.json keeps it: verdict, detail, undecided keys, stats and its first findings (each with
    the history records that prove it, for the report's lanes)."""
    summary = check.summary()
    if check.offending:
        summary["findings"] = [
            {"table": f.table, "key": f.key, "problem": f.problem, "detail": f.detail,
             "operations": [op.to_dict() for op in f.operations[:40]], **({"permitted": True} if f.permitted else {})}
            for f in check.offending[:findings]
        ]  # fmt: skip
    return summary


def read_final_states(path: Path) -> dict:
    """final_state.jsonl: one line per (region, table, key): {"region", "table", "key", "item"}."""
    states: dict[str, dict[str, dict[str, Any]]] = {}
    for line in path.read_bytes().splitlines():
        if line.strip():
            record = orjson.loads(line)
            states.setdefault(record["region"], {}).setdefault(record["table"], {})
            if record.get("key") is not None:
                states[record["region"]][record["table"]][record["key"]] = record["item"]
    return states


def write_final_states(path: Path, states: dict) -> None:
    with open(path, "wb") as file:
        for region, tables in sorted(states.items()):
            for table, items in sorted(tables.items()):
                # An empty table still gets a line, so an empty replica is distinguishable from a missing one.
                if not items:
                    file.write(orjson.dumps({"region": region, "table": table, "key": None, "item": None}) + b"\n")
                file.writelines(
                    orjson.dumps({"region": region, "table": table, "key": key, "item": item}) + b"\n"
                    for key, item in items.items()
                )


def write_samples(path: Path, samples: list, origin: float) -> None:
    """samples.csv: one row per attempt; latency from the intended start (what latency_ms summarises)."""
    import csv

    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["region", "op", "intended_s", "latency_ms", "outcome", "error", "measured", "probe"])
        for s in samples:
            writer.writerow([
                s.region, s.op, f"{s.intended - origin:.6f}", f"{(s.done - s.intended) * 1000.0:.3f}",
                s.outcome, s.error or "", "1" if s.measured else "0", "1" if s.probe else "0",
            ])  # fmt: skip


def check_results_dir(directory: Path, out: IO[str] | None = None) -> int:
    """`globaltables check --results DIR`: rerun the checkers on a finished run's history and final state; the
    exit status of the verdicts (0 valid, 1 invalid, 2 unknown)."""
    out = out if out is not None else sys.stdout
    try:
        results = json.loads((directory / "results.json").read_text())
        history = History.read_jsonl(directory / "history.jsonl")
        states = read_final_states(directory / "final_state.jsonl")
    except (OSError, ValueError, KeyError) as error:
        print(f"globaltables check: {directory}: cannot read the results: {error}", file=sys.stderr)
        return EXIT_INCOMPLETE
    # Results written before they named their conflict clock are checked as they were then: without causal.
    checks = run_checkers(results.get("mode", "mrec"), history, states, results.get("conflict_clock"))
    for check in checks:
        print(str(check), file=out)
    return exit_status(checks)


# --------------------------------------------------------------------------------------------------- the run


def default_out_dir(topology: Topology) -> Path:
    return Path("results") / f"{topology.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def load_experiment(topology_path: Path) -> tuple[Topology, Workload]:
    topology = load_topology(topology_path)
    if topology.workload is None:
        raise RunAborted(f"{topology_path}: workload: is required to run an experiment (see docs/results.md)")
    replicas = [region.name for region in topology.replicas]
    return topology, parse_workload(topology.workload, replicas)


def load_chaos(chaos_path: Path | None, topology: Topology, seed: int):
    """The chaos Schedule (chaos/schedule.py) for this topology, or None; RunAborted lists every problem."""
    if chaos_path is None:
        return None
    witnesses = [region.name for region in topology.regions if region.role == "witness"]
    try:
        schedule = load_schedule(chaos_path, list(topology.region_names), witnesses, seed=seed)
    except ScheduleError as error:
        raise RunAborted("\n".join(error.errors)) from None
    tables = [spec.name for spec in topology.tables]
    schedule, problems = fit_tables(schedule, tables, topology.mode)
    if problems:
        raise RunAborted("\n".join(problems))
    return schedule


class _LoopFaults:
    """The controller runs on a thread; its fault records are appended on the event loop's thread, so history
    indexes stay consecutive. Times are taken when the fault happens, on the controller's thread."""

    def __init__(self, history: History, loop: asyncio.AbstractEventLoop, clock: SystemClock) -> None:
        self.history, self.loop, self.clock = history, loop, clock

    def fault(self, f: str, value: Any = None, region: str | None = None) -> None:
        mono, wall = self.clock.monotonic(), self.clock.wall_time()
        self.loop.call_soon_threadsafe(lambda: self.history.fault(f, value, region, mono=mono, wall=wall))


async def run_experiment(
    topology_path: Path,
    *,
    chaos_path: Path | None = None,
    seed: int = DEFAULT_SEED,
    out_dir: Path | None = None,
    duration_s: float | None = None,
    progress_stream: IO[str] | None = None,
    make_plots: bool = True,
    attach: bool = False,
) -> RunOutcome:
    """Run one experiment end to end; never raises for a run that could not complete (exit code 2 instead).
    `attach`: against regions already running where the topology places them, started and stopped by others."""
    try:
        topology, workload = load_experiment(topology_path)
    except TopologyError as error:
        return RunOutcome(EXIT_INCOMPLETE, None, reason=str(error))
    except RunAborted as error:
        return RunOutcome(EXIT_INCOMPLETE, None, reason=str(error))
    if duration_s is not None:
        workload = workload.with_overrides(duration_s=duration_s)
    try:
        schedule = load_chaos(chaos_path, topology, seed)
    except RunAborted as error:
        return RunOutcome(EXIT_INCOMPLETE, None, reason=str(error))
    if schedule is not None and schedule.end_s > workload.duration_s:
        workload = workload.with_overrides(duration_s=schedule.end_s)  # load runs until the final heal
    out_dir = out_dir if out_dir is not None else default_out_dir(topology)
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = Progress(duration_s=workload.duration_s)
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    experiment = Experiment(topology, workload, seed, chaos_path, schedule, out_dir, started_at)
    async with task_owner() as tasks:  # the progress line lives as long as the run
        if progress_stream:
            tasks.start(_show_progress(progress, progress_stream), name="progress")
        try:
            if attach:
                try:
                    deployment = await asyncio.to_thread(attached, topology)
                except DeploymentError as error:
                    return RunOutcome(EXIT_INCOMPLETE, out_dir, reason=str(error))
                results = await _run_against(deployment, experiment, progress)
            else:
                results = await _run_supervised(topology_path, experiment, progress)
        except (TimeoutError, RunAborted, SupervisorError, OSError, aiohttp.ClientError) as error:
            return RunOutcome(
                EXIT_INCOMPLETE,
                out_dir,
                reason=f"{type(error).__name__}: {error}" if not isinstance(error, RunAborted) else str(error),
            )
    from .report import write_report

    write_report(out_dir, results, topology, make_plots=make_plots)
    return RunOutcome(exit_status(results["checks"]), out_dir, results)


async def _run_supervised(topology_path: Path, experiment: Experiment, progress: Progress) -> dict[str, Any]:
    """Start the regions (an in-process `up` on a throw-away state dir), run, stop them, keep their logs."""
    topology, out_dir = experiment.topology, experiment.out_dir
    state_dir = Path(tempfile.mkdtemp(prefix=f"globaltables-run-{topology.name}-"))
    supervisor = Supervisor(topology, Path(topology_path), state_dir, _ReadyWatcher())  # type: ignore[arg-type]
    watcher: _ReadyWatcher = supervisor.out  # type: ignore[assignment]
    async with task_owner() as tasks:
        supervised = tasks.start(_supervise(supervisor), name="supervisor")
        try:
            await _wait_ready(watcher, supervised)
            deployment = Deployment(
                {name: child.endpoint for name, child in supervisor.children.items() if child.endpoint},
                supervisor.secret,
                {name: supervisor.control_url for name in supervisor.children if supervisor.control_url},
                fresh=True,
            )
            return await _run_against(deployment, experiment, progress)
        finally:
            progress.phase = "stopping"
            supervisor.request_stop()
            await asyncio.wait({supervised}, timeout=STOP_TIMEOUT_S)
            if not supervised.done():  # stuck: cancelled (its regions are still stopped by its own finally)
                supervised.cancel()
                await asyncio.wait({supervised})
            with contextlib.suppress(OSError):
                if (state_dir / "logs").exists():
                    shutil.copytree(state_dir / "logs", out_dir / "logs", dirs_exist_ok=True)
            shutil.rmtree(state_dir, ignore_errors=True)


async def _supervise(supervisor: Supervisor) -> Exception | None:
    """The supervisor's whole run. Its error is the task's result, not raised: `_wait_ready` reports it (the
    regions did not start), and after the run it changes nothing, rather than cancelling the run around it."""
    try:
        await supervisor.run()
    except Exception as error:  # noqa: BLE001 - reported by _wait_ready
        return error
    return None


async def _wait_ready(watcher: _ReadyWatcher, supervised: asyncio.Task) -> None:
    """Until the supervisor says ready; RunAborted if it ended first or READY_TIMEOUT_S passed. A race of two waits,
    the ready wait owned (and ended) here."""
    async with asyncio.TaskGroup() as race:
        ready = race.create_task(watcher.ready.wait())
        done, _ = await asyncio.wait({ready, supervised}, timeout=READY_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        ready.cancel()
    if ready not in done:
        if supervised.done():
            error = supervised.result()
            raise RunAborted(f"the regions did not start: {error or 'the supervisor exited'}")
        raise RunAborted(f"the regions were not ready after {READY_TIMEOUT_S:.0f} s")


# ------------------------------------------------------------------------------------------ the run's phases


@dataclass(frozen=True)
class Experiment:
    """One experiment's inputs, fixed before anything starts."""

    topology: Topology
    workload: Workload
    seed: int
    chaos_path: Path | None
    schedule: Any  # chaos/schedule.py Schedule, or None
    out_dir: Path
    started_at: str


@dataclass
class RunContext:
    """What the phases of one run share: the experiment, the regions it runs on, the history every phase records
    into, and what each phase leaves for the later ones."""

    experiment: Experiment
    progress: Progress
    regions: Regions
    replicas: list[str]
    clock: SystemClock
    history: History
    preexisting: dict[str, set[str]] = field(default_factory=dict)  # ready: keys held before the run
    load: LoadGenerator | None = None  # load: the generator, its samples and lag probes
    measure_from: float = 0.0
    measure_to: float = 0.0
    waited: float | None = None  # quiesce: seconds until drained, None when it did not within the timeout
    convergence: list[dict[str, Any]] = field(default_factory=list)
    insights_enabled: list[str] = field(default_factory=list)  # ready: regions counting top keys
    capacity: dict[str, Any] = field(default_factory=dict)  # capacity: each region's counters and top keys


@dataclass
class FinalReads:
    """What the regions hold once replication is quiet: status, apply decisions and every replica's items."""

    statuses: dict[str, dict]
    decisions: dict[str, list[dict]]
    states: dict[str, dict[str, dict]]


async def _run_against(deployment: Deployment, experiment: Experiment, progress: Progress) -> dict[str, Any]:
    """The experiment proper, on regions that are up: ready (and Contributor Insights on), load and faults (then
    heal), quiesce, final reads (and the regions' capacity counters: experiment/capacity.py), check, results."""
    topology = experiment.topology
    replicas = [region.name for region in topology.replicas]
    endpoints = {name: deployment.endpoints[name] for name in replicas}
    clock = SystemClock()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        regions = Regions(endpoints, deployment.secret, session, topology.credentials)
        run = RunContext(experiment, progress, regions, replicas, clock, History(clock))
        await _ready(run, deployment)
        run.insights_enabled = await capacity_phase.enable_contributor_insights(run)
        await _load_and_faults(run, deployment)
        await _quiesce(run)
        final = await _final_reads(run)
        run.capacity = await capacity_phase.collect_capacity(run)
    final.states = _written_or_new(final.states, run.preexisting, run.history)  # what is judged and kept
    checks = _check(run, final)
    lost = _write_artifacts(run, final, checks)
    return _results(run, final, checks, lost)


async def _ready(run: RunContext, deployment: Deployment) -> None:
    """The regions run the topology's mode; on regions attached to, the keys already there (not the run's to
    judge unless it writes them)."""
    await _require_mode(run.experiment.topology, run.regions)
    if not deployment.fresh:
        run.preexisting = await _table_keys(run.regions, run.experiment.topology, run.replicas)


async def _load_and_faults(run: RunContext, deployment: Deployment) -> None:
    """Warm-up and measured load, with the chaos schedule (on a thread) from the start of the measured period;
    then the heal: the schedule's end and final heal awaited."""
    experiment = run.experiment
    topology, workload, schedule = experiment.topology, experiment.workload, experiment.schedule
    table = next(spec for spec in topology.tables if spec.name == workload.table)
    load = LoadGenerator(workload, run.regions.endpoints, table.request(), Rng(experiment.seed), run.history,
                         run.clock, topology.credentials)  # fmt: skip
    run.load = load
    run.progress.load, run.progress.phase = load, "load"
    controller = None
    chaos_log: IO[str] | None = None
    if schedule is not None:
        from ..chaos.controller import Controller

        target = deployment.control_target(topology)
        chaos_log = open(experiment.out_dir / "chaos.log", "w")  # noqa: SIM115, ASYNC230 - tiny; closed after the run
        log = chaos_log
        controller = Controller(target, _LoopFaults(run.history, asyncio.get_running_loop(), run.clock),
                                log=lambda line: (log.write(line + "\n"), log.flush()))  # fmt: skip
        run.progress.controller = controller
    try:
        async with task_owner() as phase:
            chaos: list[asyncio.Task] = []

            def started(measure_from: float) -> None:
                run.progress.measure_from = measure_from
                if controller is not None:

                    def run_schedule() -> None:
                        time.sleep(max(0.0, measure_from - time.monotonic()))
                        controller.run(schedule, quiet=False)

                    chaos.append(phase.start(asyncio.to_thread(run_schedule), name="chaos-schedule"))

            run.measure_from, run.measure_to = await load.run(workload.warmup_s, workload.duration_s, started)
            if chaos:
                run.progress.phase = "healing"
                await chaos[0]
    finally:
        if chaos_log is not None:
            chaos_log.close()
    await asyncio.sleep(0)  # let the controller's last fault records land in the history


async def _quiesce(run: RunContext) -> None:
    """Until every lane is drained (bounded), the convergence times, then the schedule's quiet period."""
    workload, schedule = run.experiment.workload, run.experiment.schedule
    run.progress.phase = "quiescing"
    run.waited = waited = await run.regions.wait_quiesced(workload.quiesce_timeout_s)
    drained = time.monotonic()
    run.convergence = [{"after": "end of load", "ms": None if waited is None else round(waited * 1000.0, 1)}]
    heals = [op for op in run.history.faults() if op.f == "heal" and (op.value or {}).get("phase") == "final"]
    if heals and waited is not None:
        run.convergence.append({"after": "final heal", "ms": round((drained - heals[-1].mono) * 1000.0, 1)})
    if schedule is not None and schedule.quiet_s > 0:
        await asyncio.sleep(schedule.quiet_s)  # the schedule's quiet period before the checkers read


async def _final_reads(run: RunContext) -> FinalReads:
    run.progress.phase = "checking"
    regions, replicas = run.regions, run.replicas
    statuses = {name: await regions.status(name) for name in replicas}
    decisions = {name: await regions.apply_decisions(name) for name in replicas}
    states: dict[str, dict[str, dict]] = {}
    for name in replicas:
        states[name] = {}
        for spec in run.experiment.topology.tables:
            key_names = [k["AttributeName"] for k in spec.definition["KeySchema"]]
            states[name][spec.name] = await regions.scan(name, spec.name, key_names)
    return FinalReads(statuses, decisions, states)


def _check(run: RunContext, final: FinalReads) -> list[CheckResult]:
    topology, workload = run.experiment.topology, run.experiment.workload
    checks = run_checkers(topology.mode, run.history, final.states, topology.conflict_clock)
    if run.waited is None:
        checks.append(
            CheckResult("quiescence", False, f"replication did not drain within {workload.quiesce_timeout_s:.0f} s")
        )
    return checks


def _write_artifacts(run: RunContext, final: FinalReads, checks: list[CheckResult]) -> ledger.Ledger:
    """history.jsonl (and its exports), samples.csv, final_state.jsonl, the lost-write ledger, checks.txt and
    checks.json; the ledger, for results.json."""
    out_dir, history, load = run.experiment.out_dir, run.history, run.load
    assert load is not None
    history.write_jsonl(out_dir / "history.jsonl")
    write_exports(out_dir, history, exclude=is_probe_key)  # for elle-cli and Porcupine (chaos/exports.py)
    write_samples(out_dir / "samples.csv", load.samples, run.measure_from)
    write_final_states(out_dir / "final_state.jsonl", final.states)
    lost = ledger.build_ledger(history, final.decisions, run.measure_from)
    ledger.write_files(out_dir, lost, final.decisions)
    (out_dir / "checks.txt").write_text("\n".join(str(check) for check in checks) + "\n")
    (out_dir / "checks.json").write_bytes(orjson.dumps([check.to_dict() for check in checks]))
    return lost


def _results(run: RunContext, final: FinalReads, checks: list[CheckResult], lost: ledger.Ledger) -> dict[str, Any]:
    """results.json (docs/results.md)."""
    experiment, history, load = run.experiment, run.history, run.load
    assert load is not None
    topology, workload, schedule = experiment.topology, experiment.workload, experiment.schedule
    measure_from = run.measure_from
    measured = run.measure_to - measure_from
    samples = load.samples
    rwce = sum(1 for s in samples if s.error == "ReplicatedWriteConflictException")
    applied = sum(status.get("received", {}).get("applied_records", 0) for status in final.statuses.values())
    won = sum(status.get("received", {}).get("won", 0) for status in final.statuses.values())
    throughput = {}
    for region in load.regions:
        count = sum(1 for s in samples if s.region == region and s.measured and s.outcome != "info")
        accepted = sum(1 for s in samples if s.region == region and s.measured and s.outcome == "ok")
        throughput[region] = {
            "target_per_s": workload.rate_per_region,
            "achieved_per_s": round(count / measured, 2) if measured > 0 else 0.0,
            "ok_per_s": round(accepted / measured, 2) if measured > 0 else 0.0,  # answered ok (not throttled)
        }
    wl = asdict(workload)
    wl["mix"] = dict(workload.mix)
    wl["regions"] = list(workload.regions or [])
    return {
        "results_version": results_module.RESULTS_VERSION,
        "name": f"{topology.name}",
        "topology": topology.name,
        "mode": topology.mode,
        "conflict_clock": topology.conflict_clock,
        "seed": experiment.seed,
        "regions": list(topology.region_names),
        "links_ms": {
            f"{a}->{b}": topology.link(a, b).latency_ms
            for a in topology.region_names
            for b in topology.region_names
            if a != b
        },
        "workload": wl,
        "chaos": str(experiment.chaos_path) if experiment.chaos_path else None,
        "chaos_seed": getattr(schedule, "seed", None),
        "started_at": experiment.started_at,
        "duration_s": round(measured, 3),
        "throughput": throughput,
        "latency_ms": results_module.latency_table(samples),
        "outcomes": results_module.outcome_table(samples),
        "errors": results_module.error_table(samples, load.regions),
        "replication_lag_ms": results_module.lag_table(load.lag),
        "replication_lag_source": "probe",
        "conflicts": {
            "replicated_write_conflicts": rwce,
            "lww_overwrites": max(0, applied - won),
            "replicated_records": applied,
        },
        "lost_writes": lost.summary(),
        "checks": [check_summary(c) for c in checks],
        "staleness": check_staleness(history)[1],
        "convergence_ms": run.convergence,
        "quiesced": run.waited is not None,
        "faults": [op.to_dict() for op in history.faults()],
        "measure_from_mono": measure_from,
        "timeline": results_module.timeline(samples, measure_from, throttles=load.throttles),
        "throttles": results_module.throttle_table(
            load.throttles,
            load.retries,
            samples,
            sum(status.get("received", {}).get("deferred", 0) for status in final.statuses.values()),
            measure_from,
        ),
        "lag_timeline": [
            {
                "link": f"{s.source}->{s.target}",
                "t_s": round(s.at - measure_from, 3),
                "lag_ms": round(s.lag_s * 1000, 3),
            }
            for s in load.lag
        ],
        "capacity": run.capacity,
        "latency_samples_file": "history.jsonl",
        "completed": True,
    }


async def _table_keys(regions: Regions, topology: Topology, replicas: list[str]) -> dict[str, set[str]]:
    """{table: key ids present in any replica now}."""
    found: dict[str, set[str]] = {}
    for name in replicas:
        for spec in topology.tables:
            key_names = [k["AttributeName"] for k in spec.definition["KeySchema"]]
            found.setdefault(spec.name, set()).update(await regions.scan(name, spec.name, key_names))
    return found


def _written_or_new(states: dict, preexisting: dict[str, set[str]], history: History) -> dict:
    """`states` without the items that were there before the run and that no operation of the run wrote."""
    if not any(preexisting.values()):
        return states
    written = {(op.table, key_id(op.key)) for op in history.ops if op.is_write or op.is_delete}
    return {
        region: {
            table: {key: item for key, item in items.items()
                    if key not in preexisting.get(table, ()) or (table, key) in written}  # fmt: skip
            for table, items in tables.items()
        }
        for region, tables in states.items()
    }


async def _require_mode(topology: Topology, regions: Regions) -> None:
    """Refuse to measure a mode the regions do not run: numbers from regions replicating in another mode than the
    topology asks for would be a lie. Regions name their mode in /control/status; one that does not runs MREC."""
    for name in regions.endpoints:
        status = await regions.status(name)
        running = status.get("mode", "mrec")
        if running != topology.mode:
            raise RunAborted(
                f"topology {topology.name} is mode {topology.mode}, but region {name} runs {running}: "
                "mode mismatch"
            )


def run_command(
    topology_path: Path,
    chaos_path: Path | None,
    seed: int,
    out_dir: Path | None,
    duration_s: float | None = None,
    attach: bool = False,
) -> int:
    """The CLI entry: run, print where the report is, return the exit status."""
    try:
        outcome = asyncio.run(
            run_experiment(
                topology_path,
                chaos_path=chaos_path,
                seed=seed,
                out_dir=out_dir,
                duration_s=duration_s,
                progress_stream=sys.stderr,
                attach=attach,
            )
        )
    except KeyboardInterrupt:
        print("globaltables run: interrupted", file=sys.stderr)
        return EXIT_INCOMPLETE
    return print_outcome(outcome)


def print_outcome(outcome: RunOutcome) -> int:
    """What `globaltables run` prints at the end (verdicts, where the report is; a simulated run's replay too), or
    why the run could not be made; the exit status."""
    if outcome.results is None or outcome.out_dir is None:
        print(f"globaltables run: {outcome.reason}", file=sys.stderr)
        return outcome.exit_code
    for check in outcome.results["checks"]:
        print(f"{check['name']}: {LABEL[verdict_of(check)]} — {check['detail']}")
    print(f"report: {outcome.out_dir / 'report.md'}")
    print(f"results: {outcome.out_dir / 'results.json'}")
    if "replay" in outcome.results:
        print(f"replay: {outcome.results['replay']}")
    return outcome.exit_code
