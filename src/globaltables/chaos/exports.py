"""Histories in the JSON that other checkers read, so a user can check our verdicts with their tools.

- Elle (through elle-cli, `--model list-append` or `--model rw-register`): an array of operation maps
  `{index, type, process, f: "txn", value: [[f, key, v]], time}` as elle-cli's README and JSON test histories show
  them. A list-append history exports `append` as `[["append", k, e]]` and reads as `[["r", k, [e...]]]`; any other
  history exports puts and updates as `[["w", k, v]]` and GetItem reads as `[["r", k, v]]` (rw-register; deletes
  have no rw-register form and are left out with their completions). Elle wants integers: keys and values are
  numbered in order of first appearance, and `map` (written beside the export) turns them back into ours.
- Porcupine: an array of `{ClientId, Input: {Op, Key, Value}, Call, Output: {Value, Found}, Return}`, Porcupine's
  Operation type with a key-value model's input and output (times in nanoseconds). An operation whose outcome is
  unknown (info) returns after every other event with `Output: {"Unknown": true}`, so a model can let it take
  effect at any point or never; fail operations and reads that failed are left out.
Keys the caller marks as not part of the workload (`exclude`: the experiment's lag probe keys) are left out of both. Both formats have a
JSON Schema (chaos/schemas/) written from the tools' documented formats; `validate_elle` adds the rules a schema
cannot say (indexes in order, one operation in flight per process, completions repeating their invocation).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .history import FAIL, INFO, INVOKE, OK, History, Op, key_id

SCHEMAS = Path(__file__).parent / "schemas"
ELLE_SCHEMA = SCHEMAS / "elle-history.schema.json"
PORCUPINE_SCHEMA = SCHEMAS / "porcupine-operations.schema.json"
REGISTER_WRITES = {"put": "w", "update": "w"}
REGISTER_READS = ("get", "strong_get")
LIST_READS = ("read", "strong_read")


KeyFilter = Callable[[Any], bool]


def _workload_ops(history: History, exclude: KeyFilter | None) -> list[tuple[Op, Op | None]]:
    return [(i, c) for i, c in history.pairs() if exclude is None or not exclude(i.key)]


class _Numbers:
    """Our keys and values as the small integers Elle wants, in order of first appearance."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.values: dict[str, int] = {}

    def key(self, op: Op) -> int:
        return self.keys.setdefault(f"{op.table}|{key_id(op.key)}", len(self.keys))

    def value(self, value: Any) -> int:
        return self.values.setdefault(key_id(value), len(self.values) + 1)

    def mapping(self) -> dict[str, Any]:
        return {"keys": {n: k for k, n in self.keys.items()}, "values": {n: v for v, n in self.values.items()}}


