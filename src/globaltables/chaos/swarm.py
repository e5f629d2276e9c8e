"""Swarm testing's nemesis: each seed draws its own fault mix and writes it out as an ordinary chaos schedule.

A fixed nemesis (chaos/schedule.py's `nemesis:`) draws every fault from the same kinds with the same intensities,
so a sweep over seeds explores one mix many times. Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012) draws,
per seed, *which* fault kinds are on at all, how hard each one hits (a level per kind: mild, medium or harsh), how
densely faults come (the mean gap), how long each lasts and how many may overlap (lanes). A bug that only one
combination exposes (a skewed clock during a crash, with no partition healing it early) is then found by the seeds
that draw that combination, where an all-kinds-at-once nemesis would keep masking it with the others.

The draw is a chaos *schedule document* of explicit `steps:` (regions by name, durations as `1.25s`), validated by
`parse_schedule` like any file in `chaos/`, so the run's directory holds a schedule a person can read, edit and rerun
with `globaltables run T --chaos FILE --seed N`. The mix itself (`SwarmMix.to_dict`) goes into the results, so a
replay needs only the file. Randomness: `Rng(seed).fork("swarm")` only; no other stream is touched, so the run's
workload and network draws are the same with or without the swarm.

`fault_step` is the inverse of `chaos.faults.build`: a Fault as the step that builds it again, so a schedule shrunk
fault by fault (experiment/shrink.py) is written back as a file in the same format.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from ..runtime.rng import Rng
from .faults import BETWEEN_VERBS, PARAMETERS, SIDES_VERBS, TABLE_VERBS, Fault, build
from .schedule import DEFAULT_QUIET_S, Schedule, parse_schedule

# The kinds a swarm may draw. `ring` needs five regions to mean what Jepsen's majorities ring means; pause-replication
# exists only for MREC tables (chaos.faults.table_problems); bandwidth caps are left to schedules written by hand.
KINDS = ("partition", "isolate", "split", "ring", "latency", "loss", "duplicate", "reorder", "stall",
         "skew", "drift", "strobe", "crash", "pause", "pause-replication")  # fmt: skip
LEVELS = ("mild", "medium", "harsh")
MAX_LANES = 2  # faults of up to this many overlapping sequences (contradicting pairs are skipped, not composed)

# Per kind and level: the choices a fault's parameters are drawn from.
INTENSITY: dict[str, dict[str, dict[str, Sequence[Any]]]] = {
    "latency": {
        "mild": {"latency": ["20ms", "50ms"], "jitter": ["0ms", "5ms"]},
        "medium": {"latency": ["100ms", "200ms"], "jitter": ["10ms", "50ms"]},
        "harsh": {"latency": ["500ms", "1000ms"], "jitter": ["100ms", "300ms"]},
    },
    "loss": {
        "mild": {"rate": [0.02, 0.05], "burst": [1]},
        "medium": {"rate": [0.1, 0.2], "burst": [1, 3]},
        "harsh": {"rate": [0.5, 0.8], "burst": [1, 4]},
    },
    "duplicate": {"mild": {"rate": [0.02, 0.05]}, "medium": {"rate": [0.1, 0.2]}, "harsh": {"rate": [0.5]}},
    "reorder": {
        "mild": {"rate": [0.02, 0.05], "delay": ["20ms"]},
        "medium": {"rate": [0.1, 0.2], "delay": ["50ms"]},
        "harsh": {"rate": [0.5], "delay": ["200ms"]},
    },
    "skew": {
        "mild": {"offset": ["-50ms", "50ms"]},
        "medium": {"offset": ["-500ms", "500ms"]},
        "harsh": {"offset": ["-3000ms", "3000ms"]},
    },
    "drift": {"mild": {"ppm": [-1000, 1000]}, "medium": {"ppm": [-10000, 10000]}, "harsh": {"ppm": [-100000, 100000]}},
    "strobe": {
        "mild": {"delta": ["100ms"], "period": ["200ms"]},
        "medium": {"delta": ["500ms"], "period": ["100ms"]},
        "harsh": {"delta": ["2000ms"], "period": ["50ms"]},
    },
    "partition": {"mild": {"one_way": [True]}, "medium": {"one_way": [True, False]}, "harsh": {"one_way": [False]}},
}


@dataclasses.dataclass(frozen=True)
class SwarmMix:
    """One seed's draw: what the results record so a reader knows which faults the seed was exposed to."""

    seed: int
    kinds: tuple[str, ...]
    levels: Mapping[str, str]
    gap_s: float  # mean gap between one fault's end and the next's start, per lane
    for_s: tuple[float, float]  # each fault's duration is uniform in this range
    lanes: int

    def to_dict(self) -> dict[str, Any]:
        return {"seed": self.seed, "kinds": list(self.kinds), "levels": dict(self.levels), "gap_s": self.gap_s,
                "for_s": list(self.for_s), "lanes": self.lanes}  # fmt: skip

    def describe(self) -> str:
        kinds = ", ".join(f"{kind} ({self.levels[kind]})" if kind in self.levels else kind for kind in self.kinds)
        return (f"swarm nemesis of seed {self.seed}: {kinds}; a fault every ~{self.gap_s:g}s per lane, "
                f"each {self.for_s[0]:g}-{self.for_s[1]:g}s, {self.lanes} lane{'s' if self.lanes > 1 else ''}")  # fmt: skip


