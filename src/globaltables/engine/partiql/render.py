"""Resolved expression nodes back to expression text, every name and value a placeholder.

Why text: a PartiQL statement runs as the item operation it stands for (PutItem, UpdateItem, Query, ...), through
the operation's own request validation, expression resolution, conditions, indexes, capacity and (in a region)
replication and the strong-mode commit protocol. Those operations take expressions as text, so the planner writes
the statement's conditions and updates as ConditionExpression / UpdateExpression / KeyConditionExpression /
FilterExpression / ProjectionExpression text with `#nN` and `:vN` placeholders, which the expression grammar
resolves back into exactly these nodes.

Rules: every attribute name is a `#nN` placeholder (so reserved words and odd characters need no care), every
constant a `:vN` placeholder; parentheses only around an AND/OR that stands inside another operator (never doubled,
which the expression grammar refuses as redundant), and around the right operand of an AND under an AND (or OR
under OR), so the text parses back into the very tree it was written from.
"""

from __future__ import annotations

from typing import Any

from ..expressions.ast import (
    ADD,
    DELETE,
    REMOVE,
    SET,
    And,
    Arithmetic,
    Between,
    Comparison,
    FunctionCall,
    In,
    Not,
    Or,
    Path,
    Value,
)


class Placeholders:
    """The ExpressionAttributeNames and ExpressionAttributeValues of one request under construction."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._by_name: dict[str, str] = {}
        self.values: dict[str, dict] = {}

    def name(self, name: str) -> str:
        placeholder = self._by_name.get(name)
        if placeholder is None:
            placeholder = f"#n{len(self._by_name)}"
            self._by_name[name] = placeholder
            self.names[placeholder] = name
        return placeholder

    def value(self, value: dict) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def into(self, request: dict) -> dict:
        """`request` with the placeholders used so far (none: neither member, as DynamoDB refuses empty maps)."""
        if self.names:
            request["ExpressionAttributeNames"] = dict(self.names)
        if self.values:
            request["ExpressionAttributeValues"] = dict(self.values)
        return request


def path(node: Path, p: Placeholders) -> str:
    out = p.name(node.elements[0])
    for step in node.elements[1:]:
        out += f"[{step}]" if isinstance(step, int) else "." + p.name(step)
    return out


def operand(node: Any, p: Placeholders) -> str:
    kind = type(node)
    if kind is Path:
        return path(node, p)
    if kind is Value:
        return p.value(node.value)
    if kind is FunctionCall:
        return f"{node.name}({', '.join(operand(arg, p) for arg in node.args)})"
    if kind is Arithmetic:
        return f"{operand(node.left, p)} {node.op} {operand(node.right, p)}"
    raise AssertionError(f"not an operand: {node!r}")  # pragma: no cover - the parser builds nothing else


def condition(node: Any, p: Placeholders) -> str:
    kind = type(node)
    if kind is And or kind is Or:
        word = "AND" if kind is And else "OR"
        return f"{grouped(node.left, kind, p)} {word} {grouped(node.right, kind, p, right=True)}"
    if kind is Not:
        return f"NOT {grouped(node.condition, Not, p)}"
    if kind is Comparison:
        return f"{operand(node.left, p)} {node.op} {operand(node.right, p)}"
    if kind is Between:
        return f"{operand(node.operand, p)} BETWEEN {operand(node.lower, p)} AND {operand(node.upper, p)}"
    if kind is In:
        return f"{operand(node.operand, p)} IN ({', '.join(operand(c, p) for c in node.choices)})"
    if kind is FunctionCall:
        return operand(node, p)
    raise AssertionError(f"not a condition: {node!r}")  # pragma: no cover


def grouped(node: Any, parent: type, p: Placeholders, right: bool = False) -> str:
    """`node` as it stands under a `parent` operator: parenthesised when it binds more loosely, and as the right
    operand of its own kind (`a AND (b AND c)`), so the text parses back into exactly this tree."""
    text = condition(node, p)
    kind = type(node)
    # AND binds tighter than OR, NOT tighter than both; both are read left to right.
    if (kind is Or and parent is not Or) or (kind is And and parent is Not) or (right and kind is parent):
        return f"({text})"
    return text


def update(actions: tuple, p: Placeholders) -> str:
    """One UpdateExpression for the statement's actions, one clause per kind, actions in text order."""
    clauses: dict[str, list[str]] = {SET: [], REMOVE: [], ADD: [], DELETE: []}
    for action in actions:
        target = path(action.path, p)
        if action.kind == SET:
            clauses[SET].append(f"{target} = {operand(action.value, p)}")
        elif action.kind == REMOVE:
            clauses[REMOVE].append(target)
        else:
            clauses[action.kind].append(f"{target} {operand(action.value, p)}")
    return " ".join(f"{kind} {', '.join(parts)}" for kind, parts in clauses.items() if parts)


def projection(paths: tuple | list, p: Placeholders) -> str:
    return ", ".join(path(node, p) for node in paths)
