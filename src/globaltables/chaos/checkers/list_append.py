"""A list-append checker in the spirit of Elle's (Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from
Experimental Observations", 2020): appends of unique elements to per-key lists, and reads of whole lists, make the
order of writes observable, so anomalies come with the operations that prove them.

History shape (experiment/load.py, `mix: {append: ...}`): `append` ops whose value is the one element appended
(`SET l = list_append(if_not_exists(l, :empty), :v)`), and `read` / `strong_read` ops whose ok value is the list read
(null: no item). Final replica states hold the lists in the `l` attribute (DynamoDB `L` of `S`).

Rules, per (table, key); the final list is the replicas' (they must agree; the convergence checker says so too):
1. lost-append: an acknowledged append whose element is not in the final list. Proof: the append, the next
   acknowledged version of the item that survives in the final list (by version order: the write that replaced the
   list holding the element), and any read that saw the element before it vanished.
2. incompatible-order: two reads of which neither is a prefix of the other (no single order of appends explains
   both), or a read that is not a prefix of the final list although every element it holds survived.
3. bad-read: a read holding an element no append wrote, or an element twice.
Under MRSC (`strong=True`), where every region applies one order, also:
4. stale-read: a strong read invoked after an append was acknowledged lacks it, or is shorter than a strong read
   that completed before it was invoked (prefixes must grow in real time).
5. real-time-order: an append acknowledged before another was invoked comes after it in the final list.
Appends that got no ok answer (info) may or may not be in the list: neither is an anomaly. Each finding's detail
is one sentence a person can check against the operations listed.

Under MREC (`strong=False`) the verdict judges eventual consistency with last-writer-wins, DynamoDB's contract for
that mode, as the lww checker does for register workloads. Two anomalies are what that contract allows, so they are
reported (marked `permitted`, with their proofs and counted in the detail) but do not fail the check: a lost append
whose list a later acknowledged version replaced (the writer of that version had not seen the element: the two
were concurrent, and LWW kept the later), and two reads of which neither is a prefix of the other (replicas read
before they converged). Everything else is a violation in either mode: a loss no later surviving version explains
(LWW kept a version that is not the latest), a read that is not a prefix of the final list although all its elements
survived (every version extends the list its writer read, and each element is appended once, so a read whose
elements all survive is an ancestor of the final list), and bad reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..history import OK, History, Op, key_id
from .result import CheckResult, Finding, ReplicaStates

NAME = "list-append"
READS = ("read", "strong_read")
LIST_ATTRIBUTE = "l"


def stored_list(item: dict[str, Any] | None) -> list[str] | None:
    """The elements of an item's `l` attribute (None: no item or no list)."""
    if item is None:
        return None
    raw = item.get(LIST_ATTRIBUTE)
    if not isinstance(raw, dict) or "L" not in raw:
        return None
    return [element.get("S") for element in raw["L"] if isinstance(element, dict)]


def _is_prefix(short: list, long: list) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def _where(op: Op) -> str:
    return f"#{op.index} in {op.region}"


def check_list_append(
    history: History, final_states: ReplicaStates, *, strong: bool = False, strong_reads: Iterable[str] = ("strong_read",)
) -> CheckResult:
    strong_names = set(strong_reads)
    appends: dict[tuple[str, str], list[tuple[Op, Op | None]]] = {}
    reads: dict[tuple[str, str], list[tuple[Op, Op]]] = {}
    for invocation, completion in history.pairs():
        key = (invocation.table, key_id(invocation.key))
        if invocation.f == "append":
            if completion is None or completion.type != "fail":
                appends.setdefault(key, []).append((invocation, completion))
        elif invocation.f in READS and completion is not None and completion.type == OK:
            reads.setdefault(key, []).append((invocation, completion))
    findings: list[Finding] = []
    keys = sorted(set(appends) | set(reads))
    for table, key in keys:
        findings.extend(_check_key(table, key, appends.get((table, key), []), reads.get((table, key), []),
                                   final_states, strong, strong_names))  # fmt: skip
    lost = sum(1 for f in findings if f.problem == "lost-append")
    total = sum(len(a) for a in appends.values())
    violations = [f for f in findings if not f.permitted]
    if findings:
        kinds = sorted({f.problem for f in findings})
        detail = (f"{len(findings)} anomalies on {len({(f.table, f.key) for f in findings})} of {len(keys)} keys "
                  f"({', '.join(kinds)}; {lost} of {total} appends lost)")  # fmt: skip
        if not violations:
            detail += ": all of them what eventual consistency with last-writer-wins allows"
        elif len(violations) < len(findings):
            detail += f"; {len(findings) - len(violations)} of them allowed by eventual consistency"
    else:
        detail = f"{len(keys)} keys: every read a prefix of its key's final list, no append lost ({total} appends)"
    return CheckResult(NAME, not violations, detail, violations + [f for f in findings if f.permitted])


def _final_list(table: str, key: str, final_states: ReplicaStates) -> tuple[list[str], dict[str, Any]]:
    observed = {region: stored_list(tables.get(table, {}).get(key)) for region, tables in final_states.items()}
    lists = [value for value in observed.values() if value is not None]
    return (max(lists, key=len) if lists else []), observed


