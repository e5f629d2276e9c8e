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
        # The reads of this key by (region, value read), in history order: the proof search of every pair below
        # looks at only the reads that could prove it (the first one before the later write's invocation).
        seen: dict[tuple[str | None, Any], list[Op]] = {}
        for _, read in reads.get((table, key), []):
            seen.setdefault((read.region, canonical_value(read.value)), []).append(read)
        versions = [version_key(second.version) for _, second in key_writes]  # parsed once per write
        for first_inv, first in key_writes:
            value = canonical_value(first_inv.value)
            first_version = version_key(first.version)
            for (second_inv, second), second_version in zip(key_writes, versions, strict=True):
                if second is first:
                    continue
                proof: list[Op] = []
                if first.region == second_inv.region and first.index < second_inv.index:
                    proof = []
                else:
                    candidates = seen.get((second_inv.region, value), ()) if value is not None else ()
                    invoked = second_inv.index
                    found = next((read for read in candidates if read.index < invoked), None)
                    if found is None:
                        continue
                    proof = [found]
                if second_inv.is_delete and second.version == first.version:
                    # A delete that found the item already gone wrote nothing: its answer names the tombstone it
                    # found (engine/operations/read_modify_write.py), here `first`'s. No later write to order.
                    continue
                pairs += 1
                if second_version > first_version:
                    continue
                observed = {region: tables.get(table, {}).get(key) for region, tables in sorted(final_states.items())}
                holding = [
                    region for region, item in observed.items()
                    if item is not None and first_inv.value is not None
                    and canonical_value(value_of(item)) == canonical_value(first_inv.value)
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
