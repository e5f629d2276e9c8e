"""Runs a chaos `Schedule` against a `FaultTarget`, recording every fault's start and end in the History.

Theory of operation: the schedule becomes a timeline of start/end events. At each event the controller updates
its set of active faults, composes them (grudges unioned, link changes merged per directed link, clock changes per
region) and pushes to the target only what changed. Regions that are crashed or paused get nothing pushed (a paused
process would not answer); when they come back, their whole composed state is pushed again (a restarted region
starts from the topology's settings). A run always ends with a final heal — every region restarted or resumed,
every link and clock back to the topology's — and a quiet period before anything is checked.
History records: `f` = the verb, `value` = {"phase": "start" | "end", ...the fault's parameters}, `region` = the
fault's first region.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .faults import CAPACITY_VERBS, CLOCK_VERBS, LINK_VERBS, PARTITION_VERBS, TABLE_VERBS, Fault
from .grudges import merge
from .history import History
from .schedule import Schedule
from .target import FaultTarget

START, END = "start", "end"


class Controller:
    def __init__(self, target: FaultTarget, history: History | None = None, log: Callable[[str], None] | None = None):
        self.target = target
        self.history = history
        self.log = log or (lambda line: None)
        self.active: list[Fault] = []
        self.down: set[str] = set()  # crashed or paused: unreachable for pushes
        self.crashed: set[str] = set()
        self.paused: set[str] = set()
        self._pushed_grudges: dict[str, frozenset[str]] = {}
        self._pushed_links: dict[tuple[str, str], dict[str, Any]] = {}
        self._pushed_clocks: dict[str, tuple] = {}
        self._pushed_holds: dict[str, dict[str, list[str]]] = {}

    # -- recording --------------------------------------------------------------------------------------------

    def record(self, fault: Fault, phase: str) -> None:
        value = {"phase": phase, **fault.describe()}
        self.log(f"{self.target.now():8.3f}s {phase:5} {fault.verb} {value}")
        if self.history is not None:
            self.history.fault(fault.verb, value, fault.regions[0] if fault.regions else None)

    # -- composition ------------------------------------------------------------------------------------------

    def desired(self) -> tuple[dict, dict, dict]:
        regions = self.target.regions
        grudges = merge(*(f.grudge(regions) for f in self.active if f.verb in PARTITION_VERBS))
        links: dict[tuple[str, str], dict[str, Any]] = {}
        clocks: dict[str, dict[str, Any]] = {}
        for fault in self.active:
            if fault.verb in LINK_VERBS:
                for pair, changes in fault.link_changes().items():
                    links.setdefault(pair, {}).update(changes)
            elif fault.verb in CLOCK_VERBS:
                clock = clocks.setdefault(fault.regions[0], {"offset_ms": None, "bump_ms": 0.0, "drift_ppm": 0.0,
                                                              "strobe": None})  # fmt: skip
                params = fault.params
                if "offset_ms" in params:
                    clock["offset_ms"] = params["offset_ms"]
                clock["bump_ms"] += params.get("bump_ms", 0.0)
                clock["drift_ppm"] = params.get("drift_ppm", clock["drift_ppm"])
                clock["strobe"] = params.get("strobe", clock["strobe"])
        return grudges, links, clocks

    def desired_holds(self) -> dict[str, dict[str, list[str]]]:
        """{region: {table: sorted peers}} from every active pause-replication (holds of one table add up)."""
        holds: dict[str, dict[str, set[str]]] = {}
        for fault in self.active:
            if fault.verb in TABLE_VERBS:
                for region, tables in fault.held_replication(self.target.regions).items():
                    for table, peers in tables.items():
                        holds.setdefault(region, {}).setdefault(table, set()).update(peers)
        return {region: {t: sorted(p) for t, p in sorted(tables.items())} for region, tables in holds.items()}

    def push(self, force: set[str] = frozenset()) -> None:
        """Send the target what changed since the last push (everything for the regions in `force`)."""
        grudges, links, clocks = self.desired()
        target = self.target
        for region in target.regions:
            if region in self.down:
                continue
            wanted = grudges.get(region, frozenset())
            if region in force or self._pushed_grudges.get(region, frozenset()) != wanted:
                target.set_grudges(region, wanted)
                self._pushed_grudges[region] = wanted
            clock = clocks.get(region)
            key = None if clock is None else tuple(sorted((k, repr(v)) for k, v in clock.items()))
            if region in force or self._pushed_clocks.get(region) != key:
                if clock is None:
                    target.set_clock(region, None, 0.0, 0.0, None)
                else:
                    target.set_clock(region, clock["offset_ms"], clock["bump_ms"], clock["drift_ppm"], clock["strobe"])
                self._pushed_clocks[region] = key
        holds = self.desired_holds()
        for region in target.regions:
            if region in self.down:
                continue
            wanted_holds = holds.get(region, {})
            if region in force or self._pushed_holds.get(region, {}) != wanted_holds:
                target.set_held_replication(region, wanted_holds)
                self._pushed_holds[region] = wanted_holds
        for pair in sorted(set(links) | set(self._pushed_links)):
            if pair[0] in self.down:
                continue
            wanted = links.get(pair)
            if pair[0] in force or self._pushed_links.get(pair) != wanted:
                target.set_link(pair[0], pair[1], wanted)
                if wanted is None:
                    self._pushed_links.pop(pair, None)
                else:
                    self._pushed_links[pair] = wanted

    # -- events -----------------------------------------------------------------------------------------------

    def start(self, fault: Fault) -> None:
        self.record(fault, START)
        verb, region = fault.verb, (fault.regions[0] if fault.regions else None)
        if verb == "heal":
            self.heal_all()
        elif verb in ("crash", "pause"):
            self.target.process(region, verb)
            self.down.add(region)
            (self.crashed if verb == "crash" else self.paused).add(region)
            self.active.append(fault)
        elif verb in ("restart", "resume"):
            self.bring_back(region, verb)
        elif verb in CAPACITY_VERBS:
            # An instant: write capacity is global, so every replica takes it unless the step names one region.
            params = fault.params
            for name in fault.regions or self.target.regions:
                if name not in self.down:
                    self.target.update_table(name, params["table"], params.get("read_units"), params.get("write_units"))
        else:
            self.active.append(fault)
            self.push()

    def end(self, fault: Fault) -> None:
        if fault not in self.active:
            return  # ended early by a heal
        self.active.remove(fault)
        self.record(fault, END)
        if fault.verb == "crash":
            self.bring_back(fault.regions[0], "restart")
        elif fault.verb == "pause":
            self.bring_back(fault.regions[0], "resume")
        else:
            self.push()

    def bring_back(self, region: str, action: str) -> None:
        if action == "restart" and region in self.crashed:
            self.target.process(region, "restart")
            self.crashed.discard(region)
        elif action == "resume" and region in self.paused:
            self.target.process(region, "resume")
            self.paused.discard(region)
        else:
            return
        self.down.discard(region)
        self.active = [f for f in self.active if not (f.verb in ("crash", "pause") and f.regions[0] == region)]
        self.push(force={region})

    def heal_all(self) -> None:
        """Every fault ends: processes back, then every link and clock to the topology's settings."""
        for fault in list(self.active):
            self.active.remove(fault)
            self.record(fault, END)
        for region in sorted(self.crashed):
            self.bring_back(region, "restart")
        for region in sorted(self.paused):
            self.bring_back(region, "resume")
        self.target.heal_all()
        self._pushed_grudges.clear()
        self._pushed_links.clear()
        self._pushed_clocks.clear()
        self._pushed_holds.clear()

    # -- running ----------------------------------------------------------------------------------------------

    def run(self, schedule: Schedule, *, quiet: bool = True) -> float:
        """Apply the schedule from the target's current time; returns the time of the final heal."""
        base = self.target.now()
        events: list[tuple[float, int, int, str, Fault]] = []
        for index, fault in enumerate(schedule.faults):
            events.append((fault.at, 1, index, START, fault))
            if fault.end is not None:
                events.append((fault.end, 0, index, END, fault))  # ends before starts at the same instant
        for when, _, _, phase, fault in sorted(events, key=lambda e: e[:3]):
            self.target.wait_until(base + when)
            (self.start if phase == START else self.end)(fault)
        self.target.wait_until(base + schedule.end_s)
        healed_at = self.final_heal()
        if quiet:
            self.target.wait_until(healed_at + schedule.quiet_s)
        return healed_at

    def final_heal(self) -> float:
        self.heal_all()
        now = self.target.now()
        if self.history is not None:
            self.history.fault("heal", {"phase": "final"})
        self.log(f"{now:8.3f}s final heal")
        return now