def to_elle(history: History, exclude: KeyFilter | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(operations, mapping): the history for elle-cli and how its integers map back to our keys and values."""
    pairs = _workload_ops(history, exclude)
    lists = any(invocation.f == "append" for invocation, _ in pairs)
    numbers = _Numbers()
    processes: dict[Any, int] = {}
    start = min((op.mono for i, c in pairs for op in (i, c) if op is not None and op.mono is not None), default=0.0)
    events: list[tuple[int, dict[str, Any]]] = []
    for invocation, completion in pairs:
        f = invocation.f
        if lists and f == "append":
            mop = ["append", numbers.key(invocation), numbers.value(invocation.value)]
            done_mop = mop
        elif lists and f in LIST_READS:
            mop = ["r", numbers.key(invocation), None]
            read = completion.value if completion is not None and completion.type == OK else None
            done_mop = ["r", mop[1], None if read is None else [numbers.value(e) for e in read]]
        elif not lists and f in REGISTER_WRITES:
            mop = ["w", numbers.key(invocation), numbers.value(invocation.value)]
            done_mop = mop
        elif not lists and f in REGISTER_READS:
            mop = ["r", numbers.key(invocation), None]
            read = completion.value if completion is not None and completion.type == OK else None
            done_mop = ["r", mop[1], None if read is None else numbers.value(read)]
        else:
            continue  # deletes, queries: no form in these models
        process = processes.setdefault(invocation.process, len(processes))
        events.append((invocation.index, _elle_op(INVOKE, process, [mop], invocation, start)))
        if completion is not None:
            events.append((completion.index, _elle_op(completion.type, process, [done_mop], completion, start)))
    events.sort(key=lambda pair: pair[0])
    operations = []
    for index, (_, op) in enumerate(events):
        operations.append({"index": index, **op})
    return operations, {"model": "list-append" if lists else "rw-register", **numbers.mapping()}


def _elle_op(kind: str, process: int, value: list, op: Op, start: float) -> dict[str, Any]:
    record: dict[str, Any] = {"type": kind, "process": process, "f": "txn", "value": value}
    if op.mono is not None:
        record["time"] = max(0, int(round((op.mono - start) * 1e9)))
    return record


def to_porcupine(history: History, exclude: KeyFilter | None = None) -> list[dict[str, Any]]:
    """Porcupine Operations: every ok operation, and every info write (unknown outcome, returning last)."""
    pairs = _workload_ops(history, exclude)
    times = [op.mono for i, c in pairs for op in (i, c) if op is not None and op.mono is not None]
    start = min(times, default=0.0)
    never = int(round((max(times, default=0.0) - start) * 1e9)) + 1
    clients: dict[Any, int] = {}
    operations = []
    for invocation, completion in pairs:
        f = invocation.f
        kind = completion.type if completion is not None else INFO
        if kind == FAIL or invocation.mono is None:
            continue
        write = f in ("put", "update", "delete", "append")
        if not write and kind != OK:
            continue  # a read that failed or timed out says nothing
        op_name = {"put": "put", "update": "put", "delete": "delete", "append": "append", "get": "get",
                   "strong_get": "get", "read": "read", "strong_read": "read"}.get(f)  # fmt: skip
        if op_name is None:
            continue
        call = int(round((invocation.mono - start) * 1e9))
        if kind == OK and completion is not None and completion.mono is not None:
            returned = max(call, int(round((completion.mono - start) * 1e9)))
            value = None if write else completion.value
            output: dict[str, Any] = {"Value": value, "Found": value is not None} if not write else {}
        else:
            returned, output = never, {"Unknown": True}
        operations.append({
            "ClientId": clients.setdefault(invocation.process, len(clients)),
            "Input": {"Op": op_name, "Key": f"{invocation.table}|{key_id(invocation.key)}",
                      "Value": None if f == "delete" or not write else invocation.value},
            "Call": call, "Output": output, "Return": returned,
        })  # fmt: skip
    return operations


def validate_elle(operations: list[dict[str, Any]]) -> list[str]:
    """What elle-cli's history reader requires beyond the schema; empty when the history is well formed."""
    problems = []
    open_ops: dict[int, dict[str, Any]] = {}
    for position, op in enumerate(operations):
        if op["index"] != position:
            problems.append(f"operation {position}: index {op['index']}, expected {position}")
        process = op["process"]
        if op["type"] == INVOKE:
            if process in open_ops:
                problems.append(f"operation {position}: process {process} invoked again before completing")
            open_ops[process] = op
            continue
        invoked = open_ops.pop(process, None)
        if invoked is None:
            problems.append(f"operation {position}: process {process} completes nothing")
        elif [m[:2] for m in invoked["value"]] != [m[:2] for m in op["value"]]:
            problems.append(f"operation {position}: completion's micro-operations differ from the invocation's")
        elif any(m[0] != "r" and m != n for m, n in zip(invoked["value"], op["value"], strict=True)):
            problems.append(f"operation {position}: a write's completion changed its value")
    return problems


def write_exports(out_dir: Path, history: History, exclude: KeyFilter | None = None) -> None:
    """history.elle.json (+ history.elle.map.json) and history.porcupine.json beside history.jsonl."""
    out_dir = Path(out_dir)
    operations, mapping = to_elle(history, exclude)
    (out_dir / "history.elle.json").write_text(json.dumps(operations, separators=(",", ":")) + "\n")
    (out_dir / "history.elle.map.json").write_text(json.dumps(mapping, separators=(",", ":")) + "\n")
    (out_dir / "history.porcupine.json").write_text(json.dumps(to_porcupine(history, exclude), separators=(",", ":")) + "\n")


def schema(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
