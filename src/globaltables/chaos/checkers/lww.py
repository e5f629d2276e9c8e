"""The MREC last-writer-wins checker: every replica holds, for every key, the LWW maximum of the writes to it.

Rules checked, per (table, key), in every region's final state:
1. If a replica holds an item, its value must come from a write in the history (values are unique per write).
2. If that write was acknowledged (ok, with a version), it must be the LWW winner: the acknowledged write with the
   greatest version. A replica holding an older acknowledged write has lost the winner ("wrong-winner"), or, when the
   winner is a delete, has brought a deleted item back ("resurrected").
3. If a replica holds no item, the winner must be a delete, or nothing was acknowledged, or a possibly-applied
   (info) delete exists that may have won. Otherwise an acknowledged write is missing ("lost-write").
4. A value from an info write (or an ok write without a version header) is accepted: it may have been applied with
   a version greater than every acknowledged one, and nothing in the history proves otherwise.
fail writes are ignored: they certainly did not apply.

Versions are opaque to the history; `version_key` turns one into something totally ordered by LWW. The default
splits `<hlc>/<region>` into the tuple (hlc, region): correct whenever the HLC's text encoding sorts like the
timestamp (fixed width). Callers holding a parser (e.g. the replication package's version type) pass it instead;
any comparable works, e.g. ((physical, logical), region).
Values: `value_of(item)` extracts a write's unique value from a stored item (default: the `value` attribute, with a
DynamoDB type descriptor such as {"S": "w-17"} unwrapped); both sides are compared through `canonical_value`, so a
history value 17 matches a stored {"N": "17"}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..history import FAIL, OK, History, Op, key_id
from .result import CheckResult, Finding, ReplicaStates

NAME = "lww"


def parse_version(version: Any) -> Any:
    if isinstance(version, str):
        hlc, slash, region = version.rpartition("/")
        return (hlc, region) if slash else (version, "")
    if isinstance(version, list):
        return tuple(version)
    return version


def canonical_value(value: Any) -> str | None:
    """A comparable form of a write's value or a stored attribute: descriptors unwrapped, JSON for non-strings."""
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1:
        ((descriptor, inner),) = value.items()
        if descriptor in ("S", "N", "B", "BOOL"):
            value = inner
    return key_id(value)


def value_attribute(name: str = "value") -> Callable[[dict[str, Any]], Any]:
    def value_of(item: dict[str, Any]) -> Any:
        return item.get(name)

    return value_of


# The default extractor: the `value` attribute of the stored item.
VALUE_ATTRIBUTE = value_attribute("value")


class _Write:
    """A write that may have applied: its record (completion, or invocation if none), status and LWW key."""

    __slots__ = ("acknowledged", "invocation", "is_delete", "op", "order", "value")

    def __init__(self, invocation: Op, completion: Op | None, version_key: Callable[[Any], Any]) -> None:
        self.invocation = invocation
        self.op = completion or invocation
        self.acknowledged = completion is not None and completion.type == OK and completion.version is not None
        self.order = version_key(completion.version) if self.acknowledged else None
        self.is_delete = invocation.is_delete
        self.value = None if self.is_delete else canonical_value(invocation.value)


def _writes_by_key(history: History, version_key: Callable[[Any], Any]) -> dict[tuple[str, str], list[_Write]]:
    writes: dict[tuple[str, str], list[_Write]] = {}
    for invocation, completion in history.pairs():
        if not invocation.is_write or (completion is not None and completion.type == FAIL):
            continue
        writes.setdefault((invocation.table, key_id(invocation.key)), []).append(
            _Write(invocation, completion, version_key)
        )
    return writes


def check_lww(
    history: History,
    final_states: ReplicaStates,
    *,
    version_key: Callable[[Any], Any] = parse_version,
    value_of: Callable[[dict[str, Any]], Any] = VALUE_ATTRIBUTE,
) -> CheckResult:
    writes = _writes_by_key(history, version_key)
    keys: set[tuple[str, str]] = set(writes)
    for tables in final_states.values():
        for table, items in tables.items():
            keys.update((table, key) for key, item in items.items() if item is not None)
    regions = sorted(final_states)
    findings: dict[tuple[str, str, str], Finding] = {}
    checked = 0

    def report(table: str, key: str, problem: str, detail: str, region: str, item: Any, ops: list[Op]) -> None:
        finding = findings.get((table, key, problem))
        if finding is None:
            finding = findings[(table, key, problem)] = Finding(table, key, problem, detail, operations=ops)
        finding.regions.append(region)
        finding.observed[region] = item

    for table, key in sorted(keys):
        key_writes = writes.get((table, key), [])
        by_value = {write.value: write for write in key_writes if write.value is not None}
        acknowledged = [write for write in key_writes if write.acknowledged]
        winner = max(acknowledged, key=lambda write: write.order) if acknowledged else None
        uncertain_delete = next((w for w in key_writes if w.is_delete and not w.acknowledged), None)
        for region in regions:
            checked += 1
            item = final_states[region].get(table, {}).get(key)
            if item is None:
                if winner is None or winner.is_delete or uncertain_delete is not None:
                    continue
                report(
                    table, key, "lost-write",
                    f"no item, but acknowledged write #{winner.op.index} (version {winner.op.version}) is the LWW winner",
                    region, None, [winner.invocation, winner.op],
                )
                continue
            observed = canonical_value(value_of(item))
            write = by_value.get(observed)
            if write is None:
                report(
                    table, key, "unknown-value",
                    f"holds value {observed!r}, which no write in the history stored",
                    region, item, [w.op for w in key_writes],
                )
                continue
            if not write.acknowledged or write is winner:
                continue
            # An acknowledged write that is not the winner: some write with a greater version replaced it.
            evidence = [write.invocation, write.op, winner.invocation, winner.op]
            if winner.is_delete:
                report(
                    table, key, "resurrected",
                    f"holds the value of write #{write.op.index} (version {write.op.version}), but delete "
                    f"#{winner.op.index} (version {winner.op.version}) came later by LWW order",
                    region, item, evidence,
                )
            else:
                report(
                    table, key, "wrong-winner",
                    f"holds the value of write #{write.op.index} (version {write.op.version}), but write "
                    f"#{winner.op.index} (version {winner.op.version}) is the LWW winner",
                    region, item, evidence,
                )
    offending = [findings[name] for name in sorted(findings)]
    total_writes = sum(len(w) for w in writes.values())
    if offending:
        detail = (
            f"{len({(f.table, f.key) for f in offending})} of {len(keys)} keys violate LWW "
            f"({total_writes} writes, {len(regions)} regions)"
        )
    else:
        detail = f"{len(keys)} keys agree with LWW in {len(regions)} regions ({total_writes} writes)"
    return CheckResult(NAME, not offending, detail, offending)
