"""Applying a resolved UpdateExpression to an item.

Rules
- `apply_update` is a pure function of (update, item): it returns a new item and never mutates its input, sharing
  unchanged values with it. The same update may be applied again to another version of the item (a retried
  conditional write, a replica applying it), so nothing about one application may leak into the next.
- Every right-hand side is computed from the item as it was before the update: `SET a = b, b = a` swaps.
- List indexes refer to the list as it was: `REMOVE a[0], a[1]` removes the first two elements; `SET a[7] = :v`
  past the end appends (several such appends keep their index order); `REMOVE a[7]` past the end does nothing.
- A path whose parent does not exist, or whose parent is not a map (for `.name`) or a list (for `[i]`), is
  "The document path provided in the update expression is invalid for update".
- The item's own data can still be of the wrong type (`SET a = b + :one` with b a string): those errors, and
  arithmetic overflow, surface here; the caller has changed nothing yet, so the update stays atomic.
"""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Any

from ..errors import ValidationException, invalid_parameter
from ..values import MAX_DIGITS, MAX_NESTING_DEPTH, NESTING_TOO_DEEP, NUMBER_OVERFLOW, check_number, format_number
from .ast import ADD, DELETE, REMOVE, SET, Arithmetic, FunctionCall, Path, UpdateExpression, Value
from .evaluate import get_path
from .paths import PathNode
from .projection import project

INVALID_PATH = "The document path provided in the update expression is invalid for update"
MISSING_ATTRIBUTE = "The provided expression refers to an attribute that does not exist in the item"
INCORRECT_TYPE = "An operand in the update expression has an incorrect data type"

# Sums and differences are computed exactly, then checked: 1E+50 + 1 needs 51 digits and must be refused, not
# rounded back to 1E+50 (which values.NUMBER_CONTEXT's 40 digits would do). Two legal numbers span at most
# 38 + (125 + 130) + 1 digits, so this precision never rounds; Inexact is trapped to prove it.
EXACT_CONTEXT = decimal.Context(
    prec=400, Emax=999999, Emin=-999999, traps=[decimal.InvalidOperation, decimal.Inexact]
)


def apply_update(update: UpdateExpression, item: dict | None) -> tuple[dict, list[Path]]:
    """(the updated item, the paths the update acted on). `item` is left untouched."""
    old = item if item is not None else {}
    new = dict(old)
    for name, child in update.tree.members.items():
        result = _apply(child, old.get(name), old, 1)
        if result is None:
            new.pop(name, None)
        else:
            new[name] = result
    return new, update.paths


def updated_attribute_names(update: UpdateExpression) -> list[str]:
    """The distinct top-level attributes the update acts on, in text order."""
    return list(dict.fromkeys(action.path.root for action in update.actions))


def check_key_not_updated(update: UpdateExpression, key_names: tuple[str, ...] | list[str]) -> None:
    """Refuse an update touching a key attribute (of the table; index keys may be updated)."""
    for action in update.actions:
        if action.path.root in key_names:
            raise invalid_parameter(f"Cannot update attribute {action.path.root}. This attribute is part of the key")


def updated_attributes(update: UpdateExpression, old: dict | None, new: dict | None, which: str) -> dict:
    """The attributes ReturnValues=UPDATED_OLD / UPDATED_NEW returns: the updated paths, projected.

    UPDATED_OLD shows each acted-on path as it was, UPDATED_NEW as it is now. A removed attribute or map member is
    simply absent from UPDATED_NEW; a removed list element is not: DynamoDB shows the element that moved into its
    place, if there is one (REMOVE l[1] on [a, b, c] returns l: [c]).
    """
    if which == "UPDATED_OLD":
        return project(old, update.paths) if old else {}
    if not new:
        return {}
    return project(new, update.paths)


# ------------------------------------------------------------------------------------------------- application


