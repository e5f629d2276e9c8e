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
plus process actions (crash/restart, pause/resume), which are events rather than state, and `update-table`, an
instant: UpdateTable of a table's capacity in the regions that hold it (every replica unless one is named, as write
capacity is global), with `read_capacity` and/or `write_capacity` units: a provisioned table's ProvisionedThroughput,
an on-demand table's OnDemandThroughput maxima (capacity_change.py; docs/capacity.md).

Durations are `500ms`, `5s`, `1.5s`, `2m` or a bare number of seconds; offsets may carry a sign (`+500ms`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..runtime.link import DISTRIBUTIONS
from ..runtime.specs import (
    Bool,
    Choice,
    Field,
    Integer,
    Invalid,
    ListOf,
    Number,
    Probability,
    Str,
    Value,
    check_members,
    render,
)  # fmt: skip
from . import grudges as G

DURATION = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*(ms|s|m)?\s*")
UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}

LINK_VERBS = ("latency", "loss", "duplicate", "reorder", "bandwidth", "stall")
CLOCK_VERBS = ("skew", "drift", "bump", "strobe")
PARTITION_VERBS = ("partition", "isolate", "split", "bridge", "ring", "witness-loss")
PROCESS_VERBS = ("crash", "pause")  # with a duration: restart / resume at the end
EVENT_VERBS = ("restart", "resume", "heal")
TABLE_VERBS = ("pause-replication",)
CAPACITY_VERBS = ("update-table",)  # an instant, like EVENT_VERBS, on a table like TABLE_VERBS
VERBS = PARTITION_VERBS + LINK_VERBS + CLOCK_VERBS + PROCESS_VERBS + EVENT_VERBS + TABLE_VERBS + CAPACITY_VERBS


class FaultError(ValueError):
    """A fault that cannot be built; the message names the field."""


def seconds(value: Any, *, signed: bool = False) -> float:
    """Seconds from `5s` / `200ms` / `2m` / a number; negative only when `signed`; Invalid otherwise."""
    if isinstance(value, bool):
        raise Invalid(f"expected a duration such as 5s or 200ms, got {value!r}")
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str) and (match := DURATION.fullmatch(value)):
        result = float(match.group(1)) * UNITS[match.group(2)]
    else:
        raise Invalid(f"expected a duration such as 5s or 200ms, got {value!r}")
    if not math.isfinite(result):
        raise Invalid(f"must be finite, got {value!r}")
    if result < 0 and not signed:
        raise Invalid(f"must not be negative, got {value!r}")
    return result


def parse_duration(value: Any, what: str, *, signed: bool = False) -> float:
    """`seconds`, with a FaultError naming `what`."""
    try:
        return seconds(value, signed=signed)
    except Invalid as error:
        raise FaultError(f"{what}: {error}") from None


def Duration(*, signed: bool = False, positive: bool = False, scale: float = 1.0, **kw: Any) -> Field:
    """A duration field, parsed to seconds times `scale` (1000: milliseconds)."""

    def parse(value: Any) -> float:
        result = seconds(value, signed=signed)
        if positive and not result > 0:
            raise Invalid("must be positive")
        return result * scale

    return Value(parse, **kw)


# The fields a verb takes besides where it acts, each with the parameter it becomes (a dotted name nests).
PARAMETERS: dict[str, dict[str, tuple[str, Field]]] = {
    "latency": {
        "latency": ("latency_ms", Duration(scale=1000, required=True)),
        "jitter": ("jitter_ms", Duration(scale=1000)),
        "distribution": ("distribution", Choice(DISTRIBUTIONS, kind="string")),
    },
    "loss": {
        "rate": ("loss", Probability(parse=float, required=True)),
        "burst": ("loss_burst", Number(minimum=1, default=1.0, parse=float)),
    },
    "duplicate": {"rate": ("duplicate", Probability(parse=float, required=True))},
    "reorder": {
        "rate": ("reorder", Probability(parse=float, required=True)),
        "delay": ("reorder_ms", Duration(scale=1000, default=seconds("50ms") * 1000)),
    },
    "bandwidth": {"kbps": ("bandwidth_kbps", Number(positive=True, parse=float, required=True))},
    "skew": {"offset": ("offset_ms", Duration(signed=True, scale=1000, required=True))},
    "drift": {"ppm": ("drift_ppm", Number(parse=float, required=True))},
    "bump": {"delta": ("bump_ms", Duration(signed=True, scale=1000, required=True))},
    "strobe": {
        "delta": ("strobe.delta_ms", Duration(signed=True, scale=1000, required=True)),
        "period": ("strobe.period_ms", Duration(positive=True, scale=1000, required=True)),
    },
    "update-table": {
        "read_capacity": ("read_units", Integer(positive=True)),
        "write_capacity": ("write_units", Integer(positive=True)),
    },
}

# Where each verb acts: two regions `between`, one `region`, two `sides`, a `table` (optionally one region).
BETWEEN_VERBS = ("partition", *LINK_VERBS)
REGION_VERBS = ("isolate", "witness-loss", *CLOCK_VERBS, *PROCESS_VERBS, "restart", "resume")
SIDES_VERBS = ("split", "bridge")


