"""A per-key linearizability checker for a register (an item's value) with compare-and-set, over a History.

Theory of operation (Wing & Gong's search with Lowe's memoisation, as in Knossos and Porcupine): per (table, key),
the operations become call and return events in time order; the search walks the events, tries to linearize each
callable operation as soon as its call has happened (the model must allow it), backtracks when it reaches the return
of an operation it has not linearized, and caches (linearized set, state) pairs it has already explored. Items are
independent, so each key is checked alone, with its own step budget. The search is pruned (rule 8) where a step
cannot change the verdict.

The model: the register holds a value or "no item". A read must return the current value; a write sets it (a
delete: "no item"); a conditional write (its invocation's `condition`, chaos/conditions.py) is a compare-and-set:
it may take effect only where its condition holds of the current value; a ConditionalCheckFailed of a modelled
condition is a read that found the condition false (so a region that refuses a write against a stale copy is caught).

Rules
1. ok writes and ok reads (and modelled ConditionalCheckFailed refusals) must all be linearized, each between its
   invocation and its completion. A read of nothing reads "no item".
2. info writes may or may not have taken effect: they may be linearized any time after their invocation, or never.
   info and fail reads say nothing; other fail writes (ReplicatedWriteConflictException, ...) did not apply and are
   ignored.
3. Only reads named in `reads` (default: "get", the simulator's strong GetItem) are checked; eventually consistent
   reads must be recorded under another `f` (e.g. "get-eventual").
4. Sound reductions before the search, each keeping the verdict: (a) an info write whose value no read returned is
   dropped when no conditional operation on the key looks at the item (if it took effect, a write overwrote it
   before anything read it, so an order without it exists), or when conditions may look but cannot see it: the
   model's conditions test only whether the item exists, so on a key no operation deletes, a write invoked after an
   acknowledged write returned finds the item existing and leaves it so; (b) an info write that is the only writer
   of a value some read returned did take effect, before the first such read returned: it becomes a must operation
   that completes there. Reads that timed out (info) are never searched: they constrain nothing.
5. The search is bounded: past `budget` steps for a key the key is undecided and the verdict is unknown, never
   valid and never invalid; undecided keys are always listed, even when another key is invalid.
6. Explanations prove: for an invalid key, a small set of its operations that no order explains, closed under the
   writes its observations could have seen (every write whose value a read, a condition or a refusal in the set
   could have observed is in the set), so adding the key's other operations cannot explain it either. It is
   shrunk greedily (each operation left is needed) within a step budget, and printed as a sentence.
7. A write whose record does not say what it wrote (the pytest kit's UpdateItem answered without a post-image is
   recorded as its expression) is left out of the search: an in-doubt one may explain a read nothing else explains,
   so an invalid search makes the key undecided, and an acknowledged one makes it undecided at once.
8. The search is pruned, exactly (each pruning keeps the verdict of the search without it; `pruning=False` turns
   rule 8 off, `reductions=False` rules 4 and 8):
   (a) State classes. To the operations not yet linearized, a value that none of their reads returns is the same
   state as any other such value: no read can be linearized in it, and conditions see only whether the item exists,
   which it does in all of them. The search and its cache hold all such values as one state, UNREAD (a value
   becomes UNREAD when its last read is linearized; "no item" never does). Configurations that differ only in which
   of them the register holds are then one entry of the cache.
   (b) Forced steps. An operation that is callable in a configuration (no operation left to linearize returned
   before its invocation) and allowed there, and that leaves the state's class as it found it in any order, is
   linearized at once, and the configuration tries nothing else: a read, a refusal, and an acknowledged write of a
   value no read left returns while the state is already UNREAD, on a key where either no operation deletes or none
   has a condition. Why that keeps the verdict: take any order that linearizes the operation later, and move it to
   the front. Real time allows it (it was callable), the operations it now precedes start from a state of the same
   class and so stay allowed and reach the same classes, and those after its old place see what they saw: a read or
   a refusal leaves the state as it is; after an unread write no read can come before the next write, so the value
   it erased is never seen, and the only thing a condition could see, whether the item exists, is true at its old
   place and at its new one when nothing deletes (and moot when nothing has a condition).
   Why it matters: on a hot key under MRSC (docs/mrsc.md decisions 1-3) most writes are refused at once, strong
   reads take seconds and many time out, so each acknowledged read overlaps dozens of racing writes. The search as
   recorded tried, wherever such a read was allowed, also every order of the writes that put it later, each found
   dead only at the read's return: exponential in the writes a read overlaps. Forced reads take that branch away;
   forced unread writes and state classes take away the orders of writes no read can tell apart.
Values are compared as canonical JSON, so {"S": "w-1"} from a write matches the same value read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ..conditions import holds
from ..history import FAIL, INFO, OK, History, Op, key_id
from .result import UNKNOWN, CheckResult, Finding

NAME = "linearizable"
DEFAULT_BUDGET = 2_000_000
EXPLAIN_BUDGET = 400_000  # steps spent shrinking one invalid key's explanation
ABSENT = "<absent>"  # the register's value when the item does not exist
UNSAID = "<unsaid>"  # a write whose record does not say the value it wrote (a described UpdateItem, rule 7)
CCF = "ConditionalCheckFailedException"
UNREAD = "<unread>"  # the search's one state for every value no read returns (rule 8a)
READ, WRITE, CAS, REFUSAL = "read", "write", "cas", "refusal"
PURE = frozenset((READ, REFUSAL))  # operations that change no state


def canonical(value: Any) -> str:
    if value is None:
        return ABSENT
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class _Op:
    """One operation as the search sees it: its kind, the value it reads or writes, its condition, and its
    call and return positions (`ret` None: it may be linearized any time after its call, or never)."""

    __slots__ = ("bit", "call", "condition", "done", "invoke", "kind", "must", "ret", "value")

    def __init__(self, invoke: Op, completion: Op | None, kind: str) -> None:
        self.invoke = invoke
        self.done = completion
        self.kind = kind
        self.condition = invoke.condition
        self.must = completion is not None and (completion.type == OK or kind == REFUSAL)
        if kind == READ:
            self.value = canonical(completion.value)
        elif invoke.is_delete or kind == REFUSAL:
            self.value = ABSENT  # a refusal writes nothing: only its condition matters
        else:
            written = completion.value if completion is not None and completion.type == OK else None
            if written is None:
                written = invoke.value
            described = invoke.f == "update" and isinstance(written, dict) and "update" in written
            self.value = UNSAID if described else canonical(written)
        self.call = invoke.index
        self.ret: float | None = completion.index if self.must else None
        self.bit = 0

    def allowed(self, state: str) -> tuple[bool, str]:
        kind = self.kind
        if kind == READ:
            return self.value == state, state
        if kind == WRITE:
            return True, self.value
        exists = state != ABSENT
        if kind == CAS:
            return holds(self.condition, exists), self.value
        return not holds(self.condition, exists), state  # REFUSAL

    def writes(self) -> bool:
        return self.kind in (WRITE, CAS)

    def observes(self, value: str) -> bool:
        """Whether this operation's outcome depends on the register holding `value` (closure, rule 6)."""
        if self.kind == READ:
            return value == self.value
        if self.kind == CAS:
            return holds(self.condition, value != ABSENT)
        if self.kind == REFUSAL:
            return not holds(self.condition, value != ABSENT)
        return False


