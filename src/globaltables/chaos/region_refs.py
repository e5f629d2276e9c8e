"""Regions named by role or position in chaos schedules, so one schedule fits every topology.

A schedule step's region fields (`region`, `between`, `sides`) take, besides a region's name:
  replica[i]   the i-th replica in the topology's order (negative i counts from the end)
  region[i]    the i-th region of the topology, whatever its role
  witness      the topology's witness (an error where there is none)
  replicas     every replica
  all          every region
  others       every region the step does not name otherwise (in a `sides` list: the regions not on the other side)
A reference that names several regions expands the step into one fault per region, or per pair for `between`
(`between: [replica[0], others]` is one link fault per other region; a pair is never a region with itself). A
reference the topology cannot satisfy is an error naming the field, e.g. `between[1]: replica[2]: the topology has
2 replicas (us-east-1, us-east-2)`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .faults import FaultError

POSITIONAL = re.compile(r"^(replica|region)\[(-?\d+)\]$")
GROUPS = ("witness", "replicas", "all", "others")


def _resolve(ref: Any, what: str, regions: Sequence[str], witnesses: Sequence[str], named: set[str]) -> list[str]:
    """The regions one reference names (a name the topology does not have is left for the fault's own check)."""
    if not isinstance(ref, str):
        return [ref]
    replicas = [name for name in regions if name not in witnesses]
    match = POSITIONAL.match(ref)
    if match:
        pool = replicas if match.group(1) == "replica" else list(regions)
        index = int(match.group(2))
        if not -len(pool) <= index < len(pool):
            kind = "replicas" if match.group(1) == "replica" else "regions"
            raise FaultError(f"{what}: {ref}: the topology has {len(pool)} {kind} ({', '.join(pool)})")
        return [pool[index]]
    if ref == "witness":
        if not witnesses:
            raise FaultError(f"{what}: witness: the topology has no witness")
        return list(witnesses)
    if ref == "replicas":
        return replicas
    if ref == "all":
        return list(regions)
    if ref == "others":
        return [name for name in regions if name not in named]
    return [ref]


def _explicit(ref: Any, regions: Sequence[str], witnesses: Sequence[str]) -> list[str]:
    if ref == "others" or not isinstance(ref, str):
        return []
    try:
        return _resolve(ref, "", regions, witnesses, set())
    except FaultError:
        return []


def expand_step(fields: Mapping[str, Any], regions: Sequence[str], witnesses: Sequence[str] = ()) -> list[dict]:
    """The step's fields once per concrete region (or pair, or pair of sides), references resolved."""
    fields = dict(fields)
    refs = []
    if isinstance(fields.get("between"), (list, tuple)):
        refs += list(fields["between"])
    if "region" in fields:
        refs.append(fields["region"])
    named = {name for ref in refs for name in _explicit(ref, regions, witnesses)}
    variants: list[dict] = [fields]
    if "region" in fields:
        names = _resolve(fields["region"], "region", regions, witnesses, named)
        variants = [{**variant, "region": name} for variant in variants for name in names]
    between = fields.get("between")
    if isinstance(between, (list, tuple)) and len(between) == 2:
        firsts = _resolve(between[0], "between[0]", regions, witnesses, named)
        seconds = _resolve(between[1], "between[1]", regions, witnesses, named)
        pairs: list[tuple[Any, Any]] = []
        for a in firsts:
            for b in seconds:
                if (len(firsts) > 1 or len(seconds) > 1) and (a == b or (b, a) in pairs and not fields.get("one_way")):
                    continue
                pairs.append((a, b))
        variants = [{**variant, "between": [a, b]} for variant in variants for a, b in pairs]
    sides = fields.get("sides")
    if isinstance(sides, (list, tuple)) and len(sides) == 2:
        variants = [{**variant, "sides": _sides(sides, regions, witnesses)} for variant in variants]
    return variants


def _sides(sides: Sequence[Any], regions: Sequence[str], witnesses: Sequence[str]) -> list[Any]:
    """Each side is a list of references or one group reference; `others` is what the other side leaves."""
    resolved: list[Any] = [None, None]
    for i, side in enumerate(sides):
        if side == "others":
            continue
        refs = [side] if isinstance(side, str) else side
        if not isinstance(refs, (list, tuple)):
            resolved[i] = side  # the fault's own check names the problem
            continue
        resolved[i] = [name for n, ref in enumerate(refs) for name in _resolve(ref, f"sides[{i}][{n}]", regions,
                                                                               witnesses, set())]  # fmt: skip
    for i, side in enumerate(sides):
        if side == "others":
            other = resolved[1 - i]
            if not isinstance(other, list):
                raise FaultError(f"sides[{i}]: others needs the other side named")
            resolved[i] = [name for name in regions if name not in other]
    return resolved


def is_reference(ref: Any) -> bool:
    return isinstance(ref, str) and (ref in GROUPS or POSITIONAL.match(ref) is not None)


__all__ = ["expand_step", "is_reference"]