def available_kinds(regions: Sequence[str], mode: str = "mrec", tables: Sequence[str] = ()) -> tuple[str, ...]:
    """The kinds that mean something on this topology."""
    kinds = []
    for kind in KINDS:
        if kind == "ring" and len(regions) < 5:
            continue
        if kind == "split" and len(regions) < 3:
            continue
        if kind == "pause-replication" and (mode != "mrec" or not tables):
            continue
        kinds.append(kind)
    return tuple(kinds)


def draw_mix(seed: int, kinds: Sequence[str], duration_s: float) -> SwarmMix:
    """A random non-empty subset of `kinds`, a level for each kind that has levels, and the timings."""
    rng = Rng(seed).fork("swarm")
    chosen = tuple(kind for kind in kinds if rng.random() < 0.5) or (rng.choice(list(kinds)),)
    levels = {kind: rng.choice(LEVELS) for kind in chosen if kind in INTENSITY}
    gap = round(duration_s * rng.choice([0.05, 0.1, 0.2, 0.4]), 3)
    shortest = round(duration_s * rng.choice([0.02, 0.05, 0.1]), 3)
    longest = round(max(shortest, duration_s * rng.choice([0.1, 0.2, 0.4])), 3)
    return SwarmMix(seed, chosen, levels, gap, (shortest, longest), rng.randint(1, MAX_LANES))


def draw_schedule(
    seed: int,
    regions: Sequence[str],
    *,
    duration_s: float,
    witnesses: Sequence[str] = (),
    mode: str = "mrec",
    tables: Sequence[str] = (),
    quiet_s: float = DEFAULT_QUIET_S,
) -> tuple[dict[str, Any], SwarmMix]:
    """(the schedule document, the mix) of seed `seed`: every fault starts and ends within `duration_s`, so the
    run lasts no longer than it would without chaos. The document passes `parse_schedule` for this topology."""
    mix = draw_mix(seed, available_kinds(regions, mode, tables), duration_s)
    rng = Rng(seed).fork("swarm/faults")
    names = sorted(regions)
    replicas = [name for name in names if name not in set(witnesses)] or names
    accepted: list[tuple[dict[str, Any], Fault]] = []
    for _lane in range(mix.lanes):
        at = rng.uniform(0, 2 * mix.gap_s)
        while True:
            length = round(rng.uniform(*mix.for_s), 3)
            if at + length > duration_s:
                break
            kind = rng.choice(list(mix.kinds))
            step = {"at": f"{round(at, 3):g}s", "do": kind,
                    **_placement(kind, rng, names, replicas, tables), **_intensity(kind, mix.levels.get(kind), rng),
                    "for": f"{length:g}s"}  # fmt: skip
            fault = _built(step, names, witnesses)
            if not any(_contradict(fault, other) for _, other in accepted):
                accepted.append((step, fault))
            at = at + length + rng.uniform(0, 2 * mix.gap_s)
    if not accepted:  # every lane's first gap ran past the end: one fault at least, or the seed tests nothing
        length = min(mix.for_s[0], duration_s / 2)
        at = round(rng.uniform(0, duration_s - length), 3)
        kind = rng.choice(list(mix.kinds))
        step = {"at": f"{at:g}s", "do": kind, **_placement(kind, rng, names, replicas, tables),
                **_intensity(kind, mix.levels.get(kind), rng), "for": f"{length:g}s"}  # fmt: skip
        accepted.append((step, _built(step, names, witnesses)))
    steps = [step for step, fault in sorted(accepted, key=lambda entry: entry[1].at)]
    document = {"name": f"swarm-seed-{seed}", "description": mix.describe(), "quiet": f"{quiet_s:g}s",
                "steps": steps}  # fmt: skip
    return document, mix


