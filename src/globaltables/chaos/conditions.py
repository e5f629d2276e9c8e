"""The register condition of a conditional write, for the history's `condition` field (chaos/history.py).

A checker models an item as a register (its `value`, or no item); a ConditionExpression it can model is one that
asks only whether the item exists: `attribute_exists(a)` / `attribute_not_exists(a)` of an attribute every item
written has (a key attribute, or the register's own attribute). Those become {"exists": true|false}; anything else
is None: the checker then treats a ConditionalCheckFailed as having no effect and says nothing about it, which is
safe but blind. Placeholders (#name) are resolved through ExpressionAttributeNames.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_EXISTS = re.compile(r"^\s*(attribute_exists|attribute_not_exists)\s*\(\s*([#A-Za-z0-9_.\-]+)\s*\)\s*$")


def register_condition(
    expression: str | None, names: Mapping[str, str] | None, always_present: Iterable[str]
) -> dict[str, Any] | None:
    """{"exists": bool} for an existence test of an attribute in `always_present`, else None."""
    if not expression:
        return None
    match = _EXISTS.match(expression)
    if match is None:
        return None
    attribute = match.group(2)
    if attribute.startswith("#"):
        attribute = (names or {}).get(attribute, "")
    if attribute not in set(always_present):
        return None
    return {"exists": match.group(1) == "attribute_exists"}


def holds(condition: Mapping[str, Any], exists: bool) -> bool:
    """Whether a modelled condition holds of a register that does (`exists`) or does not hold an item."""
    return condition.get("exists") == exists


__all__ = ["holds", "register_condition"]
