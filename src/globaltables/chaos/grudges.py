"""Partitions as grudges (Jepsen's nemesis/combined): `grudge[receiver]` = the senders it refuses to hear.

Pure functions over region names; each returns a fresh `{receiver: frozenset(senders)}`. Receivers hold the grudge,
so a one-way partition a -x-> b is `{b: {a}}`: b stops hearing a while a still hears b.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Grudge = dict[str, frozenset[str]]


def complete(components: Iterable[Iterable[str]]) -> Grudge:
    """Every region refuses every region outside its own component (a clean split)."""
    groups = [frozenset(group) for group in components]
    everyone = frozenset().union(*groups) if groups else frozenset()
    return {region: everyone - group for group in groups for region in group if everyone - group}


def one_way(source: str, target: str) -> Grudge:
    """`target` stops hearing `source`."""
    return {target: frozenset({source})}


def two_way(a: str, b: str) -> Grudge:
    return merge(one_way(a, b), one_way(b, a))


def isolate(region: str, regions: Sequence[str]) -> Grudge:
    """One region cut off from all others, both ways."""
    return complete([[region], [r for r in regions if r != region]])


def split(sides: Sequence[Sequence[str]]) -> Grudge:
    """e.g. a 2|1 split: `split([[a, b], [c]])`."""
    return complete(sides)


def bridge(middle: str, side_a: Sequence[str], side_b: Sequence[str]) -> Grudge:
    """Two sides that cannot hear each other, and a bridge region that hears and is heard by both."""
    grudge = complete([side_a, side_b])
    grudge.pop(middle, None)
    return grudge


def majorities_ring(regions: Sequence[str]) -> Grudge:
    """Every region sees a majority (itself and its ring neighbours), but no two see the same majority.
    With 3 regions every majority is everyone, so nothing is cut (as in Jepsen)."""
    ordered = sorted(regions)
    n = len(ordered)
    visible_each_side = (n // 2 + 1) // 2 if n > 3 else 1  # itself and this many neighbours each way
    grudge: Grudge = {}
    for index, region in enumerate(ordered):
        visible = {ordered[(index + step) % n] for step in range(-visible_each_side, visible_each_side + 1)}
        if len(visible) <= n // 2:  # always keep a strict majority
            visible |= {ordered[(index + n // 2) % n]}
        refused = frozenset(ordered) - visible
        if refused:
            grudge[region] = refused
    return grudge


def witness_only(witness: str, regions: Sequence[str]) -> Grudge:
    """Only the witness is cut off: replicas keep talking to each other, nobody hears the witness or it them."""
    return isolate(witness, regions)


def merge(*grudges: Grudge) -> Grudge:
    result: dict[str, frozenset[str]] = {}
    for grudge in grudges:
        for receiver, senders in grudge.items():
            result[receiver] = result.get(receiver, frozenset()) | frozenset(senders)
    return {receiver: senders for receiver, senders in sorted(result.items()) if senders}
