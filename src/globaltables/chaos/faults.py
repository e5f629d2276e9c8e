"""The fault vocabulary, as data: one `Fault` per schedule step or CLI command, for either target.

A `Fault` names a verb (`do:` in chaos YAML, the CLI's verb), the regions it acts on and its parameters; it starts
at `at` seconds into a run and ends after `duration` seconds (None: at the next heal or the run's final heal). What
a fault does is expressed as its *effect* on three kinds of state, which the controller composes over all active
faults and pushes to a `FaultTarget`:
- grudges: `{receiver: senders}` (chaos.grudges; partitions of every shape),
- link changes: `{(source, target): {field: value}}` over the topology's link (latency_ms, jitter_ms, distribution,
  loss, loss_burst, duplicate, reorder, reorder_ms, bandwidth_kbps, stalled),
- clock changes: `{region: {field: value}}` (offset_ms, drift_ppm, bump_ms, strobe),
- held replication: `{region: {table: peers}}`, the peers a region does not ship a table's records to
  (`pause-replication`, shaped after AWS FIS's aws:dynamodb:global-table-pause-replication: a table, a duration,
  and optionally the one replica whose replication in and out is paused; without it, the table's replication
  between every pair of replicas. FIS says replication may go on for up to 5 minutes after the action begins;
  here the hold starts at once, so a run can measure the pause itself),
plus process actions (crash/restart, pause/resume), which are events rather than state.

Durations are `500ms`, `5s`, `1.5s`, `2m` or a bare number of seconds; offsets may carry a sign (`+500ms`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import grudges as G

DURATION = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*(ms|s|m)?\s*")
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}

LINK_VERBS = ("latency", "loss", "duplicate", "reorder", "bandwidth", "stall")
CLOCK_VERBS = ("skew", "drift", "bump", "strobe")
PARTITION_VERBS = ("partition", "isolate", "split", "bridge", "ring", "witness-loss")
PROCESS_VERBS = ("crash", "pause")  # with a duration: restart / resume at the end
EVENT_VERBS = ("restart", "resume", "heal")
TABLE_VERBS = ("pause-replication",)
VERBS = PARTITION_VERBS + LINK_VERBS + CLOCK_VERBS + PROCESS_VERBS + EVENT_VERBS + TABLE_VERBS
DISTRIBUTIONS = ("constant", "uniform", "normal", "exponential", "pareto")


class FaultError(ValueError):
    """A fault that cannot be built; the message names the field."""


def parse_duration(value: Any, what: str, *, signed: bool = False) -> float:
    """Seconds from `5s` / `200ms` / `2m` / a number; negative only when `signed`."""
    if isinstance(value, bool):
        raise FaultError(f"{what}: expected a duration such as 5s or 200ms, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and (match := DURATION.fullmatch(value)):
        seconds = float(match.group(1)) * UNITS[match.group(2)]
    else:
        raise FaultError(f"{what}: expected a duration such as 5s or 200ms, got {value!r}")
    if not math.isfinite(seconds):
        raise FaultError(f"{what}: must be finite, got {value!r}")
    if seconds < 0 and not signed:
        raise FaultError(f"{what}: must not be negative, got {value!r}")
    return seconds


def parse_probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise FaultError(f"{what}: expected a probability between 0 and 1, got {value!r}")
    return float(value)


def parse_number(value: Any, what: str, *, minimum: float | None = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FaultError(f"{what}: expected a number, got {value!r}")
    if minimum is not None and value < minimum:
        raise FaultError(f"{what}: must be at least {minimum:g}, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Fault:
    verb: str
    regions: tuple[str, ...] = ()  # between [a, b] / the region / everyone named by the grudge
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    at: float = 0.0
    duration: float | None = None
    one_way: bool = False
    sides: tuple[tuple[str, ...], ...] = ()  # split / bridge

    @property
    def end(self) -> float | None:
        return None if self.duration is None else self.at + self.duration

    def describe(self) -> dict[str, Any]:
        """The record that goes into the History (`value` of the nemesis op)."""
        record: dict[str, Any] = {"regions": list(self.regions)}
        if self.sides:
            record["sides"] = [list(side) for side in self.sides]
        if self.one_way:
            record["one_way"] = True
        record.update(self.params)  # pause-replication: `table`; regions [] means every replica
        if self.duration is not None:
            record["for_s"] = self.duration
        return record

    # -- effects ---------------------------------------------------------------------------------------------

    def directions(self) -> list[tuple[str, str]]:
        a, b = self.regions
        return [(a, b)] if self.one_way else [(a, b), (b, a)]

    def grudge(self, all_regions: Sequence[str]) -> G.Grudge:
        verb = self.verb
        if verb == "partition":
            a, b = self.regions
            return G.one_way(a, b) if self.one_way else G.two_way(a, b)
        if verb == "isolate":
            return G.isolate(self.regions[0], all_regions)
        if verb == "split":
            return G.split(self.sides)
        if verb == "bridge":
            return G.bridge(self.regions[0], *self.sides)
        if verb == "ring":
            return G.majorities_ring(all_regions)
        if verb == "witness-loss":
            return G.witness_only(self.regions[0], all_regions)
        return {}

    def link_changes(self) -> dict[tuple[str, str], dict[str, Any]]:
        if self.verb not in LINK_VERBS:
            return {}
        changes = dict(self.params)
        if self.verb == "stall":
            changes = {"stalled": True}
        return {pair: dict(changes) for pair in self.directions()}

    def clock_changes(self) -> dict[str, dict[str, Any]]:
        if self.verb not in CLOCK_VERBS:
            return {}
        return {self.regions[0]: dict(self.params)}

    def held_replication(self, all_regions: Sequence[str]) -> dict[str, dict[str, set[str]]]:
        """pause-replication: {region: {table: peers it does not ship the table to}}. With a region, that replica's
        replication both ways; without, every link of the table."""
        if self.verb not in TABLE_VERBS:
            return {}
        table = self.params["table"]
        paused = set(self.regions) if self.regions else set(all_regions)
        held: dict[str, dict[str, set[str]]] = {}
        for source in all_regions:
            peers = {peer for peer in all_regions if peer != source and (source in paused or peer in paused)}
            if peers:
                held[source] = {table: peers}
        return held

    def resources(self) -> list[tuple[str, ...]]:
        """What this fault holds exclusively while active: two overlapping faults holding one are contradictory
        (two latencies on one link, two skews of one clock, a crash during a pause of the same region)."""
        if self.verb in LINK_VERBS:
            return [("link", self.verb, a, b) for a, b in self.directions()]
        if self.verb in CLOCK_VERBS:
            return [("clock", self.verb, self.regions[0])]
        if self.verb in PROCESS_VERBS:
            return [("process", self.regions[0])]
        if self.verb in TABLE_VERBS:
            return [("table", self.verb, self.params["table"], *self.regions)]
        return []


def build(
    verb: Any,
    fields: Mapping[str, Any],
    regions: Sequence[str],
    *,
    witnesses: Sequence[str] = (),
    at: float = 0.0,
    duration: float | None = None,
) -> Fault:
    """A validated Fault from schedule/CLI fields (`between`, `region`, `sides`, `one_way` and the verb's own);
    FaultError naming the field otherwise. `regions`: the topology's region names."""
    if verb not in VERBS:
        raise FaultError(f"do: unknown fault {verb!r}; use one of {', '.join(VERBS)}")
    known = set(regions)
    fields = dict(fields)
    used: set[str] = set()

    def region(name: Any, what: str) -> str:
        if name not in known:
            raise FaultError(f"{what}: unknown region {name!r}; the topology has {', '.join(regions)}")
        return name

    def take(name: str, default: Any = ...) -> Any:
        used.add(name)
        if name not in fields:
            if default is ...:
                raise FaultError(f"{name}: required for {verb}")
            return default
        return fields[name]

    one_way = take("one_way", False)
    if not isinstance(one_way, bool):
        raise FaultError(f"one_way: expected true or false, got {one_way!r}")
    members: tuple[str, ...] = ()
    sides: tuple[tuple[str, ...], ...] = ()
    params: dict[str, Any] = {}
    if verb in ("partition", *LINK_VERBS):
        between = take("between")
        if not isinstance(between, (list, tuple)) or len(between) != 2:
            raise FaultError(f"between: expected two region names, got {between!r}")
        members = (region(between[0], "between[0]"), region(between[1], "between[1]"))
        if members[0] == members[1]:
            raise FaultError(f"between: a region cannot be partitioned from itself ({members[0]})")
    elif verb in ("isolate", "witness-loss", *CLOCK_VERBS, *PROCESS_VERBS, "restart", "resume"):
        members = (region(take("region"), "region"),)
        if verb == "witness-loss" and witnesses and members[0] not in witnesses:
            raise FaultError(f"region: {members[0]} is not a witness")
    elif verb in ("split", "bridge"):
        raw = take("sides")
        if not isinstance(raw, (list, tuple)) or len(raw) != 2 or not all(isinstance(s, (list, tuple)) for s in raw):
            raise FaultError(f"sides: expected two lists of regions, got {raw!r}")
        sides = tuple(tuple(region(name, f"sides[{i}]") for name in side) for i, side in enumerate(raw))
        if set(sides[0]) & set(sides[1]) or not sides[0] or not sides[1]:
            raise FaultError("sides: two non-empty sides with no region in both")
        if verb == "bridge":
            members = (region(take("region"), "region"),)
            if members[0] in sides[0] or members[0] in sides[1]:
                raise FaultError(f"region: the bridge {members[0]} must not be on either side")
    elif verb in TABLE_VERBS:
        table = take("table")
        if not isinstance(table, str) or not table:
            raise FaultError(f"table: expected a table name, got {table!r}")
        params["table"] = table
        if "region" in fields:
            members = (region(take("region"), "region"),)
    if verb == "latency":
        params["latency_ms"] = parse_duration(take("latency"), "latency") * 1000
        if "jitter" in fields:
            params["jitter_ms"] = parse_duration(take("jitter"), "jitter") * 1000
        if "distribution" in fields:
            distribution = take("distribution")
            if distribution not in DISTRIBUTIONS:
                raise FaultError(f"distribution: {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
            params["distribution"] = distribution
    elif verb == "loss":
        params["loss"] = parse_probability(take("rate"), "rate")
        burst = take("burst", 1)
        params["loss_burst"] = parse_number(burst, "burst", minimum=1)
        if params["loss_burst"] > 1 and params["loss"] >= 1:
            raise FaultError("burst: a loss rate of 1 cannot be bursty")
    elif verb == "duplicate":
        params["duplicate"] = parse_probability(take("rate"), "rate")
    elif verb == "reorder":
        params["reorder"] = parse_probability(take("rate"), "rate")
        params["reorder_ms"] = parse_duration(take("delay", "50ms"), "delay") * 1000
    elif verb == "bandwidth":
        params["bandwidth_kbps"] = parse_number(take("kbps"), "kbps")
        if not params["bandwidth_kbps"] > 0:
            raise FaultError("kbps: must be positive")
    elif verb == "skew":
        params["offset_ms"] = parse_duration(take("offset"), "offset", signed=True) * 1000
    elif verb == "drift":
        params["drift_ppm"] = parse_number(take("ppm"), "ppm", minimum=None)
    elif verb == "bump":
        params["bump_ms"] = parse_duration(take("delta"), "delta", signed=True) * 1000
    elif verb == "strobe":
        delta = parse_duration(take("delta"), "delta", signed=True) * 1000
        period = parse_duration(take("period"), "period") * 1000
        if not period > 0:
            raise FaultError("period: must be positive")
        params["strobe"] = {"delta_ms": delta, "period_ms": period}
    if one_way and verb not in ("partition", *LINK_VERBS):
        raise FaultError(f"one_way: only partitions and link faults have a direction, not {verb}")
    if verb in EVENT_VERBS and duration is not None:
        raise FaultError(f"for: {verb} is an instant; it takes no duration")
    unknown = sorted(set(fields) - used)
    if unknown:
        raise FaultError(f"unknown field(s) {', '.join(unknown)} for {verb}")
    return Fault(verb, members, params, at, duration, one_way, sides)


TABLE_REFERENCE = re.compile(r"tables\[(-?\d+)\]")


def resolve_tables(faults: Sequence[Fault], table_names: Sequence[str]) -> tuple[Fault, ...]:
    """The faults with table references (`table: tables[0]`, the topology's first declared table; negative counts
    from the end) replaced by the table's name, so a shipped schedule fits any topology. A reference past the end
    is left as it is, for table_problems to name."""
    resolved = []
    for fault in faults:
        match = TABLE_REFERENCE.fullmatch(str(fault.params.get("table", ""))) if fault.verb in TABLE_VERBS else None
        if match and -len(table_names) <= int(match.group(1)) < len(table_names):
            fault = dataclasses.replace(fault, params={**fault.params, "table": table_names[int(match.group(1))]})
        resolved.append(fault)
    return tuple(resolved)


def table_problems(faults: Sequence[Fault], table_names: Sequence[str], source: str, mode: str = "mrec") -> list[str]:
    """Table faults (pause-replication) the topology cannot take, one line each, naming the file: a table it does
    not declare, or any on an MRSC topology. pause-replication holds asynchronous replication, which a strong table
    does not have: its writes reach another member before they are acknowledged, so a member cut off from the others
    is a partition (or a stall) of its links, not a paused table (docs/mrsc.md)."""
    declared = ", ".join(table_names) or "none"
    problems = []
    for fault in faults:
        if fault.verb not in TABLE_VERBS:
            continue
        where = f"{source}: {fault.verb} at {fault.at:g}s"
        if mode == "mrsc":
            problems.append(
                f"{where}: the topology is mode mrsc, whose tables replicate synchronously and have no asynchronous "
                "replication to pause; cut a member off with partition or stall instead"
            )
        elif fault.params.get("table") not in table_names:
            problems.append(f"{where}: table: no table {fault.params['table']!r} in the topology; "
                            f"declared tables: {declared}")  # fmt: skip
    return problems
