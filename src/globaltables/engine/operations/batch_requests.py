"""The `RequestItems` map of BatchGetItem and BatchWriteItem: its shape and constraint checks.

DynamoDB validates the whole request before it looks at any table, and reports every constraint violation together
("2 validation errors detected: ..."), in this order: the top-level fields, then the map itself (not null, not
empty, each table name, each table's list length), then what each table's entry holds. Table names in the map are
checked against the table-name constraints; a name that breaks them is reported once per name, listing all of the
constraints, as DynamoDB does for map keys.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SerializationException
from ..validation import (
    MAX_REPORTED_ERRORS,
    TABLE_NAME_PATTERN,
    Field,
    _check_value,
    camel,
    check_element,
    constraint_error,
    shown_json,
)

_TABLE_NAME = re.compile(TABLE_NAME_PATTERN)
MAP_KEYS_CONSTRAINT = (
    "Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
    "Member must have length greater than or equal to 3, Member must satisfy regular expression pattern: "
    f"{TABLE_NAME_PATTERN}]"
)


def render(value: Any) -> str:
    """A value as DynamoDB's (Java) messages print it: {name=[...], ...}."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) if isinstance(v, list) else shown_json(v) for v in value) + "]"
    return str(value)


def check_request_items(
    request: dict, fields: dict[str, Field], entry: Field, list_limit: int | None = None
) -> dict[str, Any]:
    """Validate `request` (top-level `fields`, then RequestItems whose values are `entry`); the RequestItems map.

    `list_limit` is BatchWriteItem's bound on each table's list of requests (1..25), reported as a map-value
    constraint.
    """
    items = request.get("RequestItems")
    if items is not None and not isinstance(items, dict):
        raise SerializationException("Unexpected value type for 'requestItems': expected map")
    nested: list[str] = []
    if items:
        # Type errors anywhere inside are SerializationExceptions and win over every constraint message.
        for name, value in items.items():
            check_element(value, entry, f"requestItems.{name}.member", nested)
    errors: list[str] = []
    for name, f in fields.items():
        _check_value(request.get(name), f, f.wire_name or camel(name), errors)
    if items is None:
        errors.append("Value null at 'requestItems' failed to satisfy constraint: Member must not be null")
    else:
        problems = []  # rendering the map is costly: only for a request that is refused
        if not items:
            problems.append("Member must have length greater than or equal to 1")
        for name in items:
            if not (3 <= len(name) <= 255 and _TABLE_NAME.fullmatch(name)):
                problems.append(MAP_KEYS_CONSTRAINT)
        if list_limit is not None:
            for value in items.values():
                if isinstance(value, list) and not 1 <= len(value) <= list_limit:
                    problems.append(
                        f"Map value must satisfy constraint: [Member must have length less than or equal to "
                        f"{list_limit}, Member must have length greater than or equal to 1]"
                    )
        if problems:
            shown = render(items)
            errors.extend(f"Value '{shown}' at 'requestItems' failed to satisfy constraint: {p}" for p in problems)
    errors.extend(nested)
    if errors:
        raise constraint_error(errors[:MAX_REPORTED_ERRORS])
    return items