def _apply(node: PathNode, old: dict | None, item: dict, depth: int) -> dict | None:
    """The new value at a node given its old value (None: missing). None as a result means 'absent'."""
    action = node.payload
    if action is not None:
        return _act(action, old, item, depth)
    if node.members is not None:
        if old is None or "M" not in old:
            raise ValidationException(INVALID_PATH)
        members = dict(old["M"])
        for name, child in node.members.items():
            result = _apply(child, members.get(name), item, depth + 1)
            if result is None:
                members.pop(name, None)
            else:
                members[name] = result
        return {"M": members}
    if old is None or "L" not in old:
        raise ValidationException(INVALID_PATH)
    entries = old["L"]
    length = len(entries)
    updated = list(entries)
    removed = None
    appended = []
    for index in sorted(node.indexes):
        child = node.indexes[index]
        if index < length:
            result = _apply(child, entries[index], item, depth + 1)
            if result is None:
                removed = removed or set()
                removed.add(index)
            else:
                updated[index] = result
        else:
            result = _apply(child, None, item, depth + 1)
            if result is not None:
                appended.append(result)
    if removed:
        updated = [entry for i, entry in enumerate(updated) if i not in removed]
    updated.extend(appended)
    return {"L": updated}


def _act(action: Any, old: dict | None, item: dict, depth: int) -> dict | None:
    kind = action.kind
    if kind == SET:
        value = _value(action.value, item)
        if depth > 1 and ("M" in value or "L" in value) and _depth(value) + depth - 1 > MAX_NESTING_DEPTH:
            raise ValidationException(NESTING_TOO_DEEP)
        return value
    if kind == REMOVE:
        return None
    operand = action.value.value
    operand_kind = next(iter(operand))
    if kind == ADD:
        if old is None:
            return operand
        old_kind = next(iter(old))
        if old_kind != operand_kind:
            raise ValidationException(INCORRECT_TYPE)
        if operand_kind == "N":
            return _number(EXACT_CONTEXT.add(Decimal(old["N"]), Decimal(operand["N"])))
        present = set(old[old_kind])
        return {old_kind: old[old_kind] + [e for e in operand[operand_kind] if e not in present]}
    if kind == DELETE:
        if old is None:
            return None
        old_kind = next(iter(old))
        if old_kind != operand_kind:
            raise ValidationException(INCORRECT_TYPE)
        gone = set(operand[operand_kind])
        remaining = [e for e in old[old_kind] if e not in gone]
        return {old_kind: remaining} if remaining else None
    raise AssertionError(f"unknown action {kind}")


def _value(node: Any, item: dict) -> dict:
    """A SET right-hand side, computed from the item as it was before the update."""
    kind = type(node)
    if kind is Value:
        return node.value
    if kind is Path:
        value = get_path(item, node)
        if value is None:
            raise ValidationException(MISSING_ATTRIBUTE)
        return value
    if kind is Arithmetic:
        left = _value(node.left, item)
        right = _value(node.right, item)
        if "N" not in left or "N" not in right:
            raise ValidationException(INCORRECT_TYPE)
        a, b = Decimal(left["N"]), Decimal(right["N"])
        return _number(EXACT_CONTEXT.add(a, b) if node.op == "+" else EXACT_CONTEXT.subtract(a, b))
    if kind is FunctionCall:
        if node.name == "if_not_exists":
            value = get_path(item, node.args[0])
            return value if value is not None else _value(node.args[1], item)
        if node.name == "list_append":
            first = _value(node.args[0], item)
            second = _value(node.args[1], item)
            if "L" not in first or "L" not in second:
                raise ValidationException(INCORRECT_TYPE)
            return {"L": first["L"] + second["L"]}
    raise AssertionError(f"not an update operand: {node!r}")


def _number(value: Decimal) -> dict:
    """The result of update arithmetic (SET a = x + y, ADD): one needing more than 38 significant digits is refused
    as an overflow, as DynamoDB words it, not as the 38-digit error a number in the request gets."""
    if not value.is_zero() and len(value.normalize(EXACT_CONTEXT).as_tuple().digits) > MAX_DIGITS:
        raise ValidationException(NUMBER_OVERFLOW)
    return {"N": format_number(check_number(value))}


def _depth(value: dict) -> int:
    """Nesting levels of a value: 1 for a map or list of scalars."""
    ((kind, inner),) = value.items()
    if kind == "M":
        return 1 + max((_depth(v) for v in inner.values()), default=0)
    if kind == "L":
        return 1 + max((_depth(v) for v in inner), default=0)
    return 0