class _Entry:
    __slots__ = ("is_call", "next", "op", "prev")

    def __init__(self, op: _Op | None, is_call: bool) -> None:
        self.op = op
        self.is_call = is_call
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def _classify(invoke: Op, completion: Op | None, read_fs: frozenset[str]) -> str | None:
    if invoke.is_write:
        if completion is not None and completion.type == FAIL:
            if completion.error == CCF and invoke.condition is not None:
                return REFUSAL
            return None
        return CAS if invoke.condition is not None else WRITE
    if invoke.f in read_fs and completion is not None and completion.type == OK:
        return READ
    return None


def check(
    history: History,
    *,
    reads: Iterable[str] = ("get",),
    budget: int = DEFAULT_BUDGET,
    initial: Any = None,
    explain: bool = True,
    reductions: bool = True,
    pruning: bool = True,
) -> CheckResult:
    """`reductions=False` searches the history exactly as recorded (rules 4 and 8 off), `pruning=False` without rule 8:
    only for comparing searches."""
    read_fs = frozenset(reads)
    per_key: dict[tuple[str, str], list[_Op]] = {}
    for invoke, completion in history.pairs():
        kind = _classify(invoke, completion, read_fs)
        if kind is not None:
            per_key.setdefault((invoke.table or "", key_id(invoke.key)), []).append(_Op(invoke, completion, kind))
    findings: list[Finding] = []
    undecided: list[str] = []
    steps_of: dict[str, int] = {}
    dropped = closed = 0
    start = canonical(initial)
    for (table, key), ops in sorted(per_key.items()):
        name = f"{table}[{key}]"
        unsaid = [op for op in ops if op.value == UNSAID]
        if any(op.must for op in unsaid):
            undecided.append(name)
            continue
        ops = [op for op in ops if op.value != UNSAID]
        ops, n_dropped, n_closed = reduce_ops(ops) if reductions else (ops, 0, 0)
        dropped += n_dropped
        closed += n_closed
        verdict, steps = search(ops, budget, start, prune=reductions and pruning)
        steps_of[name] = steps
        if verdict is None or (verdict is False and unsaid):
            undecided.append(name)
        elif not verdict:
            proof, minimal = explanation(ops, start) if explain else (ops, False)
            findings.append(
                Finding(
                    table,
                    key,
                    "not-linearizable",
                    sentence(proof, minimal),
                    sorted({p.region for op in proof for p in (op.invoke, op.done) if p is not None and p.region}),
                    operations=records(proof),
                )
            )
    slowest = sorted(steps_of.items(), key=lambda kv: -kv[1])[:5]
    stats = {
        "keys": len(per_key),
        "budget_per_key": budget,
        "steps_total": sum(steps_of.values()),
        "steps_max": max(steps_of.values(), default=0),
        "slowest_keys": [{"key": k, "steps": s} for k, s in slowest],
        "dropped_info_writes": dropped,
        "closed_info_writes": closed,
    }
    checked = len(per_key)
    open_note = (
        f"; undecided (search budget of {budget} steps per key ran out): {', '.join(undecided[:10])}"
        + (f" and {len(undecided) - 10} more" if len(undecided) > 10 else "")
        if undecided
        else ""
    )
    if findings:
        return CheckResult(
            NAME, False, f"{len(findings)} of {checked} keys not linearizable{open_note}", findings,
            undecided=undecided, stats=stats,
        )  # fmt: skip
    if undecided:
        return CheckResult(
            NAME, False, f"unknown: {checked - len(undecided)} of {checked} keys linearizable{open_note}",
            verdict=UNKNOWN, undecided=undecided, stats=stats,
        )  # fmt: skip
    return CheckResult(NAME, True, f"{checked} keys linearizable", stats=stats)


