"""`globaltables run TOPOLOGY --simulated`: one whole experiment in virtual time, in this process.

Theory of operation: the topology runs on the deterministic simulator (sim/: a `SimCluster` for `mode: mrec`, an
`MrscCluster` for `mode: mrsc`, one `Scheduler` whose virtual time every region, link and client shares). The phases
mirror experiment/runner.py's and share its code wherever the logic is the same:
  ready          build the cluster (the topology's regions, links, clock offsets and tables);
  load + faults  the open-loop workload of experiment/load.py — the same `LoadGenerator` state (key codec, request
                 bodies, history names, processes, unique values, samples) and the same seeded streams
                 (`workload/<region>` forks of `Rng(seed)`, `keys` and `ops` under it), so a seed asks the same
                 operations of the same keys at the same intended times as a process run; each operation is an
                 event on the scheduler that calls the region's engine (MREC) or its strong-mode request path
                 (region/mrsc_requests.py, MRSC) directly, without HTTP or JSON. The chaos schedule runs on the
                 same scheduler through `chaos.controller.Controller` and `SimTarget` from the start of the
                 measured period; the lag probe writes and polls on the process run's schedule, but a poll
                 whose answer the target's store shows to be stale is not sent (docs/results.md, "The lag
                 probe in virtual time": the same lag figures, one read per target per probe write);
  heal           the controller's final heal (every region restarted or resumed, links and clocks back);
  quiesce        run until two consecutive status polls find every lane drained (MREC: acked == log_end; MRSC:
                 no proposal, queued write, strong read or pending proposal), bounded by quiesce_timeout_s, then
                 the schedule's quiet period;
  final reads    every replica's items by consistent Scans (MRSC: strong Scans through the request path);
  check, artifacts, results   runner.py's `_check`, `_write_artifacts` and `_results`, then report.py.

Capacity: each region's engine models capacity as the topology's `capacity:` says (modelled unless `unlimited`, as
the region process's `--capacity`; MRSC members as docs/capacity.md decision 21 says), on the virtual clock, so throttles and replication's deferrals replay from the seed. Every attempt's
answer goes through LoadGenerator's `attempt_answered` (load.py, the process run's own): throttles are counted by reason into
results.json's `throttles`, and the workload's `sdk_retries` mode retries after its delays on the scheduler.

What differs from a process run, by construction: an MREC request takes no virtual time (the region answers at the
instant it is asked; latencies are 0 unless a region is paused or the SDK mode retried); a request to a crashed region completes `info`
ConnectionError at once, to a paused one it waits until the region resumes (answered then) or until timeout_s
(`info` Timeout; a region crashed meanwhile resets it: ConnectionError); the apply-decision log of a region
survives its restarts (the observer keeps it, not the region). MREC regions sweep expired items every
`ttl_sweep_interval_s` of virtual time, as the region process's sweeper does.

Determinism: everything random comes from `Rng(seed)` forks; results carry only virtual times (`started_at` is the
simulator's epoch, the virtual wall time at t = 0), so one seed gives byte-identical history.jsonl and results.json.

Entry point for programmatic use (a sweep's worker processes): `run_simulated`. Its arguments are plain data
(a Topology, a Workload, a schedule or its path, numbers, a Path, a `PlantedBugs`), hence picklable; it spawns no
process and needs no event loop.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..chaos.checkers.result import exit_status, verdict_of
from ..chaos.controller import Controller
from ..chaos.history import DEFINITE_ERRORS, History
from ..chaos.schedule import Schedule
from ..chaos.target import SimTarget, TargetError
from ..engine.errors import DynamoError
from ..engine.mutation import Mutation
from ..engine.throttling import FINAL_READ_BACKOFF_S
from ..region import capacity_metrics, wire
from ..region.apply_decisions import ApplyDecisions
from ..replication.mrsc.node import ACCEPT_AFTER_CONFLICT
from ..runtime.rng import Rng
from ..sim.clock import DEFAULT_EPOCH, SimClock
from ..sim.cluster import SimCluster, scan_items
from ..sim.collector import simulation_collector
from ..sim.mrsc_cluster import MrscCluster
from ..topology.model import Topology
from . import capacity as capacity_phase
from . import ledger, strong_flights
from .load import (
    HISTORY_CONDITIONS,
    HISTORY_NAMES,
    LIST_HISTORY_NAMES,
    PROBE_GIVE_UP_S,
    PROBE_POLL_S,
    Answer,
    LagSample,
    LoadGenerator,
    Sample,
    version_order,
)
from .runner import (
    EXIT_INCOMPLETE,
    STATUS_POLL_S,
    Experiment,
    FinalReads,
    Progress,
    RunAborted,
    RunContext,
    RunOutcome,
    _check,
    _results,
    _write_artifacts,
    add_scan_page,
    load_chaos,
    load_experiment,
    print_outcome,
)
from .sdk_retries import THROTTLES
from .workload import WRITE_OPERATIONS, KeyChooser, OperationChooser, Workload, parse_workload

STARTED_AT = datetime.datetime.fromtimestamp(DEFAULT_EPOCH, datetime.UTC).isoformat(timespec="seconds")
TTL_SWEEP_LIMIT = 500  # items per sweep step, as the pytest kit's simulated harness sweeps
LOAD_START_S = 0.05  # as LoadGenerator.run: the first operation is intended this long after the load starts


# ------------------------------------------------------------------------------------------------- planted bugs


@dataclass(frozen=True)
class PlantedBugs:
    """Bugs planted on purpose, for tests that prove a checker catches them (a sweep's tests). Only reachable from
    Python (`run_simulated(..., hooks=PlantedBugs(...))`): no topology field, flag or environment variable sets one.

    `ignore_replicated_write`: (region, probability) — MREC: that region drops each replicated record it is
    shipped with this probability (drawn from the run's seed), acknowledging it all the same, so its replica
    silently misses writes.
    `local_strong_reads`: a region — MRSC: that member answers strongly consistent GetItems from its own copy
    without syncing with another member first, so a member that missed commits returns stale "strong" reads.
    `voter_accepts_after_refusing`: a region — MRSC: that member, having refused a proposal because it holds a
    racing one (`conflict`), accepts it when its coordinator asks again although it still holds the other
    (replication/mrsc/node.py "accept-after-conflict"), so two racing strong writes can both commit.
    """

    ignore_replicated_write: tuple[str, float] | None = None
    local_strong_reads: str | None = None
    voter_accepts_after_refusing: str | None = None

    def mrsc_bugs(self) -> list[str]:
        return [name for name in ("local_strong_reads", "voter_accepts_after_refusing") if getattr(self, name)]


def _local_strong_reads(requests_class: type) -> type:
    """The strong-mode request path with PlantedBugs.local_strong_reads: a strong GetItem reads locally."""

    class LocalStrongReads(requests_class):  # type: ignore[misc, valid-type]
        def _strong_get(self, request: dict) -> Any:
            return self.engine.handle("GetItem", request)
            yield  # a generator, as the request path's steps are

    return LocalStrongReads


class _IgnoringPort:
    """An engine replica port that ignores replicated records at random (PlantedBugs.ignore_replicated_write):
    each one ignored becomes a delete stamped with the least version, which loses to whatever the replica holds,
    so the lane's position still advances and the link acknowledges it — nothing retransmits what was ignored."""

    def __init__(self, port: Any, probability: float, rng: Rng) -> None:
        self._port, self._probability, self._rng = port, probability, rng

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)

    def apply_replicated(self, origin: str, table: str, lane: int, records: list[Mutation]) -> Any:
        names = self._port.engine.table(table).key.names
        changed = []
        for record in records:
            if self._rng.random() < self._probability:
                key = record.key or {name: record.image[name] for name in names}
                record = Mutation(record.pos, key, f"A0.A0/{origin}", None, record.commit_ms)
            changed.append(record)
        return self._port.apply_replicated(origin, table, lane, changed)


# ---------------------------------------------------------------------------------------------------- results


@dataclass
class SimulatedRun:
    """What `run_simulated` returns: results.json's content, each checker's verdict ("valid", "invalid",
    "unknown"), the first violation found (a finding of results.json, or None), the exit status `globaltables run`
    would give and the command that replays the run."""

    results: dict[str, Any]
    verdicts: dict[str, str]
    first_violation: dict[str, Any] | None
    exit_code: int
    replay: str
    out_dir: Path | None = None


# ------------------------------------------------------------------------------------------------- the clients


class _Clients:
    """The workload's client side on the scheduler: `LoadGenerator`'s state and request shapes, its drive and
    probe loops as chains of scheduler events. Subclasses say how a region answers (`_send`)."""

    def __init__(self, run: _SimRun) -> None:
        self.run = run
        self.load = run.load
        self.scheduler = run.scheduler
        self.clock = run.clock
        self.pending = 0  # requests sent, not answered
        self.probing = False
        self.probes_running = 0  # probe loops not finished

    # -- one request ------------------------------------------------------------------------------------------

    def execute(self, region: str, op: str, key: dict, intended: float, measured: bool, probe: bool,
                then: Callable[[str, Any, str | None], None] | None = None) -> None:  # fmt: skip
        load = self.load
        is_write = op in WRITE_OPERATIONS
        value = load._unique_value(region) if is_write and op != "delete" else None
        process = load._acquire_process(region)
        lists = load.lists and not probe
        name = (LIST_HISTORY_NAMES if lists else HISTORY_NAMES).get(op, op)
        invocation = load.history.invoke(process, region, name, load.table, key, value,
                                         condition=HISTORY_CONDITIONS.get(op))  # fmt: skip
        load.sent += 1
        self.pending += 1
        operation, body = load.request(op, key, value)

        def answered(outcome: str, response: Any, version: str | None, error: str | None) -> None:
            self.pending -= 1
            done = self.clock.monotonic()
            if outcome == "ok":
                read = None if is_write else load.read_value(op, response, lists)
                load.history.ok(invocation, value=read, version=version)
            else:
                load.errors += not probe
                load.history.complete(invocation, outcome, error=error)
            load._release_process(region, process, outcome)
            load.completed += 1
            load.samples.append(Sample(region, op, intended, done, outcome, error, measured, probe))
            if then is not None:
                then(outcome, response, version)

        attempts = [0]

        def attempted(outcome: str, response: Any, version: str | None, error: str | None) -> None:
            # The SDK's side of the answer (load.py, shared with the process run): its throttle counted, and a
            # retry after the mode's delay in virtual time, or the operation's end.
            answer = Answer(outcome, response, version, error)
            delay = load.attempt_answered(region, op, attempts[0], answer, probe)
            if delay is None:
                answered(outcome, response, version, error)
            else:
                self.scheduler.call_later(delay, begin)

        def resumed() -> None:
            if self.run.up(region):
                self._send(region, operation, body, attempted)
            else:  # crashed while paused: the held connection is reset
                attempted("info", None, None, "ConnectionError")

        def attempt() -> None:
            attempts[0] += 1
            if not self.run.up(region):
                attempted("info", None, None, "ConnectionError")  # a refused connection, as aiohttp reports it
            elif self.run.target.is_paused(region):
                self.run.wait_for_resume(region, load.workload.timeout_s, resumed,
                                         lambda: attempted("info", None, None, "Timeout"))  # fmt: skip
            else:
                self._send(region, operation, body, attempted)

        def begin() -> None:
            wait = load.send_delay(region)  # the adaptive mode's limiter
            if wait > 0:
                self.scheduler.call_later(wait, attempt)
            else:
                attempt()

        begin()

    def _send(self, region: str, operation: str, body: dict, answered: Callable) -> None:
        raise NotImplementedError

    @staticmethod
    def classify(error: DynamoError) -> tuple[str, str, dict]:
        """(outcome, error name, body) as the load generator reads an error answer off the wire: the body (a
        throttle's ThrottlingReasons are in it), its `__type` after the `#`; fail when the status is below 500 and
        the error proves no effect, else info."""
        body = error.to_body()
        name = str(body.get("__type", "")).rpartition("#")[2] or type(error).__name__
        outcome = "fail" if error.status < 500 and name in DEFINITE_ERRORS else "info"
        return outcome, name, body

    def _error_answer(self, error: DynamoError) -> tuple[str, dict, None, str]:
        outcome, name, body = self.classify(error)
        return outcome, body, None, name

    # -- the drive loop ---------------------------------------------------------------------------------------

    def start(self, start: float, measure_from: float, stop: float) -> None:
        workload = self.load.workload
        interval = 1.0 / workload.rate_per_region
        for region in self.load.regions:
            region_rng = self.load.rng.fork(f"workload/{region}")
            keys = KeyChooser(workload, region_rng.fork("keys"))
            ops = OperationChooser(workload, region_rng.fork("ops"))
            self._next(region, keys, ops, 0, start, interval, measure_from, stop)

    def _next(self, region, keys, ops, index, start, interval, measure_from, stop) -> None:
        intended = start + index * interval
        if intended >= stop:
            return
        self.scheduler.call_at(intended, self._issue, region, keys, ops, index, start, interval, measure_from, stop)

    def _issue(self, region, keys, ops, index, start, interval, measure_from, stop) -> None:
        intended = start + index * interval
        op, index_of_key = ops.next(), keys.next()
        key = self.load.codec.key(index_of_key)
        workload = self.load.workload
        target = workload.write_target(region, index_of_key) if op in WRITE_OPERATIONS else region
        self.execute(target, op, key, intended, intended >= measure_from, False)
        self._next(region, keys, ops, index + 1, start, interval, measure_from, stop)

    # -- the lag probe ------------------------------------------------------------------------------------------

    def start_probes(self) -> None:
        load = self.load
        if load.workload.lag_probe_interval_s <= 0 or len(load.endpoints) <= 1:
            return
        self.probing = True
        for index, region in enumerate(load.endpoints):
            if region in load.regions:
                self.probes_running += 1
                self._probe(index, region)

    def stop_probes(self) -> None:
        self.probing = False

    def _probe(self, region_index: int, source: str) -> None:
        if not self.probing:
            self.probes_running -= 1
            return
        load = self.load
        key = load.codec.probe_key(region_index, source)
        began = self.clock.monotonic()
        interval = load.workload.lag_probe_interval_s

        def next_round() -> None:
            remaining = began + interval - self.clock.monotonic()
            if remaining > 0 and self.probing:
                self.scheduler.call_later(remaining, self._probe, region_index, source)
            else:
                self._probe(region_index, source)

        def written(outcome: str, _response: Any, version: str | None) -> None:
            acked = self.clock.monotonic()
            if outcome != "ok" or not version:
                next_round()
                return
            wanted = version_order(version)
            targets = [target for target in load.probe_targets if target != source]
            waiting = [len(targets)]

            def watched() -> None:
                waiting[0] -= 1
                if waiting[0] == 0:
                    next_round()

            for target in targets:
                self._watch(source, target, key, wanted, acked, watched)
            if not targets:
                next_round()

        self.execute(source, "put", key, began, False, True, written)

    def _watch(self, source, target, key, wanted, acked, done: Callable[[], None], peek: Any = None) -> None:
        if self.clock.monotonic() >= acked + PROBE_GIVE_UP_S:
            done()
            return
        if peek is None:
            peek = self._peeker(target, key)
        if peek is not None and self.run.up(target) and not self.run.target.is_paused(target):
            stored = peek()
            if not stored or version_order(stored) < wanted:
                # A poll now would answer an older version (or be throttled): it cannot end the watch, so it is
                # not sent (docs/results.md, "The lag probe in virtual time"); the next poll instant is looked at.
                self.scheduler.call_later(PROBE_POLL_S, self._watch, source, target, key, wanted, acked, done, peek)
                return
        sent = self.clock.monotonic()

        def read(outcome: str, _response: Any, version: str | None) -> None:
            if outcome == "ok" and version and version_order(version) >= wanted:
                self.load.lag.append(LagSample(source, target, acked, max(0.0, sent - acked)))
                done()
                return
            self.scheduler.call_later(PROBE_POLL_S, self._watch, source, target, key, wanted, acked, done, peek)

        self.execute(target, "get", key, sent, False, True, read)

    def _peeker(self, region: str, key: dict) -> Callable[[], str | None] | None:
        """A look at the version `region`'s replica holds for `key`, without a request (no capacity, no history),
        or None where a region's answer cannot be known without asking it (the default: every poll is sent)."""
        return None

    def busy(self) -> bool:
        return self.pending > 0 or self.probes_running > 0


class _MrecClients(_Clients):
    """An MREC region answers at once, from its engine (what region/wire.py's `answer` calls)."""

    def _peeker(self, region: str, key: dict) -> Callable[[], str | None] | None:
        # What an eventually consistent GetItem of `key` would answer as its version (get_item.py's read, with
        # nothing charged): the item's version, None for no item or a tombstone. Only called while the region is
        # up. A restart brings a new engine, so the engine is looked up at each peek; the key's encoding is the
        # table's and does not change.
        cluster, table_name = self.run.cluster, self.load.table
        encoded: list[tuple[bytes, bytes]] = []

        def peek() -> str | None:
            engine = cluster.regions[region].engine
            if engine.versions is None:
                return None
            if not encoded:
                pk, sk, _key = engine.table(table_name).key.key_from_request(key)
                encoded.append((pk, sk))
            _item, version, tombstone = engine.store.get_record(table_name, *encoded[0])
            return None if tombstone else version

        return peek

    def _send(self, region: str, operation: str, body: dict, answered: Callable) -> None:
        state = self.run.cluster.regions[region]
        try:
            response, version = state.hosted.execute(operation, body)
        except DynamoError as error:
            answered(*self._error_answer(error))
            return
        answered("ok", response, version, None)


class _Flight(strong_flights.Flight):
    """A strong-mode request in flight, answered by callback (`answered`) instead of to a parked caller."""

    __slots__ = ("answered",)

    def __init__(self, region: str, steps: Any, answered: Callable) -> None:
        super().__init__(region, steps)
        self.answered = answered


class _MrscClients(_Clients):
    """A strong-mode member answers through its request path, region/mrsc_requests.py (the region process's):
    writes and strong reads wait for the commit protocol on the scheduler, with the region process's guard."""

    def __init__(self, run: _SimRun) -> None:
        super().__init__(run)
        self._paths: dict[str, Any] = {}

    def _path(self, region: str) -> Any:
        from ..region.mrsc_requests import MrscRequests

        member = self.run.cluster.members[region]
        path = self._paths.get(region)
        if path is None or path.node is not member.node:  # a restart brings a new node
            requests = MrscRequests
            if self.run.hooks.local_strong_reads == region:
                requests = _local_strong_reads(MrscRequests)
            path = self._paths[region] = requests(member.api, member.node, self.run.cluster.config,
                                                  witness=member.witness)  # fmt: skip
        return path

    def _send(self, region: str, operation: str, body: dict, answered: Callable) -> None:
        flight = _Flight(region, self._path(region).handle(wire.DYNAMODB_SERVICE, operation, body), answered)
        self._resume(flight, None)

    def _resume(self, flight: _Flight, outcomes: list | None) -> None:
        if outcomes is not None and not self.run.up(flight.region):  # crashed before the request was resumed
            flight.crashed = True
            flight.steps.close()
            flight.answered("info", None, None, "ConnectionError")
            return
        try:
            strong_flights.advance(flight, outcomes, self.run.cluster.host, self._completion, (DynamoError,))
        except StopIteration as done:
            flight.answered("ok", done.value, None, None)  # strong-mode answers carry no version header
        except DynamoError as error:
            flight.answered(*self._error_answer(error))
        except Exception:  # noqa: BLE001 - as MrscRequests.answer: any other failure is a 500
            flight.answered("info", None, None, "InternalServerError")

    def _completion(self, flight: _Flight, index: int) -> Callable[[str, Any], None]:
        def on_done(outcome: str, detail: Any) -> None:
            if flight.crashed:
                return
            if outcome == "crashed":  # the region died under the request: its connection is reset
                flight.crashed = True
                flight.steps.close()
                flight.answered("info", None, None, "ConnectionError")
                return
            flight.outcomes[index] = (outcome, detail)
            flight.missing -= 1
            if flight.missing == 0 and not flight.submitting:
                # Resumed as an event of its own, outside the callback that completed it (as the region process
                # resumes a request after the callback that completed its future).
                self.scheduler.call_soon(self._resume, flight, flight.outcomes)

        return on_done


# ------------------------------------------------------------------------------------------------- the run


class _SimRun:
    """One simulated run's state: the cluster, its target, the history and the clients."""

    def __init__(self, topology: Topology, workload: Workload, seed: int, hooks: PlantedBugs | None) -> None:
        self.topology, self.workload, self.seed = topology, workload, seed
        self.hooks = hooks or PlantedBugs()
        self.decisions: dict[str, ApplyDecisions] = {}
        self._planted_rngs: dict[str, Rng] = {}
        self.strong = topology.mode == "mrsc"
        if self.strong and self.hooks.ignore_replicated_write is not None:
            raise ValueError("PlantedBugs.ignore_replicated_write plants an MREC bug; this topology is mode: mrsc")
        if not self.strong and self.hooks.mrsc_bugs():
            raise ValueError(f"PlantedBugs.{self.hooks.mrsc_bugs()[0]} plants an MRSC bug; this topology is mode: mrec")
        # Each region's capacity as the topology says, as its region process would run it (`--capacity`, modelled
        # unless `capacity: unlimited`; docs/capacity.md, decisions 12 and 21), on the virtual clock.
        capacity = {region.name: region.capacity for region in topology.regions}
        if self.strong:
            self.cluster: Any = MrscCluster.from_topology(topology, seed, journal=False, capacity=capacity,
                                                          on_node=self._node)  # fmt: skip
        else:
            self.cluster = SimCluster(topology, seed, journal=False, port_wrapper=self._port, capacity=capacity)
        self.scheduler = self.cluster.scheduler
        self.clock = SimClock(self.scheduler)  # true time: the history's and the clients' clock
        self.history = History(self.clock)
        self.target = _Target(self.cluster)
        self.replicas = [region.name for region in topology.replicas]
        table = next(spec for spec in topology.tables if spec.name == workload.table)
        endpoints = {name: f"sim://{name}" for name in self.replicas}
        self.load = LoadGenerator(workload, endpoints, table.request(), Rng(seed), self.history, self.clock,
                                  topology.credentials)  # fmt: skip
        self.clients: _Clients = _MrscClients(self) if self.strong else _MrecClients(self)
        if not self.strong:  # MREC regions sweep expired items, as the region process's sweeper does
            self.scheduler.call_later(topology.ttl_sweep_interval_s, self._sweep_ttl)

    def _port(self, region: str, port: Any) -> Any:
        """Every (re)start of a region: its decisions logged on the observer's clock, and any planted bug."""
        decisions = self.decisions.setdefault(region, ApplyDecisions(now=lambda: self.clock.monotonic()))
        port.on_decision = decisions.record
        planted = self.hooks.ignore_replicated_write
        if planted is not None and planted[0] == region:
            # One stream per region for the whole run (a restart goes on drawing from it, as the ids do).
            rng = self._planted_rngs.setdefault(region, Rng(self.seed).fork(f"planted/{region}"))
            return _IgnoringPort(port, planted[1], rng)
        return port

    def _node(self, region: str, node: Any) -> None:
        """Every (re)start of an MRSC member: the voter bug planted in it, if it is the one named."""
        if self.hooks.voter_accepts_after_refusing == region:
            node.planted = node.planted | {ACCEPT_AFTER_CONFLICT}

    def up(self, region: str) -> bool:
        return self.cluster.region(region).up

    def _sweep_ttl(self) -> None:
        """Every region up, in order, sweeps its expired items to the end of a pass (testing/simulated.py's
        sweep, the region process's TTL sweeper on virtual time)."""
        for name in self.cluster.region_names:
            state = self.cluster.regions[name]
            if state.up:
                while True:
                    state.engine.sweep_expired(TTL_SWEEP_LIMIT)
                    if state.engine.ttl.pass_complete:
                        break
        self.scheduler.call_later(self.topology.ttl_sweep_interval_s, self._sweep_ttl)

    def wait_for_resume(self, region: str, timeout_s: float, resumed: Callable[[], None],
                        timed_out: Callable[[], None]) -> None:  # fmt: skip
        settled = [False]

        def on_resume() -> None:
            if not settled[0]:
                settled[0] = True
                self.scheduler.cancel(guard)
                resumed()

        def on_timeout() -> None:
            if not settled[0]:
                settled[0] = True
                timed_out()

        guard = self.scheduler.call_later(timeout_s, on_timeout)
        self.target.on_resume(region, on_resume)

    # -- status -------------------------------------------------------------------------------------------------

    def statuses(self) -> dict[str, dict]:
        if self.strong:
            members = self.cluster.members
            return {name: members[name].node.status() for name in self.replicas if members[name].up}
        return {name: self.cluster.regions[name].node.status() for name in self.replicas if self.up(name)}

    def drained(self) -> bool:
        """What the process run's quiesce waits for: MREC, every lane acknowledged to its log end; MRSC, nothing
        in progress at any member."""
        if self.clients.busy():
            return False
        if self.strong:
            return all(self.up(name) for name in self.cluster.region_names) and self.cluster.quiescent()
        statuses = self.statuses()
        if len(statuses) < len(self.replicas):
            return False
        return all(link["acked"] == link["log_end"] for status in statuses.values() for link in status["links"])

    # -- the capacity phase (experiment/capacity.py's rules, on the engines instead of the regions' routes) -------

    def engine(self, region: str) -> Any:
        """The engine a region's data plane runs on (MRSC: the member's API engine)."""
        return self.cluster.members[region].api if self.strong else self.cluster.regions[region].engine

    def enable_contributor_insights(self) -> list[str]:
        """Contributor Insights on in every capacity-modelled replica before the warm-up, as the process run's
        capacity phase enables it (through the data plane); the regions it is on in."""
        regions = capacity_phase.insight_regions(self.topology, self.workload, self.replicas)
        for region in regions:
            for body in capacity_phase.enable_requests(self.topology):
                self.engine(region).handle("UpdateContributorInsights", body)
        return regions

    def capacity(self, insights: list[str]) -> dict[str, Any]:
        """results.json `capacity`: each replica's capacity document (what GET /control/capacity answers)."""
        found = {}
        for region in self.replicas:
            if self.up(region):
                document = capacity_metrics.capacity_document(self.engine(region))
                found[region] = capacity_phase.capacity_entry(document, region in insights)
        return found

    def final_states(self) -> dict[str, dict[str, dict]]:
        """Every replica's items, read with consistent Scans (MRSC: strong Scans, through the request path)."""
        if not self.strong:
            return {
                name: {spec.name: scan_items(self.cluster.regions[name].engine, spec.name, wait=self._wait)
                       for spec in self.topology.tables}
                for name in self.replicas
            }  # fmt: skip
        return {name: {spec.name: self._strong_scan(name, spec.name) for spec in self.topology.tables}
                for name in self.replicas}  # fmt: skip

    def _wait(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass (everything scheduled meanwhile runs)."""
        woke: list[bool] = []
        self.scheduler.call_later(seconds, woke.append, True)
        while not woke and self.scheduler.step():
            pass

    def _strong_scan(self, region: str, table: str) -> dict[str, dict]:
        names = self.cluster.members[region].engine.table(table).key.names
        items: dict[str, dict] = {}
        request: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        backoff = iter(FINAL_READ_BACKOFF_S)
        while True:
            answer: list[Any] = []
            self.clients._send(region, "Scan", request, lambda *args, into=answer: into.append(args))
            while not answer and self.scheduler.step():
                pass
            if answer and answer[0][0] != "ok" and answer[0][3] in THROTTLES:
                delay = next(backoff, None)
                if delay is not None:  # a replica in capacity debt: back off and read the page again
                    self._wait(delay)
                    continue
            if not answer or answer[0][0] != "ok":
                why = answer[0][3] if answer else "no answer"
                raise RunAborted(f"reading the final state of {table} in {region} failed: {why}")
            last = add_scan_page(items, answer[0][1], names)
            if not last:
                return dict(sorted(items.items()))
            request = {**request, "ExclusiveStartKey": last}


class _Target(SimTarget):
    """SimTarget, telling the clients when a paused region resumes (their requests held meanwhile go in)."""

    def __init__(self, cluster: Any) -> None:
        super().__init__(cluster)
        self._waiting: dict[str, list[Callable[[], None]]] = {}

    def is_paused(self, region: str) -> bool:
        return region in self._paused

    def on_resume(self, region: str, callback: Callable[[], None]) -> None:
        self._waiting.setdefault(region, []).append(callback)

    def process(self, region: str, action: str) -> None:
        super().process(region, action)
        if action == "resume":
            self._release(region)

    def heal_all(self) -> None:
        paused = sorted(self._paused)
        super().heal_all()
        for region in paused:
            self._release(region)

    def _release(self, region: str) -> None:
        for callback in self._waiting.pop(region, []):
            self.cluster.scheduler.call_soon(callback)


# ------------------------------------------------------------------------------------------------- phases


def _load_and_faults(sim: _SimRun, schedule: Schedule | None, chaos_log: list[str]) -> tuple[float, float]:
    """Warm-up and measured load with the chaos schedule from the start of the measured period, then its final
    heal; (measure from, measure to) in virtual seconds."""
    workload = sim.workload
    start = sim.clock.monotonic() + LOAD_START_S
    measure_from = start + workload.warmup_s
    stop = measure_from + workload.duration_s
    sim.clients.start_probes()
    sim.clients.start(start, measure_from, stop)
    sim.scheduler.run_until(measure_from)
    if schedule is not None:
        controller = Controller(sim.target, sim.history, log=chaos_log.append)
        try:
            controller.run(schedule, quiet=False)
        except TargetError as error:  # a fault this simulated topology cannot take
            raise RunAborted(f"the simulator cannot run this schedule: {error}") from None
    sim.scheduler.run_until(stop)
    sim.clients.stop_probes()
    # Every request answered and every probe round over, as the process run's load phase awaits them.
    while sim.clients.busy():
        if not sim.scheduler.step():
            break
    return measure_from, stop


def _quiesce(sim: _SimRun, schedule: Schedule | None) -> tuple[float | None, list[dict[str, Any]]]:
    """Until two consecutive polls find every lane drained (bounded by quiesce_timeout_s); the convergence times;
    then the schedule's quiet period."""
    began = sim.clock.monotonic()
    timeout = sim.workload.quiesce_timeout_s
    streak = 0
    waited: float | None = None
    while sim.clock.monotonic() - began < timeout:
        streak = streak + 1 if sim.drained() else 0
        if streak >= 2:
            waited = sim.clock.monotonic() - began
            break
        sim.scheduler.run_for(STATUS_POLL_S)
    drained = sim.clock.monotonic()
    convergence = [{"after": "end of load", "ms": None if waited is None else round(waited * 1000.0, 1)}]
    heals = [op for op in sim.history.faults() if op.f == "heal" and (op.value or {}).get("phase") == "final"]
    if heals and waited is not None:
        convergence.append({"after": "final heal", "ms": round((drained - heals[-1].mono) * 1000.0, 1)})
    if schedule is not None and schedule.quiet_s > 0:
        sim.scheduler.run_for(schedule.quiet_s)
    return waited, convergence


def _final_reads(sim: _SimRun) -> FinalReads:
    statuses = sim.statuses()
    decisions = {name: sim.decisions[name].to_dict(name)["decisions"] if name in sim.decisions else []
                 for name in sim.replicas}  # fmt: skip
    return FinalReads(statuses, decisions, sim.final_states())


# ------------------------------------------------------------------------------------------------ entry point


def run_simulated(
    topology: Topology | Path,
    workload: Workload | None,
    chaos: Schedule | Path | None,
    seed: int,
    duration_s: float | None = None,
    out_dir: Path | None = None,
    *,
    hooks: PlantedBugs | None = None,
    topology_path: Path | None = None,
    make_plots: bool = True,
) -> SimulatedRun:
    """Run one experiment on the simulator, in virtual time, and judge it.

    `topology`: a loaded topology (experiment/topology.py `load_topology`), or the path of a topology file (what
    to hand a worker process: a loaded Topology does not pickle, its mappings being read-only proxies; the path
    then also names the topology in the replay command); `workload`: the workload to run (`parse_workload`, or
    `load_experiment` for both), or None for the topology's own; `chaos`: a loaded `Schedule`, the path of a chaos file
    (loaded for this topology with `seed`, as `--chaos` is), or None; `seed`: fixes the workload, the network's
    draws and the chaos nemesis; `duration_s`: overrides the workload's measured duration (None: the workload's;
    the load always runs until the schedule's final heal); `out_dir`: where the artifacts go (results.json,
    history.jsonl, report.md, plots...), or None to write nothing; `hooks`: planted bugs, for tests
    (`PlantedBugs`); `topology_path`: the file the topology came from, for the replay command.

    Raises RunAborted when the run cannot be made (a schedule this topology cannot take, a fault the simulator
    cannot apply). Every argument but a loaded Topology pickles, and so does the result; no process, thread or
    event loop is started.
    """
    if isinstance(topology, Path):
        topology_path = topology_path or topology
        topology, own = load_experiment(topology)
        workload = workload if workload is not None else own
    elif workload is None:
        if topology.workload is None:
            raise RunAborted(f"topology {topology.name}: workload: is required to run an experiment")
        workload = parse_workload(topology.workload, [region.name for region in topology.replicas])
    if duration_s is not None:
        workload = workload.with_overrides(duration_s=duration_s)
    chaos_path = chaos if isinstance(chaos, Path) else None
    schedule = load_chaos(chaos, topology, seed) if isinstance(chaos, Path) else chaos
    if schedule is not None and schedule.end_s > workload.duration_s:
        workload = workload.with_overrides(duration_s=schedule.end_s)  # load runs until the final heal
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    experiment = Experiment(topology, workload, seed, chaos_path, schedule, out_dir or Path("."), STARTED_AT)
    # The collector's simulation settings (sim/collector.py) for the checks and results too: they allocate as the
    # simulation does, beside the run's whole state (stores, history, samples) kept alive for them.
    with simulation_collector():
        sim = _SimRun(topology, workload, seed, hooks)
        insights = sim.enable_contributor_insights()
        chaos_log: list[str] = []
        measure_from, measure_to = _load_and_faults(sim, schedule, chaos_log)
        waited, convergence = _quiesce(sim, schedule)
        final = _final_reads(sim)
        capacity = sim.capacity(insights)
        run = RunContext(experiment, Progress(), None, sim.replicas, sim.clock, sim.history)  # type: ignore[arg-type]
        run.load, run.measure_from, run.measure_to = sim.load, measure_from, measure_to
        run.waited, run.convergence = waited, convergence
        run.insights_enabled, run.capacity = insights, capacity
        checks = _check(run, final)
        if out_dir is not None:
            (out_dir / "chaos.log").write_text("".join(line + "\n" for line in chaos_log))
            lost = _write_artifacts(run, final, checks)
        else:
            lost = ledger.build_ledger(sim.history, final.decisions, measure_from)
        results = _results(run, final, checks, lost)
    results["simulated"] = True
    results["virtual_time"] = {
        "end_s": round(sim.clock.monotonic(), 6),
        "events": sim.scheduler.events_run,
        "epoch": DEFAULT_EPOCH,
    }
    replay = replay_command(topology_path or Path(f"{topology.name}.yaml"), chaos_path, seed, duration_s)
    results["replay"] = replay
    if out_dir is not None:
        from .report import write_report

        write_report(out_dir, results, topology, make_plots=make_plots, ledger=lost)
    return SimulatedRun(
        results=results,
        verdicts={check["name"]: verdict_of(check) for check in results["checks"]},
        first_violation=_first_violation(results["checks"]),
        exit_code=exit_status(results["checks"]),
        replay=replay,
        out_dir=out_dir,
    )


def _first_violation(checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    for check in checks:
        if verdict_of(check) == "invalid":
            findings = check.get("findings") or []
            first = findings[0] if findings else {}
            return {"check": check["name"], "detail": check.get("detail"), **first}
    return None


def replay_command(topology_path: Path, chaos_path: Path | None, seed: int, duration_s: float | None) -> str:
    parts = ["globaltables", "run", str(topology_path), "--simulated", "--seed", str(seed)]
    if chaos_path is not None:
        parts += ["--chaos", str(chaos_path)]
    if duration_s is not None:
        parts += ["--duration", f"{duration_s:g}"]
    return " ".join(parts)


def run_simulated_file(
    topology_path: Path,
    chaos_path: Path | None,
    seed: int,
    out_dir: Path | None,
    duration_s: float | None,
    *,
    make_plots: bool = True,
) -> RunOutcome:
    """`run_simulated` on a topology file, as `runner.run_experiment` runs one: a RunOutcome, never raising for a
    run that could not be made (exit status 2 with the reason instead)."""
    from ..topology.load import TopologyError

    try:
        topology, workload = load_experiment(topology_path)
    except (TopologyError, RunAborted) as error:
        return RunOutcome(EXIT_INCOMPLETE, None, reason=str(error))
    out = out_dir if out_dir is not None else Path("results") / f"{topology.name}-simulated-seed{seed}"
    try:
        outcome = run_simulated(topology, workload, chaos_path, seed, duration_s, out, topology_path=topology_path,
                                make_plots=make_plots)  # fmt: skip
    except RunAborted as error:
        return RunOutcome(EXIT_INCOMPLETE, out, reason=str(error))
    return RunOutcome(outcome.exit_code, out, outcome.results)


def run_simulated_command(
    topology_path: Path, chaos_path: Path | None, seed: int, out_dir: Path | None, duration_s: float | None
) -> int:
    """The CLI entry of `globaltables run --simulated`: run, print the verdicts, where the report is and the replay."""
    return print_outcome(run_simulated_file(topology_path, chaos_path, seed, out_dir, duration_s))


__all__ = [
    "PlantedBugs",
    "SimulatedRun",
    "replay_command",
    "run_simulated",
    "run_simulated_command",
    "run_simulated_file",
]