def schedule_of(document: Mapping[str, Any], regions: Sequence[str], witnesses: Sequence[str] = (),
                source: str = "<swarm>") -> Schedule:  # fmt: skip
    """The document as a validated Schedule (ScheduleError if it is not one)."""
    return parse_schedule(dict(document), regions, witnesses, source=source)


def dump_schedule(document: Mapping[str, Any], header: str = "") -> str:
    """The document as chaos YAML, one step a line (flow style), as the files in chaos/ are written."""
    top = {key: value for key, value in document.items() if key != "steps"}
    text = "".join(f"# {line}\n" for line in header.splitlines())
    text += yaml.safe_dump(top, sort_keys=False, width=1000)
    steps = list(document.get("steps", []))
    if steps:
        text += "steps:\n" + "".join(
            "  - " + yaml.safe_dump(step, default_flow_style=True, sort_keys=False, width=1000).strip() + "\n"
            for step in steps
        )
    else:
        text += "steps: []\n"
    return text


def fault_step(fault: Fault) -> dict[str, Any]:
    """The schedule step that `build`s this fault again (chaos.faults.build's inverse)."""
    step: dict[str, Any] = {"at": f"{fault.at:g}s", "do": fault.verb}
    if fault.verb in TABLE_VERBS:
        step["table"] = fault.params["table"]
        if fault.regions:
            step["region"] = fault.regions[0]
    elif fault.verb in SIDES_VERBS:
        step["sides"] = [list(side) for side in fault.sides]
        if fault.verb == "bridge":
            step["region"] = fault.regions[0]
    elif fault.verb in BETWEEN_VERBS:
        step["between"] = list(fault.regions)
    elif fault.regions and fault.verb != "ring":
        step["region"] = fault.regions[0]
    if fault.one_way:
        step["one_way"] = True
    for name, (parameter, field) in PARAMETERS.get(fault.verb, {}).items():
        outer, _, inner = parameter.partition(".")
        value = fault.params.get(outer)
        if inner and isinstance(value, Mapping):
            value = value.get(inner)
        if value is None:
            continue
        step[name] = f"{value:g}ms" if parameter.endswith("_ms") else value
    if fault.duration is not None:
        step["for"] = f"{fault.duration:g}s"
    return step


def schedule_document(schedule: Schedule, faults: Iterable[Fault] | None = None) -> dict[str, Any]:
    """A schedule (or the same schedule with only `faults`) as a document of explicit steps; a `nemesis:` section
    is written out as the faults it drew."""
    chosen = schedule.faults if faults is None else tuple(faults)
    document: dict[str, Any] = {"name": schedule.name, "quiet": f"{schedule.quiet_s:g}s"}
    if schedule.duration_s:
        document["duration"] = f"{schedule.duration_s:g}s"
    document["steps"] = [fault_step(fault) for fault in chosen]
    return document


# ----------------------------------------------------------------------------------------------------- helpers


def _placement(kind: str, rng: Rng, names: Sequence[str], replicas: Sequence[str],
               tables: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    if kind in BETWEEN_VERBS:
        return {"between": rng.sample(list(names), 2)}
    if kind == "split":
        shuffled = rng.sample(list(names), len(names))
        cut = rng.randrange(1, len(names))
        return {"sides": [sorted(shuffled[:cut]), sorted(shuffled[cut:])]}
    if kind == "ring":
        return {}
    if kind == "pause-replication":
        step: dict[str, Any] = {"table": rng.choice(list(tables))}
        if rng.random() < 0.5:
            step["region"] = rng.choice(list(replicas))
        return step
    return {"region": rng.choice(list(names) if kind == "isolate" else list(replicas))}


def _intensity(kind: str, level: str | None, rng: Rng) -> dict[str, Any]:
    if level is None:
        return {}
    fields = {name: rng.choice(list(choices)) for name, choices in INTENSITY[kind][level].items()}
    if fields.get("one_way") is False:
        del fields["one_way"]
    if kind == "latency":
        fields["distribution"] = rng.choice(["uniform", "normal", "exponential", "pareto"])
    return fields


def _built(step: Mapping[str, Any], regions: Sequence[str], witnesses: Sequence[str]) -> Fault:
    from .faults import parse_duration

    fields = {key: value for key, value in step.items() if key not in ("at", "do", "for")}
    return build(step["do"], fields, regions, witnesses=witnesses, at=parse_duration(step["at"], "at"),
                 duration=parse_duration(step["for"], "for"))  # fmt: skip


def _contradict(a: Fault, b: Fault) -> bool:
    """Two faults holding one resource at once (chaos.schedule.contradictions' rule, for two timed faults)."""
    shared = set(a.resources()) & set(b.resources())
    return bool(shared) and a.at < (b.end or float("inf")) and b.at < (a.end or float("inf"))