# -------------------------------------------------------------------------------------------- reductions


def reduce_ops(ops: list[_Op]) -> tuple[list[_Op], int, int]:
    """Rule 4: (ops, info writes dropped, info writes made must)."""
    first_read: dict[str, float] = {}
    writers: dict[str, int] = {}
    existence = False  # some operation's outcome depends on whether the item exists
    deletes = False
    first_kept_write = float("inf")  # the earliest return of an acknowledged write that leaves the item existing
    for op in ops:
        if op.kind == READ:
            first_read[op.value] = min(first_read.get(op.value, op.ret), op.ret)
        elif op.writes():
            writers[op.value] = writers.get(op.value, 0) + 1
            if op.value == ABSENT:
                deletes = True
            elif op.must:
                first_kept_write = min(first_kept_write, op.ret)
        if op.kind in (CAS, REFUSAL):
            existence = True
    kept: list[_Op] = []
    dropped = closed = 0
    for op in ops:
        if op.writes() and not op.must:
            if op.value not in first_read:
                # Conditions look only at whether the item exists: an unread write invoked after an acknowledged
                # write had returned, on a key nothing deletes, leaves existence as it found it (true), so it
                # changes nothing any operation observes, whether it took effect or not.
                exists_anyway = not deletes and op.call > first_kept_write and op.value != UNSAID
                if not existence or exists_anyway:
                    dropped += 1
                    continue
            elif writers[op.value] == 1 and op.value != ABSENT and first_read[op.value] > op.call:
                op.must = True
                op.ret = first_read[op.value]
                closed += 1
        kept.append(op)
    return kept, dropped, closed


# ------------------------------------------------------------------------------------------------ search


def search(ops: Sequence[_Op], budget: int, initial: str, prune: bool = True) -> tuple[bool | None, int]:
    """(True, steps) linearizable, (False, steps) not, (None, steps) budget exhausted. A step is one entry of the
    event list looked at. `prune=False` searches without rule 8, only for comparing searches."""
    return _Search(ops, initial, prune).run(budget)


