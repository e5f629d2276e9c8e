"""Evaluation of resolved conditions and filters against an item (or no item at all).

Rules (DynamoDB's): a path that does not resolve is "missing"; a comparison or function involving a missing value
is false (`<>` is true unless both sides exist and are equal); values of different types are never equal and never
ordered; `<`, `<=`, `>`, `>=`, BETWEEN order S, N and B only. Evaluation never raises: everything that could be
wrong with the request itself was reported during resolution.
"""

from __future__ import annotations

import base64
from typing import Any

from ..values import compare_scalars, values_equal
from .ast import And, Between, Comparison, FunctionCall, In, Not, Or, Path, Value


def get_path(item: dict, path: Path) -> dict | None:
    """The value at `path` in `item`, or None when any step is missing or of the wrong kind."""
    elements = path.elements
    value = item.get(elements[0])
    for i in range(1, len(elements)):
        if value is None:
            return None
        step = elements[i]
        if type(step) is str:
            members = value.get("M")
            value = None if members is None else members.get(step)
        else:
            entries = value.get("L")
            value = entries[step] if entries is not None and step < len(entries) else None
    return value


def operand_value(node: Any, item: dict) -> dict | None:
    kind = type(node)
    if kind is Value:
        return node.value
    if kind is Path:
        return get_path(item, node)
    if kind is FunctionCall and node.name == "size":
        return size_of(operand_value(node.args[0], item))
    return None


def size_of(value: dict | None) -> dict | None:
    """size(): characters of a string, bytes of a binary, elements of a set, list or map; else no value."""
    if value is None:
        return None
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"N": str(len(base64.b64decode(inner)))}
    if kind in ("S", "SS", "NS", "BS", "L", "M"):
        return {"N": str(len(inner))}
    return None


def evaluate_condition(condition: Any, item: dict | None) -> bool:
    """True when `item` (None: no item) satisfies the resolved condition."""
    return _evaluate(condition, item if item is not None else {})


def _evaluate(node: Any, item: dict) -> bool:
    return _EVALUATORS[type(node)](node, item)


def _and(node: And, item: dict) -> bool:
    return _evaluate(node.left, item) and _evaluate(node.right, item)


def _or(node: Or, item: dict) -> bool:
    return _evaluate(node.left, item) or _evaluate(node.right, item)


def _not(node: Not, item: dict) -> bool:
    return not _evaluate(node.condition, item)


def _comparison(node: Comparison, item: dict) -> bool:
    left = operand_value(node.left, item)
    right = operand_value(node.right, item)
    op = node.op
    if op == "=":
        return left is not None and right is not None and values_equal(left, right)
    if op == "<>":
        return left is None or right is None or not values_equal(left, right)
    if left is None or right is None:
        return False
    order = compare_scalars(left, right)
    if order is None:
        return False
    if op == "<":
        return order < 0
    if op == "<=":
        return order <= 0
    if op == ">":
        return order > 0
    return order >= 0


def _between(node: Between, item: dict) -> bool:
    value = operand_value(node.operand, item)
    lower = operand_value(node.lower, item)
    upper = operand_value(node.upper, item)
    if value is None or lower is None or upper is None:
        return False
    above = compare_scalars(lower, value)
    below = compare_scalars(value, upper)
    return above is not None and below is not None and above <= 0 and below <= 0


def _in(node: In, item: dict) -> bool:
    value = operand_value(node.operand, item)
    if value is None:
        return False
    for choice in node.choices:
        candidate = operand_value(choice, item)
        if candidate is not None and values_equal(value, candidate):
            return True
    return False


def _function(node: FunctionCall, item: dict) -> bool:
    return _FUNCTIONS[node.name](node.args, item)


def _attribute_exists(args: tuple, item: dict) -> bool:
    return operand_value(args[0], item) is not None


def _attribute_not_exists(args: tuple, item: dict) -> bool:
    return operand_value(args[0], item) is None


def _attribute_type(args: tuple, item: dict) -> bool:
    value = operand_value(args[0], item)
    wanted = operand_value(args[1], item)
    if value is None or wanted is None or "S" not in wanted:
        return False
    return next(iter(value)) == wanted["S"]


def _begins_with(args: tuple, item: dict) -> bool:
    return begins_with(operand_value(args[0], item), operand_value(args[1], item))


def begins_with(value: dict | None, prefix: dict | None) -> bool:
    """S begins with S, or B with B (by bytes); anything else, or a missing value, does not."""
    if value is None or prefix is None:
        return False
    if "S" in value and "S" in prefix:
        return value["S"].startswith(prefix["S"])
    if "B" in value and "B" in prefix:
        return base64.b64decode(value["B"]).startswith(base64.b64decode(prefix["B"]))
    return False


def _contains(args: tuple, item: dict) -> bool:
    container = operand_value(args[0], item)
    element = operand_value(args[1], item)
    if container is None or element is None:
        return False
    ((kind, inner),) = container.items()
    ((element_kind, element_inner),) = element.items()
    if kind == "S":
        return element_kind == "S" and element_inner in inner
    if kind == "B":
        return element_kind == "B" and base64.b64decode(element_inner) in base64.b64decode(inner)
    if kind == "L":
        return any(values_equal(entry, element) for entry in inner)
    if kind in ("SS", "NS", "BS"):
        # Set elements and constants are normalised (canonical number text, canonical base64), so text is identity.
        return element_kind == kind[0] and element_inner in inner
    return False


_FUNCTIONS = {
    "attribute_exists": _attribute_exists,
    "attribute_not_exists": _attribute_not_exists,
    "attribute_type": _attribute_type,
    "begins_with": _begins_with,
    "contains": _contains,
}

_EVALUATORS = {
    And: _and,
    Or: _or,
    Not: _not,
    Comparison: _comparison,
    Between: _between,
    In: _in,
    FunctionCall: _function,
}


def condition_paths(node: Any) -> list[Path]:
    """Every document path a resolved condition reads, in text order (e.g. to refuse key attributes in a filter)."""
    found: list[Path] = []
    _collect(node, found)
    return found


def _collect(node: Any, found: list[Path]) -> None:
    kind = type(node)
    if kind is Path:
        found.append(node)
    elif kind in (And, Or):
        _collect(node.left, found)
        _collect(node.right, found)
    elif kind is Not:
        _collect(node.condition, found)
    elif kind is Comparison:
        _collect(node.left, found)
        _collect(node.right, found)
    elif kind is Between:
        _collect(node.operand, found)
        _collect(node.lower, found)
        _collect(node.upper, found)
    elif kind is In:
        _collect(node.operand, found)
        for choice in node.choices:
            _collect(choice, found)
    elif kind is FunctionCall:
        for arg in node.args:
            _collect(arg, found)
