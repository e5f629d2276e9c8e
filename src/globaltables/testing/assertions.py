"""Predicates over items and the failure reports of the kit's assertions.

A report says what was expected, what each region last held, and the history records that touch the item (writes,
reads, their versions and errors) together with every fault in force — the operations a reader needs to see why
the expectation failed. Items are shown in plain JSON-ish form ({"status": "PAID"}), not the wire form.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import orjson

from ..chaos.history import History, Op, key_id
from .recording import touches

Predicate = Callable[[Any], bool]


def plain(value: Any) -> Any:
    """A wire-form attribute value (or item) as plain Python: {"S": "x"} -> "x", {"N": "1"} -> 1."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, inner), = value.items()
        if kind == "S" or kind == "B":
            return inner
        if kind == "N":
            number = Decimal(inner)
            return int(number) if number == number.to_integral_value() else float(number)
        if kind == "BOOL":
            return inner
        if kind == "NULL":
            return None
        if kind == "M":
            return {name: plain(v) for name, v in inner.items()}
        if kind == "L":
            return [plain(v) for v in inner]
        if kind in ("SS", "NS", "BS"):
            return sorted(plain({kind[0]: v}) for v in inner)
    if isinstance(value, dict):
        return {name: plain(v) for name, v in value.items()}
    return value


def has(**attributes: Any) -> Predicate:
    """A predicate: the item exists and each named attribute holds the plain value given (`has(status="PAID")`)."""

    def predicate(item: Any) -> bool:
        if item is None:
            return False
        values = plain(item)
        return all(name in values and values[name] == expected for name, expected in attributes.items())

    predicate.__doc__ = "item with " + ", ".join(f"{name}={value!r}" for name, value in attributes.items())
    return predicate


def attribute(name: str, item: Any) -> Any:
    """The plain value of one attribute of a wire-form item (None when the item or attribute is missing)."""
    if item is None or name not in item:
        return None
    return plain(item[name])


def absent(item: Any) -> bool:
    """A predicate: no item."""
    return item is None


absent.__doc__ = "no item"


def describe(predicate: Predicate) -> str:
    """Words for a predicate: its docstring (has(), absent), else its source line, else its name."""
    if predicate.__doc__:
        return predicate.__doc__.strip().splitlines()[0]
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):
        return getattr(predicate, "__name__", repr(predicate))


def show(value: Any) -> str:
    return orjson.dumps(plain(value), option=orjson.OPT_SORT_KEYS, default=str).decode()


def format_op(op: Op) -> str:
    when = f"t={op.mono:9.3f}s" if op.mono is not None else "t=?"
    if op.is_fault:
        detail = "" if op.value is None else f" {show(op.value)}"
        where = f" {op.region}" if op.region else ""
        return f"  {when} #{op.index:<4} FAULT {op.f}{where}{detail}"
    parts = [f"  {when} #{op.index:<4} {op.type:<6} {op.f:<7} @{op.region} p{op.process}"]
    if op.type == "invoke" and op.value is not None:
        parts.append(f"value={show(op.value)}")
    if op.type == "ok" and op.f in ("get",):
        parts.append(f"read={show(op.value) if op.value is not None else 'no item'}")
    if op.version:
        parts.append(f"version={op.version}")
    if op.error:
        parts.append(f"error={op.error}")
    return " ".join(parts)


def operations_report(history: History, table: str | None, key: dict, limit: int = 60) -> str:
    """The history records touching the item, and every fault, in order."""
    ops = [op for op in history.ops if op.is_fault or touches(op, table, key)]
    if not ops:
        return "  (no operations on this key were recorded by the kit's clients)"
    lines = [format_op(op) for op in ops[-limit:]]
    if len(ops) > limit:
        lines.insert(0, f"  ... {len(ops) - limit} earlier records omitted")
    return "\n".join(lines)


def eventually_failure(
    *,
    region: str,
    table: str,
    key: dict,
    predicate: Predicate,
    within: float,
    started: float,
    time_label: str,
    last: Any,
    states: dict[str, Any],
    history: History,
    seed: int | None,
) -> str:
    lines = [
        f"{region} did not see {table}[{key_id(plain(key))}] satisfy: {describe(predicate)}",
        f"  within {within:g} s ({time_label} {started:.3f}s .. {started + within:.3f}s)"
        + (f"; seed {seed} (rerun with --globaltables-seed {seed})" if seed is not None else ""),
        f"  last seen in {region}: {show(last) if last is not None else 'no item'}",
        "  every region now:",
    ]
    lines += [f"    {name}: {show(item) if item is not None else 'no item'}" for name, item in states.items()]
    lines.append("operations on this key (and faults), time relative to the start of the test:")
    lines.append(operations_report(history, table, key))
    return "\n".join(lines)


def converged_failure(differences: Iterable[str], history: History, seed: int | None, waited: float) -> str:
    lines = [f"regions did not converge within {waited:g} s" + (f" (seed {seed})" if seed is not None else "")]
    lines += [f"  {difference}" for difference in differences]
    lines.append("faults:")
    lines += [format_op(op) for op in history.faults()] or ["  (none)"]
    return "\n".join(lines)