class _Search:
    """The search's configuration: the event list without the calls (and returns) linearized so far, the linearized
    set as a bitset, the register's state, and the stack of choices to take back."""

    def __init__(self, ops: Sequence[_Op], initial: str, prune: bool) -> None:
        for bit, op in enumerate(ops):
            op.bit = 1 << bit
        # Events in time order; at one position a return sorts before a call (strict real-time order).
        events: list[tuple[float, int, _Entry]] = []
        for op in ops:
            events.append((op.call, 1, _Entry(op, True)))
            if op.must:
                events.append((op.ret, 0, _Entry(op, False)))
        events.sort(key=lambda e: (e[0], e[1]))
        self.head = prev = _Entry(None, False)
        self.ret_of: dict[int, _Entry] = {}
        for _time, _kind, entry in events:
            prev.next = entry
            entry.prev = prev
            prev = entry
            if not entry.is_call:
                self.ret_of[entry.op.bit] = entry
        self.prune = prune
        self.reads_left: dict[str, int] = {}  # value -> reads of it not linearized yet (rule 8a)
        for op in ops:
            if op.kind == READ:
                self.reads_left[op.value] = self.reads_left.get(op.value, 0) + 1
        # Rule 8b for writes: where a write's state cannot be told from a later one's by any condition.
        deletes = any(op.writes() and op.value == ABSENT for op in ops)
        conditions = any(op.kind in (CAS, REFUSAL) for op in ops)
        self.erasable = prune and not (deletes and conditions)
        self.remaining_must = sum(1 for op in ops if op.must)
        self.linearized = 0
        self.state = self.canon(initial)
        self.stack: list[tuple[_Entry, str, bool]] = []  # (call linearized, state before it, whether it was forced)

    def canon(self, value: str) -> str:
        """Rule 8a: the state's class. A value that no read still to be linearized returns is one state with every
        other such value (conditions see only existence, and none of them is "no item")."""
        if not self.prune or value == ABSENT or self.reads_left.get(value, 0):
            return value
        return UNREAD

    def forced(self, op: _Op, new_state: str) -> bool:
        """Rule 8b: whether linearizing `op` (allowed now) leaves the state's class as it is in every order, so that
        a configuration where it is callable need try nothing else."""
        if op.kind in PURE:
            return True
        return self.erasable and op.must and self.state == UNREAD and new_state == UNREAD

    def take(self, entry: _Entry, new_state: str, forced: bool) -> None:
        op = entry.op
        self.stack.append((entry, self.state, forced))
        self.linearized |= op.bit
        if op.must:
            self.remaining_must -= 1
        if op.kind == READ and self.prune:
            self.reads_left[op.value] -= 1
        self.state = new_state
        _lift(entry, self.ret_of.get(op.bit))

    def undo(self) -> _Entry | None:
        """Take back linearized calls up to and including the last one that was a choice: the next alternative to
        try in the configuration before it (None when nothing is left to try). A forced call's configuration has no
        alternative, so it is taken back too."""
        while self.stack:
            entry, self.state, forced = self.stack.pop()
            op = entry.op
            self.linearized &= ~op.bit
            if op.must:
                self.remaining_must += 1
            if op.kind == READ and self.prune:
                self.reads_left[op.value] += 1
            _unlift(entry, self.ret_of.get(op.bit))
            if not forced:
                return entry.next
        return None

    def outcome(self, op: _Op) -> tuple[bool, str]:
        """Whether `op` is allowed now, and the state's class after it."""
        allowed, new_state = op.allowed(self.state)
        if op.kind == READ and self.prune and self.reads_left[op.value] == 1 and new_state != ABSENT:
            return allowed, UNREAD  # the last read of its value
        return allowed, self.canon(new_state)

    def run(self, budget: int) -> tuple[bool | None, int]:
        head, cache = self.head, set()  # cache: (linearized set, state class) pairs already explored
        entry = head.next
        fresh = self.prune  # `entry` starts a configuration not yet looked at for a forced operation
        steps = 0
        while self.remaining_must:
            if fresh:
                # Rule 8b: an allowed operation that changes no state's class is linearized now, with no other
                # branch to try; else the scan goes on at the first operation it would take, or at the return that
                # ends the calls callable here.
                fresh = False
                entry, forced, first = head.next, None, None
                while entry is not None and entry.is_call:
                    steps += 1
                    op = entry.op
                    allowed, new_state = self.outcome(op)
                    if allowed:
                        if self.forced(op, new_state):
                            forced = entry
                            break
                        if first is None and (self.linearized | op.bit, new_state) not in cache:
                            first = entry
                    entry = entry.next
                if steps > budget:
                    return None, steps
                if forced is None:
                    entry = first or entry
                elif (self.linearized | op.bit, new_state) in cache:  # explored from there already: it failed
                    entry = self.undo()
                    if entry is None and not self.stack:
                        return False, steps
                    continue
                else:
                    cache.add((self.linearized | op.bit, new_state))
                    self.take(forced, new_state, True)
                    entry, fresh = head.next, True
                    continue
            steps += 1
            if steps > budget:
                return None, steps
            if entry is None or not entry.is_call:
                # The return of an operation not yet linearized (or only calls of optional writes left, none
                # fitting): this branch is impossible.
                if not self.stack:
                    return False, steps
                entry = self.undo()
                if entry is None and not self.stack:
                    return False, steps
                continue
            op = entry.op
            allowed, new_state = self.outcome(op)
            if allowed and (self.linearized | op.bit, new_state) not in cache:
                cache.add((self.linearized | op.bit, new_state))
                self.take(entry, new_state, False)
                entry, fresh = head.next, self.prune
            else:
                entry = entry.next
        return True, steps


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


