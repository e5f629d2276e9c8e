"""MREC under `conflict_clock: hlc`: a write that causally follows another wins, whatever the clocks say.

W2 causally follows W1 (same table and key, both acknowledged) when W2's region had seen W1 before W2 was invoked:
W1 was acknowledged by that same region before W2's invocation, or a read at that region returned W1's value and
completed before W2's invocation. Then, by LWW, W2's version must be greater than W1's and no replica may end
holding W1's value. Each violation names the key, both writes (and the read that proves causality, if any).
A delete of an item already deleted writes nothing (it answers with the tombstone's version): it orders nothing.
Under `conflict_clock: wall` a region with a slow clock violates this: that is the demonstration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..history import OK, History, Op, key_id
from .lww import VALUE_ATTRIBUTE, canonical_value, parse_version
from .result import CheckResult, Finding, ReplicaStates

NAME = "causal"


def check_causal(
    history: History,
    final_states: ReplicaStates,
    *,
    version_key: Callable[[Any], Any] = parse_version,
    value_of: Callable[[dict[str, Any]], Any] = VALUE_ATTRIBUTE,
) -> CheckResult:
    writes: dict[tuple[str, str], list[tuple[Op, Op]]] = {}
    reads: dict[tuple[str, str], list[tuple[Op, Op]]] = {}
    for invocation, completion in history.pairs():
        if completion is None or completion.type != OK:
            continue
        key = (invocation.table, key_id(invocation.key))
        if invocation.is_write and completion.version is not None:
            writes.setdefault(key, []).append((invocation, completion))
        elif invocation.f == "get":
            reads.setdefault(key, []).append((invocation, completion))
    findings: list[Finding] = []
    pairs = 0
    for (table, key), key_writes in sorted(writes.items()):
        key_pairs, violations = _causal_pairs(key_writes, reads.get((table, key), []), version_key)
        pairs += key_pairs
        for first_index, second_index, proof in violations:
            first_inv, first = key_writes[first_index]
            second_inv, second = key_writes[second_index]
            value = canonical_value(first_inv.value)
            observed = {region: tables.get(table, {}).get(key) for region, tables in sorted(final_states.items())}
            holding = [
                region for region, item in observed.items()
                if item is not None and first_inv.value is not None and canonical_value(value_of(item)) == value
            ]  # fmt: skip
            findings.append(
                Finding(
                    table,
                    key,
                    "causally-later-write-lost",
                    f"write #{second.index} ({second.version}) at {second.region} followed write #{first.index} "
                    f"({first.version}) causally but got a smaller version"
                    + (f"; {', '.join(holding)} still hold the earlier value" if holding else ""),
                    holding,
                    observed,
                    [first_inv, first, *proof, second_inv, second],
                )
            )
    detail = (
        f"{len(findings)} of {pairs} causally ordered write pairs out of order"
        if findings else f"{pairs} causally ordered write pairs all in version order"
    )  # fmt: skip
    return CheckResult(NAME, not findings, detail, findings)


def _causal_pairs(
    key_writes: list[tuple[Op, Op]], key_reads: list[tuple[Op, Op]], version_key: Callable[[Any], Any]
) -> tuple[int, list[tuple[int, int, list[Op]]]]:
    """One key's (causally ordered pairs, violations as (first, second, proof) in (first, second) order), the writes
    named by their place in `key_writes`.

    One sweep over the key's events in history order keeps, per region, the writes that region has seen: its own
    acknowledged ones, and every write whose value a read there returned. A write's invocation then counts its
    region's set at once and looks for violations only when some write seen there has a version not below its own
    (the region's highest seen version says so), so the work is linear in the events plus the violations, not
    quadratic in the writes of a hot key."""
    versions = [version_key(completion.version) for _, completion in key_writes]
    values = [canonical_value(invocation.value) for invocation, _ in key_writes]
    writers_of: dict[Any, list[int]] = {}
    for index, value in enumerate(values):
        if value is not None:
            writers_of.setdefault(value, []).append(index)
    events: list[tuple[int, int, Any]] = []  # (history index, kind, payload); indices are distinct
    for index, (invocation, completion) in enumerate(key_writes):
        events.append((completion.index, _ACKNOWLEDGED, index))
        events.append((invocation.index, _INVOKED, index))
    for order, (_, read) in enumerate(key_reads):
        events.append((read.index, _READ, order))
    events.sort(key=lambda event: event[0])
    seen: dict[str | None, set[int]] = {}
    highest: dict[str | None, Any] = {}
    version_counts: dict[str | None, dict[str, int]] = {}
    first_read: dict[tuple[str | None, Any], int] = {}  # (region, value) -> the earliest in `key_reads` order

    def see(region: str | None, index: int) -> None:
        members = seen.setdefault(region, set())
        if index in members:
            return
        members.add(index)
        if region not in highest or versions[index] > highest[region]:
            highest[region] = versions[index]
        counts = version_counts.setdefault(region, {})
        raw = key_writes[index][1].version
        counts[raw] = counts.get(raw, 0) + 1

    pairs = 0
    violations: list[tuple[int, int, list[Op]]] = []
    for _, kind, payload in events:
        if kind == _ACKNOWLEDGED:
            see(key_writes[payload][1].region, payload)
        elif kind == _READ:
            read = key_reads[payload][1]
            value = canonical_value(read.value)
            slot = (read.region, value)
            if slot not in first_read or payload < first_read[slot]:
                first_read[slot] = payload
            for index in writers_of.get(value, ()):
                see(read.region, index)
        else:
            second = payload
            second_inv, second_done = key_writes[second]
            region = second_inv.region
            members = seen.get(region)
            if not members:
                continue
            count = len(members) - (second in members)
            # A delete that found the item already gone wrote nothing: its answer names the tombstone it found
            # (engine/operations/read_modify_write.py). It orders nothing after the write of that tombstone.
            noop_delete = second_inv.is_delete
            if noop_delete:  # (a delete has no value, so no read put it among the writes its region has seen)
                count -= version_counts[region].get(second_done.version, 0)
            pairs += count
            if versions[second] > highest[region]:
                continue
            for first in sorted(members):
                if first == second or versions[second] > versions[first]:
                    continue
                first_done = key_writes[first][1]
                if noop_delete and second_done.version == first_done.version:
                    continue
                if first_done.region == region and first_done.index < second_inv.index:
                    proof: list[Op] = []
                else:
                    proof = [key_reads[first_read[(region, values[first])]][1]]
                violations.append((first, second, proof))
    violations.sort(key=lambda violation: (violation[0], violation[1]))
    return pairs, violations


_ACKNOWLEDGED, _READ, _INVOKED = 0, 1, 2
