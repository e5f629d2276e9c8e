"""A per-key linearizability checker for a register (an item's value), over a History.

Theory of operation (Wing & Gong's search with Lowe's memoisation, as in Knossos and Porcupine): per (table, key),
the operations become call and return events in time order; the search walks the events, tries to linearize each
callable operation as soon as its call has happened (the model must allow it: a read must return the current value),
backtracks when it reaches the return of an operation it has not linearized, and caches (linearized set, value)
pairs it has already explored. Items are independent, so each key is checked alone.

Rules
1. ok writes (put/update/delete) and ok strong reads must all be linearized, each between its invocation and its
   completion. A delete writes "no item"; a read of nothing reads "no item".
2. info writes may or may not have taken effect: they may be linearized any time after their invocation, or never.
   info and fail reads say nothing; fail writes certainly did not apply and are ignored.
3. Only reads named in `reads` (default: "get", the simulator's strong GetItem) are checked; eventually consistent
   reads must be recorded under another `f` (e.g. "get-eventual").
4. The search is bounded: past `budget` steps for a key the result is unknown, never pass.
Values are compared as canonical JSON, so {"S": "w-1"} from a write matches the same value read back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..history import FAIL, INFO, OK, History, Op, key_id
from .result import CheckResult, Finding

NAME = "linearizable"
DEFAULT_BUDGET = 2_000_000
ABSENT = "<absent>"  # the register's value when the item does not exist


def canonical(value: Any) -> str:
    if value is None:
        return ABSENT
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _Op:
    __slots__ = ("bit", "call", "done", "invoke", "is_read", "must", "ret", "value")

    def __init__(self, invoke: Op, completion: Op | None, is_read: bool, bit: int) -> None:
        self.invoke = invoke
        self.done = completion
        self.is_read = is_read
        self.must = completion is not None and completion.type == OK  # rule 1; info writes: rule 2
        source = completion if is_read else invoke
        self.value = canonical(None if invoke.f == "delete" and not is_read else source.value)
        self.bit = bit


class _Entry:
    __slots__ = ("is_call", "next", "op", "prev")

    def __init__(self, op: _Op | None, is_call: bool) -> None:
        self.op = op
        self.is_call = is_call
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def check(
    history: History, *, reads: Iterable[str] = ("get",), budget: int = DEFAULT_BUDGET, initial: Any = None
) -> CheckResult:
    read_fs = frozenset(reads)
    per_key: dict[tuple[str, str], list[tuple[Op, Op | None]]] = {}
    for invoke, completion in history.pairs():
        if invoke.is_write:
            if completion is not None and completion.type == FAIL:
                continue
        elif invoke.f in read_fs:
            if completion is None or completion.type != OK:
                continue
        else:
            continue
        per_key.setdefault((invoke.table or "", key_id(invoke.key)), []).append((invoke, completion))
    findings: list[Finding] = []
    unknown: list[str] = []
    checked = 0
    for (table, key), pairs in sorted(per_key.items()):
        verdict, detail = _check_key(pairs, read_fs, budget, canonical(initial))
        checked += 1
        if verdict is None:
            unknown.append(f"{table}[{key}]")
        elif not verdict:
            findings.append(
                Finding(table, key, "not-linearizable", detail, operations=[p[1] or p[0] for p in pairs][:50])
            )
    if findings:
        return CheckResult(NAME, False, f"{len(findings)} of {checked} keys not linearizable", findings)
    if unknown:
        return CheckResult(
            NAME, False, f"unknown: search budget ({budget} steps) ran out for {', '.join(unknown[:10])}"
        )
    return CheckResult(NAME, True, f"{checked} keys linearizable")


def _check_key(
    pairs: list[tuple[Op, Op | None]], read_fs: frozenset[str], budget: int, initial: str
) -> tuple[bool | None, str]:
    """(True, "") linearizable, (False, why) not, (None, "") budget exhausted."""
    ops = [_Op(invoke, completion, invoke.f in read_fs, 1 << i) for i, (invoke, completion) in enumerate(pairs)]
    # Events in time order: (time, order) with calls after returns at equal times would be lenient; we put a
    # return before a call at the same instant only when they are different operations' (strict real-time order).
    events: list[tuple[int, int, _Entry]] = []
    for op in ops:
        events.append((op.invoke.index, 1, _Entry(op, True)))
        if op.must:
            events.append((op.done.index, 0, _Entry(op, False)))
    events.sort(key=lambda e: (e[0], e[1]))
    head = _Entry(None, False)
    prev = head
    call_of: dict[int, _Entry] = {}
    ret_of: dict[int, _Entry] = {}
    for _time, _kind, entry in events:
        prev.next = entry
        entry.prev = prev
        prev = entry
        (call_of if entry.is_call else ret_of)[entry.op.bit] = entry
    remaining_must = sum(1 for op in ops if op.must)
    linearized = 0
    state = initial
    cache: set[tuple[int, str]] = set()
    stack: list[tuple[_Entry, str]] = []
    entry = head.next
    steps = 0
    deepest = 0
    while remaining_must:
        steps += 1
        if steps > budget:
            return None, ""
        if entry is None:
            # Only calls of optional (info) writes remain and none fits: backtrack.
            if not stack:
                return False, _explain(ops, linearized, deepest)
            entry, state, remaining_must, linearized = _undo(stack, state, remaining_must, linearized, ret_of)
            continue
        op = entry.op
        if entry.is_call:
            if op.is_read:
                allowed, new_state = op.value == state, state
            else:
                allowed, new_state = True, op.value
            if allowed and (linearized | op.bit, new_state) not in cache:
                cache.add((linearized | op.bit, new_state))
                stack.append((entry, state))
                state = new_state
                linearized |= op.bit
                if op.must:
                    remaining_must -= 1
                _lift(entry, ret_of.get(op.bit))
                deepest = max(deepest, len(stack))
                entry = head.next
            else:
                entry = entry.next
        else:
            # The return of an operation not yet linearized: this branch is impossible.
            if not stack:
                return False, _explain(ops, linearized, deepest, op)
            entry, state, remaining_must, linearized = _undo(stack, state, remaining_must, linearized, ret_of)
    return True, ""


def _undo(stack, state, remaining_must, linearized, ret_of):
    entry, state = stack.pop()
    op = entry.op
    linearized &= ~op.bit
    if op.must:
        remaining_must += 1
    _unlift(entry, ret_of.get(op.bit))
    return entry.next, state, remaining_must, linearized


def _lift(call: _Entry, ret: _Entry | None) -> None:
    call.prev.next = call.next
    if call.next is not None:
        call.next.prev = call.prev
    if ret is not None:
        ret.prev.next = ret.next
        if ret.next is not None:
            ret.next.prev = ret.prev


def _unlift(call: _Entry, ret: _Entry | None) -> None:
    if ret is not None:
        ret.prev.next = ret
        if ret.next is not None:
            ret.next.prev = ret
    call.prev.next = call
    if call.next is not None:
        call.next.prev = call


def _explain(ops: list[_Op], linearized: int, deepest: int, blocked: _Op | None = None) -> str:
    if blocked is not None:
        what = "read" if blocked.is_read else "write"
        value = blocked.value
        return (
            f"no order of the operations explains the {what} of {value} completed at history index "
            f"{blocked.done.index} (the search linearized at most {deepest} operations before it)"
        )
    return f"no linearizable order (the search linearized at most {deepest} operations)"


__all__ = ["INFO", "NAME", "check"]
