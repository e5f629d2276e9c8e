"""Chaos schedules (`chaos/*.yaml`): timed steps and/or a seeded random nemesis, validated before anything starts.

    name: partition-and-heal
    quiet: 3s                 # after the final heal, before checkers read anything (default 2s)
    duration: 20s             # optional: the run lasts at least this long before the final heal
    steps:
      - {at: 2s, do: partition, between: [us-east-1, eu-west-1], for: 5s}
      - {at: 9s, do: latency, between: [us-east-1, ap-southeast-1], latency: 200ms, jitter: 20ms, for: 4s}
    nemesis:                  # optional: random faults, one at a time, reproducible from the seed
      seed: 42
      kinds: [partition, isolate, latency, loss, skew, crash]
      every: 3s               # gap between one fault's end and the next one's start: U(0, 2 * every)
      for: [1s, 4s]           # each fault's duration: uniform in this range
      from: 1s
      until: 30s

`do:` verbs and their fields are chaos.faults' (the CLI's verbs). Regions may be named by role or position
(`replica[0]`, `region[2]`, `witness`, `replicas`, `all`, `others`: chaos.region_refs), so a schedule fits any
topology; a step naming several regions that way becomes one fault per region or pair. Every error names the file and the step, e.g.
`chaos/x.yaml: steps[2] (at 5s, do: partition): between[1]: unknown region 'eu-west-9'`, and the whole file is read
before failing. Overlapping contradictory faults (two of the same link fault on one link, two of the same clock
fault on one region, process faults on one region) are refused; partitions compose (their grudges are unioned).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..runtime.specs import Choice, Field, Integer, ListOf, check_members, render
from ..runtime.yaml_documents import load_yaml, one_line
from .faults import (
    LINK_VERBS,
    PARTITION_VERBS,
    Duration,
    Fault,
    FaultError,
    build,
    parse_duration,
    resolve_tables,
    table_problems,
)
from .region_refs import expand_step

NEMESIS_KINDS = ("partition", "isolate", "split", "ring", "latency", "loss", "duplicate", "reorder", "stall",
                 "skew", "drift", "strobe", "crash", "pause")  # fmt: skip
DEFAULT_QUIET_S = 2.0
TOP_LEVEL: dict[str, Field] = {
    "name": Field(),
    "description": Field(),
    "quiet": Duration(default=DEFAULT_QUIET_S),
    "duration": Duration(default=0.0),
    "steps": ListOf(Field(), default=[], expected="a list of steps"),  # each step: chaos.faults' verbs and fields
    "nemesis": Field(),
}
NEMESIS: dict[str, Field] = {
    "seed": Integer(),  # required unless the run gives a seed
    "kinds": ListOf(Choice(NEMESIS_KINDS), non_empty=True, required=True, expected="a non-empty list of fault kinds"),
    "every": Duration(default=3.0),
    "for": ListOf(Duration(), length=2, default=[1.0, 3.0], expected="[shortest, longest]"),
    "from": Duration(default=0.0),
    "until": Duration(default=30.0),
}


class ScheduleError(ValueError):
    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)


@dataclasses.dataclass(frozen=True)
class Schedule:
    name: str
    faults: tuple[Fault, ...]
    quiet_s: float = DEFAULT_QUIET_S
    duration_s: float = 0.0
    seed: int | None = None
    source: str = "<schedule>"

    @property
    def end_s(self) -> float:
        ends = [fault.end if fault.end is not None else fault.at for fault in self.faults]
        return max([self.duration_s, *ends])


def load_schedule(
    path: str | Path, regions: Sequence[str], witnesses: Sequence[str] = (), seed: int | None = None
) -> Schedule:
    path = Path(path)
    try:
        document = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ScheduleError([f"{path}: cannot read the file: {error}"]) from None
    except yaml.YAMLError as error:
        raise ScheduleError([f"{path}: invalid YAML: {one_line(error)}"]) from None
    return parse_schedule(document, regions, witnesses, source=str(path), seed=seed)


def parse_schedule(
    document: Any,
    regions: Sequence[str],
    witnesses: Sequence[str] = (),
    *,
    source: str = "<schedule>",
    seed: int | None = None,
) -> Schedule:
    if not isinstance(document, dict):
        raise ScheduleError([f"{source}: expected a mapping with steps and/or nemesis"])
    top, problems = check_members(document, TOP_LEVEL, noun="field")
    errors = [f"{source}: {line}" for line in render(problems)]
    quiet = DEFAULT_QUIET_S if top.get("quiet") is None else top["quiet"]
    total = 0.0 if top.get("duration") is None else top["duration"]
    faults: list[tuple[str, Fault]] = []
    steps = top.get("steps") or []
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if isinstance(step, dict):
            where += f" (at {step.get('at', '?')}, do: {step.get('do', '?')})"
        try:
            if not isinstance(step, dict):
                raise FaultError("expected a mapping with at, do and the fault's fields")
            fields = dict(step)
            at = parse_duration(fields.pop("at", 0), "at")
            verb = fields.pop("do", None)
            length = parse_duration(fields.pop("for"), "for") if "for" in fields else None
            if length is not None and length <= 0:
                raise FaultError(f"for: must be positive, got {step['for']!r}")
            for concrete in expand_step(fields, regions, witnesses):
                faults.append((where, build(verb, concrete, regions, witnesses=witnesses, at=at, duration=length)))
        except FaultError as error:
            errors.append(f"{source}: {where}: {error}")
    nemesis = document.get("nemesis")
    used_seed = None
    if nemesis is not None:
        try:
            generated, used_seed = expand_nemesis(nemesis, regions, seed)
            faults.extend((f"nemesis fault {i} (at {f.at:.3f}s, do: {f.verb})", f) for i, f in enumerate(generated))
        except FaultError as error:
            errors.append(f"{source}: nemesis: {error}")
    errors.extend(f"{source}: {problem}" for problem in contradictions(faults))
    if errors:
        raise ScheduleError(errors)
    name = document.get("name") or Path(source).stem
    ordered = tuple(fault for _, fault in sorted(faults, key=lambda entry: entry[1].at))
    return Schedule(str(name), ordered, quiet, total, used_seed, source)


def contradictions(faults: Sequence[tuple[str, Fault]]) -> list[str]:
    """Pairs of faults holding the same resource at the same time; a fault without `for` holds it until the next
    heal step (or the end of the run)."""
    heals = sorted(fault.at for _, fault in faults if fault.verb == "heal")

    def end(fault: Fault) -> float:
        if fault.end is not None:
            return fault.end
        later = [at for at in heals if at > fault.at]
        return later[0] if later else float("inf")

    problems = []
    for i, (where_a, a) in enumerate(faults):
        for where_b, b in faults[i + 1 :]:
            shared = set(a.resources()) & set(b.resources())
            if shared and a.at < end(b) and b.at < end(a):
                problems.append(f"{where_b}: contradicts {where_a}: both hold {' '.join(min(shared))} at once")
    return problems


def expand_nemesis(spec: Any, regions: Sequence[str], seed: int | None = None) -> tuple[list[Fault], int]:
    """The nemesis's faults, one at a time, drawn from `random.Random(seed)` (an override seed wins)."""
    if not isinstance(spec, dict):
        raise FaultError(f"expected a mapping with {', '.join(NEMESIS)}")
    parsed, problems = check_members(spec, NEMESIS, noun="field")
    if seed is not None:  # the run's seed wins over the file's, whatever that is
        problems = [problem for problem in problems if problem[0] != "seed"]
    elif "seed" not in spec:
        problems.append(("seed", "required (or give the run a seed)"))
    if not problems:
        seed = seed if seed is not None else parsed["seed"]
        every, (shortest, longest), start, until = (parsed[name] for name in ("every", "for", "from", "until"))
        if not 0 < shortest <= longest:
            problems.append(("for", f"expected 0 < shortest <= longest, got {spec['for']!r}"))
        elif until <= start:
            problems.append(("until", "must come after from"))
    if problems:
        raise FaultError("; ".join(render(problems)))
    kinds = parsed["kinds"]
    rng = random.Random(seed)
    names = sorted(regions)
    faults: list[Fault] = []
    at = start + rng.uniform(0, 2 * every)
    while True:
        length = round(rng.uniform(shortest, longest), 3)
        if at + length > until:
            break
        kind = rng.choice(kinds)
        a, b = rng.sample(names, 2)
        fields: dict[str, Any] = {}
        if kind in ("partition", *LINK_VERBS):
            fields["between"] = [a, b]
        elif kind == "split":
            cut = rng.randrange(1, len(names))
            shuffled = rng.sample(names, len(names))
            fields["sides"] = [shuffled[:cut], shuffled[cut:]]
        elif kind not in PARTITION_VERBS or kind == "isolate":
            fields["region"] = a
        if kind == "latency":
            fields.update(latency=f"{rng.choice([50, 100, 200, 400])}ms", jitter=f"{rng.choice([0, 10, 50])}ms",
                          distribution=rng.choice(["uniform", "normal", "exponential", "pareto"]))  # fmt: skip
        elif kind == "loss":
            fields.update(rate=rng.choice([0.1, 0.2, 0.5]), burst=rng.choice([1, 3]))
        elif kind in ("duplicate", "reorder"):
            fields["rate"] = rng.choice([0.1, 0.3])
        elif kind == "skew":
            fields["offset"] = f"{rng.choice([-2000, -500, 500, 2000])}ms"
        elif kind == "drift":
            fields["ppm"] = rng.choice([-5000, 5000, 50000])
        elif kind == "strobe":
            fields.update(delta=f"{rng.choice([200, 1000])}ms", period="100ms")
        faults.append(build(kind, fields, regions, at=round(at, 3), duration=length))
        at = at + length + rng.uniform(0, 2 * every)
    return faults, seed


def fit_tables(schedule: Schedule, table_names: Sequence[str], mode: str = "mrec") -> tuple[Schedule, list[str]]:
    """The schedule with its table references (`tables[0]`) resolved against a topology's declared tables, and the
    problems left (a table it does not declare; a table pause on an MRSC topology), one line each naming the file."""
    faults = resolve_tables(schedule.faults, table_names)
    return dataclasses.replace(schedule, faults=faults), table_problems(faults, table_names, schedule.source, mode)