def _check_key(table, key, appends, reads, final_states, strong, strong_names) -> list[Finding]:
    final, observed = _final_list(table, key, final_states)
    position = {element: index for index, element in enumerate(final)}
    by_element = {invocation.value: (invocation, completion) for invocation, completion in appends}
    found: list[Finding] = []

    def finding(problem: str, detail: str, ops: list[Op], *, allowed_eventually: bool = False) -> None:
        regions = sorted({op.region for op in ops if op.region})
        found.append(Finding(table, key, problem, detail, regions, observed, ops,
                             permitted=allowed_eventually and not strong))  # fmt: skip

    # 3. bad reads
    clean_reads = []
    for invocation, completion in reads:
        value = completion.value or []
        unknown = [element for element in value if element not in by_element]
        if unknown or len(set(value)) != len(value):
            what = f"element {unknown[0]!r}, which no append wrote" if unknown else "an element twice"
            finding("bad-read", f"read {_where(completion)} returned {value!r}: {what}.", [invocation, completion])
        else:
            clean_reads.append((invocation, completion))
    # 1. lost appends
    acknowledged = [(i, c) for i, c in appends if c is not None and c.type == OK]
    for invocation, completion in acknowledged:
        if invocation.value in position:
            continue
        later = sorted(
            (c.version, i, c) for i, c in acknowledged
            if c.version and completion.version and c.version > completion.version and i.value in position
        )  # fmt: skip
        seen = [(i, c) for i, c in clean_reads if invocation.value in (c.value or [])]
        proof = [invocation, completion]
        sentence = (f"append of {invocation.value!r} {_where(completion)} was acknowledged (version "
                    f"{completion.version}) but the final list of {len(final)} elements lacks it")  # fmt: skip
        if later:
            _, winner_invocation, winner = later[0]
            proof += [winner_invocation, winner]
            sentence += (f"; the next version of the item, the append of {winner_invocation.value!r} "
                         f"{_where(winner)} (version {winner.version}), survives without it: a concurrent write "
                         "replaced the whole list by last-writer-wins")  # fmt: skip
        if seen:
            proof += [seen[0][0], seen[0][1]]
            sentence += f"; read {_where(seen[0][1])} had seen it"
        finding("lost-append", sentence + ".", proof, allowed_eventually=bool(later))
    # 2. incompatible orders: against the final list, then between reads
    for invocation, completion in clean_reads:
        value = completion.value or []
        if not _is_prefix(value, final) and all(element in position for element in value):
            finding("incompatible-order", f"read {_where(completion)} saw {value!r}, which is not a prefix of the "
                    f"final list {final!r} although all its elements survived: they were applied in another "
                    "order.", [invocation, completion])  # fmt: skip
    longest: dict[int, tuple[Op, Op]] = {}
    for invocation, completion in clean_reads:
        value = completion.value or []
        for other_invocation, other in longest.values():
            shorter, longer = sorted((value, other.value or []), key=len)
            if not _is_prefix(shorter, longer):
                finding("incompatible-order", f"read {_where(completion)} saw {value!r} and read {_where(other)} "
                        f"saw {other.value!r}: neither is a prefix of the other, so no single order of appends "
                        "explains both.", [other_invocation, other, invocation, completion],
                        allowed_eventually=True)  # fmt: skip
                break
        else:
            longest[len(longest)] = (invocation, completion)
            if len(longest) > 64:  # compare against a bounded set of earlier reads (the longest ones)
                longest = dict(enumerate(sorted(longest.values(), key=lambda p: -len(p[1].value or []))[:32]))
    if not strong:
        return found
    # 4. stale strong reads
    strong_reads = [(i, c) for i, c in clean_reads if i.f in strong_names and i.mono is not None and c.mono is not None]
    for invocation, completion in strong_reads:
        value = completion.value or []
        missed = [(i, c) for i, c in acknowledged if c.mono is not None and c.mono < invocation.mono
                  and i.value not in value]  # fmt: skip
        if missed:
            i, c = missed[0]
            finding("stale-read", f"strong read {_where(completion)} saw {len(value)} elements without "
                    f"{i.value!r}, whose append {_where(c)} was acknowledged before the read was sent.",
                    [i, c, invocation, completion])  # fmt: skip
            continue
        earlier = [(i, c) for i, c in strong_reads if c.mono < invocation.mono and len(c.value or []) > len(value)]
        if earlier:
            i, c = earlier[0]
            finding("stale-read", f"strong read {_where(completion)} saw {len(value)} elements, fewer than the "
                    f"{len(c.value or [])} strong read {_where(c)} saw before it was sent.", [i, c, invocation,
                    completion])  # fmt: skip
    # 5. real-time order of appends in the final list
    timed = sorted(((i, c) for i, c in acknowledged if i.value in position and c.mono is not None),
                   key=lambda pair: pair[1].mono)  # fmt: skip
    for invocation, completion in timed:
        after = [(i, c) for i, c in timed if i.mono is not None and i.mono > completion.mono
                 and position[i.value] < position[invocation.value]]  # fmt: skip
        if after:
            i, c = after[0]
            finding("real-time-order", f"append of {invocation.value!r} {_where(completion)} was acknowledged "
                    f"before the append of {i.value!r} {_where(i)} was sent, yet comes after it in the final list.",
                    [invocation, completion, i, c])  # fmt: skip
    return found
