"""A Jepsen-style history: every client operation as an invocation and a completion, faults in the same timeline.

Theory of operation: a client records `invoke` before it sends a request and exactly one completion after:
  - `ok`   — the operation took effect (writes carry the `x-globaltables-version` header of the version written,
             reads the value and version read);
  - `fail` — it certainly did not take effect (e.g. ConditionalCheckFailedException, ValidationException);
  - `info` — unknown: it may or may not have taken effect (timeouts, 500s, connection resets). Checkers treat info
             writes as possibly applied, with an unknown version. When in doubt, info is always safe.
A process (one logical client) has at most one outstanding invocation; a completion names the invocation it
completes. An invocation left without a completion at the end of a run counts as info.
Faults are records of the `nemesis` process, of type `info`, in the same history (`f` names the fault, `value`
holds its parameters), so a checker can say which partition was in force when something went wrong.

JSONL schema (version 1), one object per line, every field always present, in this order:
  index    int    position in the history, from 0
  type     str    "invoke" | "ok" | "fail" | "info"
  process  str|int  client id; "nemesis" for faults
  region   str|null   region the request was sent to (or the fault's region)
  f        str    operation: put | update | delete | get | query | scan | ... ; for faults the fault kind
  table    str|null
  key      json|null  the item's key: a string, or any JSON value (e.g. DynamoDB key attributes); see `key_id`
  value    json|null  writes: the unique value the write stores; reads (ok): the value read; faults: parameters
  version  str|null   the x-globaltables-version header (`<hlc>/<region>`), opaque to the history
  error    str|null   error type for fail / info
  mono     float|null monotonic seconds of the recorder's clock
  wall     float|null wall seconds of the recorder's clock
  condition json|null  a conditional write's condition on the item, as far as a checker can model it:
                       {"exists": true|false} (attribute_exists / attribute_not_exists of an attribute every item
                       has) or {"equals": value} (the written attribute equals value); null: unconditional, or a
                       condition no checker models (chaos/conditions.py)
Readers must ignore unknown fields, so fields can be added without breaking old histories; a field missing from an
old history reads as null. A process written as a JSON array (the simulator's per-item sub-reads of a Query or
Scan, `(process, i)`) reads back as a tuple, so it is the same process again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ..runtime.clock import Clock

FIELDS = (
    "index", "type", "process", "region", "f", "table", "key", "value", "version", "error", "mono", "wall", "condition",
)  # fmt: skip
INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
COMPLETION_TYPES = frozenset({OK, FAIL, INFO})
NEMESIS = "nemesis"
# Operations that change an item. A delete stores no value (its `value` is null).
WRITE_FUNCTIONS = frozenset({"put", "update", "delete"})
DELETE_FUNCTIONS = frozenset({"delete"})

# Errors after which the request certainly did not apply (a Jepsen-style classification). Anything else — timeouts,
# InternalServerError, ServiceUnavailable, connection resets, unknown types — is indefinite, hence info.
DEFINITE_ERRORS = frozenset(
    {
        "ConditionalCheckFailedException",
        "ValidationException",
        "ReplicatedWriteConflictException",
        "ResourceNotFoundException",
        "TransactionCanceledException",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "ItemCollectionSizeLimitExceededException",
        "SerializationException",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "MissingAuthenticationTokenException",
    }
)


def completion_type_for_error(error_type: str) -> str:
    """fail for errors that prove the request had no effect, info for every other (possibly applied) one."""
    return FAIL if error_type in DEFINITE_ERRORS else INFO


def key_id(key: Any) -> str:
    """The canonical string for a key: a string is itself; anything else its JSON with sorted object keys.

    Final replica states and checker reports index items by this string.
    """
    if isinstance(key, str):
        return key
    return orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()


class Op:
    """One history record. Plain slots, not a dataclass: histories of 10^5..10^6 records are normal."""

    __slots__ = FIELDS

    def __init__(
        self,
        index: int,
        type: str,
        process: Any,
        region: str | None,
        f: str,
        table: str | None = None,
        key: Any = None,
        value: Any = None,
        version: str | None = None,
        error: str | None = None,
        mono: float | None = None,
        wall: float | None = None,
        condition: Any = None,
    ) -> None:
        self.index = index
        self.type = type
        self.process = process
        self.region = region
        self.f = f
        self.table = table
        self.key = key
        self.value = value
        self.version = version
        self.error = error
        self.mono = mono
        self.wall = wall
        self.condition = condition

    @property
    def is_write(self) -> bool:
        return self.f in WRITE_FUNCTIONS and self.process != NEMESIS

    @property
    def is_delete(self) -> bool:
        return self.f in DELETE_FUNCTIONS and self.process != NEMESIS

    @property
    def is_fault(self) -> bool:
        return self.process == NEMESIS

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Op:
        op = cls(**{name: record.get(name) for name in FIELDS})
        if isinstance(op.process, list):
            op.process = _hashable(op.process)
        return op

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Op):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = [f"#{self.index}", self.type, f"p={self.process}", self.f]
        if self.region is not None:
            parts.append(f"@{self.region}")
        if self.table is not None or self.key is not None:
            parts.append(f"{self.table}[{key_id(self.key) if self.key is not None else ''}]")
        if self.value is not None:
            parts.append(f"value={self.value!r}")
        if self.version is not None:
            parts.append(f"version={self.version}")
        if self.error is not None:
            parts.append(f"error={self.error}")
        if self.condition is not None:
            parts.append(f"condition={self.condition!r}")
        return f"Op({' '.join(parts)})"


def _hashable(value: Any) -> Any:
    """A JSON array (and arrays inside it) as a tuple: processes are dictionary keys."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