# ---------------------------------------------------------------------------------------------- explaining


def explanation(ops: list[_Op], initial: str, budget: int = EXPLAIN_BUDGET) -> tuple[list[_Op], bool]:
    """Rule 6: (a closed subset of `ops` that no order explains, whether each of its operations is needed)."""
    writes = [op for op in ops if op.writes()]

    def closed(subset: Sequence[_Op]) -> bool:
        present = {id(op) for op in subset}
        for op in subset:
            if op.kind != WRITE:
                for write in writes:
                    if id(write) not in present and op.observes(write.value):
                        return False
        return True

    spent = 0
    current = list(ops)
    minimal = True

    def still_invalid(subset: list[_Op]) -> bool:
        nonlocal spent, minimal
        if not closed(subset):
            return False
        if spent >= budget:
            minimal = False
            return False
        verdict, steps = search(subset, min(50_000, budget - spent), initial)
        spent += steps
        if verdict is None:
            minimal = False
        return verdict is False

    # Shrink by halves of what is left, then one operation at a time until none can go.
    chunk = max(1, len(current) // 2)
    while True:
        start, removed = 0, False
        while start < len(current):
            trial = current[:start] + current[start + chunk :]
            if trial and still_invalid(trial):
                current, removed = trial, True
            else:
                start += chunk
        if chunk > 1:
            chunk //= 2
        elif not removed or spent >= budget:
            break
    return sorted(current, key=lambda op: op.call), minimal


def records(ops: Sequence[_Op]) -> list[Op]:
    out = [record for op in ops for record in (op.invoke, op.done) if record is not None]
    return sorted(out, key=lambda record: record.index)


def describe(op: _Op) -> str:
    """One operation in words: what it did, where, when (history indexes) and how it ended."""
    invoke, done = op.invoke, op.done
    who = f"{invoke.process}@{invoke.region}" if invoke.region else f"{invoke.process}"
    span = f"#{invoke.index}–#{done.index}" if done is not None else f"#{invoke.index}–(never answered)"
    value = _show(op.value)
    if op.kind == READ:
        return f"{invoke.f} by {who} ({span}) returned {value}"
    condition = ""
    if op.condition is not None:
        condition = " if the item " + ("exists" if op.condition.get("exists") else "does not exist")
    if op.kind == REFUSAL:  # a refusal wrote nothing: say what it would have written
        described = isinstance(invoke.value, dict) and "update" in invoke.value
        value = "its expression" if described else _show(canonical(invoke.value))
    what = "delete" if invoke.is_delete else f"{invoke.f} of {value}"
    if op.kind == REFUSAL:
        return f"{what}{condition} by {who} ({span}) refused with ConditionalCheckFailed"
    outcome = "acknowledged" if done is not None and done.type == OK else "in doubt"
    if done is not None and done.type != OK and op.must:
        outcome += ", but a read returned its value"
    return f"{what}{condition} by {who} ({span}, {outcome})"


def sentence(ops: Sequence[_Op], minimal: bool) -> str:
    """The proof in words: the operations, and which of them finished before which others began."""
    names = {id(op): f"({n})" for n, op in enumerate(ops, 1)}
    parts = [f"{names[id(op)]} {describe(op)}" for op in ops]
    before = [
        f"{names[id(a)]} before {names[id(b)]}"
        for a in ops
        for b in ops
        if a is not b and a.done is not None and a.ret == a.done.index and a.ret < b.call
    ]
    head = f"no order of these {len(ops)} operations is linearizable"
    head += "" if minimal else " (not shrunk further: the explanation's budget ran out)"
    order = f"; in real time {', '.join(before)}" if before else "; they all overlap in time"
    return f"{head}: {'; '.join(parts)}{order}"


def _show(value: str) -> str:
    if value == ABSENT:
        return "no item"
    try:
        decoded = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    if isinstance(decoded, str):
        return repr(decoded)
    if isinstance(decoded, dict) and len(decoded) == 1 and isinstance(next(iter(decoded.values())), str):
        return repr(next(iter(decoded.values())))
    return value


__all__ = ["INFO", "NAME", "check", "search"]