def placement(verb: str, regions: Sequence[str]) -> dict[str, Field]:
    """The fields naming where `verb` acts, checked against the topology's `regions`."""

    def known(name: Any) -> str:
        if name not in regions:
            raise Invalid(f"unknown region {name!r}; the topology has {', '.join(regions)}")
        return name

    region = Value(known, required=True)
    if verb in BETWEEN_VERBS:
        return {"between": ListOf(region, length=2, required=True, expected="two region names")}
    if verb in REGION_VERBS:
        return {"region": region}
    if verb in SIDES_VERBS:
        sides = ListOf(ListOf(region), length=2, required=True, expected="two lists of regions")
        return {"sides": sides, **({"region": region} if verb == "bridge" else {})}
    if verb in TABLE_VERBS or verb in CAPACITY_VERBS:
        return {"table": Str(non_empty=True, required=True, expected="a table name"),
                "region": Value(known)}  # fmt: skip
    return {}


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
    """A validated Fault from schedule/CLI fields (`between`, `region`, `sides`, `one_way` and the verb's own:
    PARAMETERS); FaultError naming every bad field otherwise. `regions`: the topology's region names."""
    if verb not in VERBS:
        raise FaultError(f"do: unknown fault {verb!r}; use one of {', '.join(VERBS)}")
    own = PARAMETERS.get(verb, {})
    spec = {"one_way": Bool(default=False), **placement(verb, regions), **{name: f for name, (_, f) in own.items()}}
    parsed, problems = check_members(fields, spec, noun="field")
    problems = [(path, f"required for {verb}" if message == "required" else message) for path, message in problems]
    if not problems:
        problems = _cross_field_problems(verb, parsed, witnesses, duration)
    if problems:
        raise FaultError("; ".join(render(problems)))
    members: tuple[str, ...] = tuple(parsed.get("between") or ([parsed["region"]] if "region" in parsed else []))
    sides = tuple(tuple(side) for side in parsed.get("sides", ()))
    params: dict[str, Any] = {"table": parsed["table"]} if verb in TABLE_VERBS or verb in CAPACITY_VERBS else {}
    for name, (parameter, _) in own.items():
        if name in parsed:
            outer, _, inner = parameter.partition(".")
            if inner:
                params.setdefault(outer, {})[inner] = parsed[name]
            else:
                params[parameter] = parsed[name]
    return Fault(verb, members, params, at, duration, parsed["one_way"], sides)


def _cross_field_problems(verb: str, parsed: dict[str, Any], witnesses: Sequence[str],
                          duration: float | None) -> list[tuple[str, str]]:  # fmt: skip
    """The rules joining fields, once each field is valid on its own."""
    problems = []
    between, region, sides = parsed.get("between"), parsed.get("region"), parsed.get("sides")
    if between and between[0] == between[1]:
        problems.append(("between", f"a region cannot be partitioned from itself ({between[0]})"))
    if verb == "witness-loss" and witnesses and region not in witnesses:
        problems.append(("region", f"{region} is not a witness"))
    if sides is not None and (set(sides[0]) & set(sides[1]) or not sides[0] or not sides[1]):
        problems.append(("sides", "two non-empty sides with no region in both"))
    elif sides is not None and verb == "bridge" and (region in sides[0] or region in sides[1]):
        problems.append(("region", f"the bridge {region} must not be on either side"))
    if verb == "loss" and parsed["burst"] > 1 and parsed["rate"] >= 1:
        problems.append(("burst", "a loss rate of 1 cannot be bursty"))
    if parsed["one_way"] and verb not in BETWEEN_VERBS:
        problems.append(("one_way", f"only partitions and link faults have a direction, not {verb}"))
    if (verb in EVENT_VERBS or verb in CAPACITY_VERBS) and duration is not None:
        problems.append(("for", f"{verb} is an instant; it takes no duration"))
    if verb in CAPACITY_VERBS and "read_capacity" not in parsed and "write_capacity" not in parsed:
        problems.append(("write_capacity", "give read_capacity, write_capacity or both"))
    return problems


TABLE_REFERENCE = re.compile(r"tables\[(-?\d+)\]")


def resolve_tables(faults: Sequence[Fault], table_names: Sequence[str]) -> tuple[Fault, ...]:
    """The faults with table references (`table: tables[0]`, the topology's first declared table; negative counts
    from the end) replaced by the table's name, so a shipped schedule fits any topology. A reference past the end
    is left as it is, for table_problems to name."""
    resolved = []
    for fault in faults:
        on_table = fault.verb in TABLE_VERBS or fault.verb in CAPACITY_VERBS
        match = TABLE_REFERENCE.fullmatch(str(fault.params.get("table", ""))) if on_table else None
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
        if fault.verb not in TABLE_VERBS and fault.verb not in CAPACITY_VERBS:
            continue
        where = f"{source}: {fault.verb} at {fault.at:g}s"
        if mode == "mrsc" and fault.verb in CAPACITY_VERBS:
            problems.append(
                f"{where}: the topology is mode mrsc: a schedule does not change a strong table's capacity "
                "(docs/capacity.md, decision 21); change it with UpdateTable in each replica"
            )
        elif mode == "mrsc":
            problems.append(
                f"{where}: the topology is mode mrsc, whose tables replicate synchronously and have no asynchronous "
                "replication to pause; cut a member off with partition or stall instead"
            )
        elif fault.params.get("table") not in table_names:
            problems.append(f"{where}: table: no table {fault.params['table']!r} in the topology; "
                            f"declared tables: {declared}")  # fmt: skip
    return problems