class History:
    """An append-only list of `Op`s with the invariants of rule "one outstanding invocation per process"."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        self.ops: list[Op] = []
        self._outstanding: dict[Any, Op] = {}
        self._pairs: tuple[int, list[tuple[Op, Op | None]]] | None = None  # (len(ops) then, pairs())

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    # -- recording ------------------------------------------------------------------------------------------------

    def _times(self, mono: float | None, wall: float | None) -> tuple[float | None, float | None]:
        if self.clock is not None:
            if mono is None:
                mono = self.clock.monotonic()
            if wall is None:
                wall = self.clock.wall_time()
        return mono, wall

    def invoke(
        self,
        process: Any,
        region: str | None,
        f: str,
        table: str | None = None,
        key: Any = None,
        value: Any = None,
        *,
        condition: Any = None,
        mono: float | None = None,
        wall: float | None = None,
    ) -> Op:
        """Record that `process` is about to send an operation; returns the invocation to complete later."""
        if process == NEMESIS:
            raise ValueError("the nemesis records faults with fault(), not invoke()")
        if process in self._outstanding:
            raise ValueError(f"process {process!r} already has an outstanding invocation {self._outstanding[process]}")
        mono, wall = self._times(mono, wall)
        op = Op(len(self.ops), INVOKE, process, region, f, table, key, value, None, None, mono, wall, condition)
        self.ops.append(op)
        self._outstanding[process] = op
        return op

    def complete(
        self,
        invocation: Op,
        type: str,
        *,
        value: Any = None,
        version: str | None = None,
        error: str | None = None,
        mono: float | None = None,
        wall: float | None = None,
    ) -> Op:
        if type not in COMPLETION_TYPES:
            raise ValueError(f"completion type must be one of ok, fail, info; got {type!r}")
        if self._outstanding.get(invocation.process) is not invocation:
            raise ValueError(f"{invocation} is not the outstanding invocation of process {invocation.process!r}")
        del self._outstanding[invocation.process]
        # A write's completion repeats the value it wrote, so each record stands alone in reports.
        if value is None and invocation.f in WRITE_FUNCTIONS:
            value = invocation.value
        mono, wall = self._times(mono, wall)
        op = Op(
            len(self.ops), type, invocation.process, invocation.region, invocation.f, invocation.table,
            invocation.key, value, version, error, mono, wall, invocation.condition,
        )
        self.ops.append(op)
        return op

    def ok(self, invocation: Op, *, value: Any = None, version: str | None = None, **times: Any) -> Op:
        return self.complete(invocation, OK, value=value, version=version, **times)

    def fail(self, invocation: Op, error: str, **times: Any) -> Op:
        return self.complete(invocation, FAIL, error=error, **times)

    def info(self, invocation: Op, error: str | None = None, **times: Any) -> Op:
        return self.complete(invocation, INFO, error=error, **times)

    def error(self, invocation: Op, error_type: str, **times: Any) -> Op:
        """Complete with an error, as fail or info by `completion_type_for_error`."""
        return self.complete(invocation, completion_type_for_error(error_type), error=error_type, **times)

    def fault(
        self,
        f: str,
        value: Any = None,
        region: str | None = None,
        *,
        mono: float | None = None,
        wall: float | None = None,
    ) -> Op:
        """Record a fault starting or ending (e.g. f="partition" / f="heal"), in the clients' timeline."""
        mono, wall = self._times(mono, wall)
        op = Op(len(self.ops), INFO, NEMESIS, region, f, None, None, value, None, None, mono, wall)
        self.ops.append(op)
        return op

    # -- reading ------------------------------------------------------------------------------------------------

    def outstanding(self) -> list[Op]:
        return sorted(self._outstanding.values(), key=lambda op: op.index)

    def pairs(self) -> list[tuple[Op, Op | None]]:
        """(invocation, completion or None) for every client operation, in invocation order. Every checker walks
        them: they are paired once per length of the (append-only) history, and each caller gets its own list."""
        if self._pairs is not None and self._pairs[0] == len(self.ops):
            return list(self._pairs[1])
        result: list[tuple[Op, Op | None]] = []
        slot_of: dict[Any, int] = {}
        for op in self.ops:
            if op.process == NEMESIS:
                continue
            if op.type == INVOKE:
                slot_of[op.process] = len(result)
                result.append((op, None))
            else:
                slot = slot_of.pop(op.process, None)
                if slot is None:
                    raise ValueError(f"{op} completes nothing: its process has no outstanding invocation")
                result[slot] = (result[slot][0], op)
        self._pairs = (len(self.ops), result)
        return list(result)

    def faults(self) -> list[Op]:
        return [op for op in self.ops if op.process == NEMESIS]

    # -- JSONL ----------------------------------------------------------------------------------------------------

    def dumps(self) -> bytes:
        return b"".join(orjson.dumps(op.to_dict(), option=orjson.OPT_APPEND_NEWLINE) for op in self.ops)

    def write_jsonl(self, path: str | Path) -> None:
        Path(path).write_bytes(self.dumps())

    @classmethod
    def from_ops(cls, ops: Iterable[Op]) -> History:
        history = cls()
        for op in ops:
            if op.index != len(history.ops):
                raise ValueError(f"history record {op.index} found at position {len(history.ops)}")
            history.ops.append(op)
            if op.process == NEMESIS:
                continue
            if op.type == INVOKE:
                history._outstanding[op.process] = op
            else:
                history._outstanding.pop(op.process, None)
        return history

    @classmethod
    def loads(cls, data: bytes) -> History:
        return cls.from_ops(Op.from_dict(orjson.loads(line)) for line in data.splitlines() if line.strip())

    @classmethod
    def read_jsonl(cls, path: str | Path) -> History:
        return cls.loads(Path(path).read_bytes())
