"""KeyConditionExpression: the condition grammar, resolved as usual, then checked against a key schema.

What DynamoDB accepts: `hash = :v`, optionally AND one condition on the sort key (`=`, `<`, `<=`, `>`, `>=`,
`BETWEEN :a AND :b`, `begins_with(sort, :p)`), parenthesised freely (but not redundantly). OR, NOT, IN, `<>` and
the other functions are refused, as is any condition on a nested path, on an attribute outside the key, or a
second condition on one key. A constant on the left (`:v = hash`) is read as its mirror image.

Messages from the expression text itself carry "Invalid KeyConditionExpression: "; the checks against the key
schema use DynamoDB's own query-planner wording ("Query condition missed key schema element: id").

A GSI with a multi-attribute key (DynamoDB's developerguide, GSI.html#GSI.MultiAttributeKeys and
GSI.DesignPattern.MultiAttributeKeys.html) takes:
- an equality on every HASH attribute (missing one, or any other operator on one, is refused);
- conditions on a left prefix of its RANGE attributes, in key-schema order and without gaps: equalities on all but
  the last, which may also be `<`, `<=`, `>`, `>=`, BETWEEN or begins_with. Nothing may follow an inequality.
The order of the clauses in the text does not matter, only the positions of their attributes in the key schema.
`match_schema` applies the same rules to legacy KeyConditions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ValidationException, invalid_parameter
from ..schema import KeySchema, check_key_not_empty
from ..values import compare_scalars
from .ast import And, Between, Comparison, FunctionCall, In, Not, Or, Path
from .evaluate import begins_with
from .parser import CONDITION
from .resolve import ExpressionContext, Resolver, syntax_of

KIND = "KeyConditionExpression"
_MIRRORED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# The multi-attribute key rules, as the messages that refuse a condition state them.
HASH_RULE = "every HASH key attribute of a multi-attribute key needs an equality condition"
RANGE_RULE = (
    "conditions on RANGE key attributes must follow their key schema order without gaps, with an equality "
    "condition on every one but the last"
)


@dataclass(frozen=True, slots=True)
class KeyCondition:
    """A validated key condition: the partition key value and at most one sort key condition.

    For a multi-attribute key, `hash_values` holds every HASH attribute's value in key-schema order, `sort_prefix`
    the values of the RANGE attributes compared for equality before `sort_name`, whose condition is the last one.
    """

    hash_name: str
    hash_value: dict
    sort_name: str | None = None
    sort_op: str | None = None  # '=', '<', '<=', '>', '>=', 'BETWEEN', 'BEGINS_WITH'
    sort_values: list = field(default_factory=list)
    hash_values: tuple = ()
    sort_prefix: tuple = ()

    def matches_sort(self, value: dict | None) -> bool:
        """Whether a sort key value satisfies the sort condition (True when there is none)."""
        op = self.sort_op
        if op is None:
            return True
        if value is None:
            return False
        if op == "BEGINS_WITH":
            return begins_with(value, self.sort_values[0])
        first = compare_scalars(value, self.sort_values[0])
        if first is None:
            return False
        if op == "=":
            return first == 0
        if op == "<":
            return first < 0
        if op == "<=":
            return first <= 0
        if op == ">":
            return first > 0
        if op == ">=":
            return first >= 0
        second = compare_scalars(value, self.sort_values[1])
        return first >= 0 and second is not None and second <= 0


def parse_key_condition(text: str, ctx: ExpressionContext, key: KeySchema) -> KeyCondition:
    syntax = syntax_of(CONDITION, text, KIND)
    resolver = Resolver(ctx)
    tree = resolver.condition(syntax.tree)
    resolver.raise_first(syntax, KIND)
    conditions: list[tuple[str, str, list[dict]]] = []
    _collect(tree, conditions)
    return match_schema(conditions, key)


def _operator_error(name: str) -> ValidationException:
    return ValidationException(f"Invalid operator used in KeyConditionExpression: {name}")


def _collect(node: Any, out: list) -> None:
    """Flatten the ANDs into (attribute, operator, values) triples, refusing what a key condition cannot hold."""
    kind = type(node)
    if kind is And:
        _collect(node.left, out)
        _collect(node.right, out)
    elif kind is Or:
        raise _operator_error("OR")
    elif kind is Not:
        raise _operator_error("NOT")
    elif kind is In:
        raise _operator_error("IN")
    elif kind is Comparison:
        if node.op == "<>":
            raise _operator_error("<>")
        left, right = node.left, node.right
        for side in (left, right):
            if type(side) is FunctionCall:
                raise _operator_error(side.name)
        op = node.op
        if type(left) is not Path:
            left, right, op = right, left, _MIRRORED[op]
        _add(out, left, op, [right])
    elif kind is Between:
        for side in (node.operand, node.lower, node.upper):
            if type(side) is FunctionCall:
                raise _operator_error(side.name)
        _add(out, node.operand, "BETWEEN", [node.lower, node.upper])
    elif kind is FunctionCall:
        if node.name != "begins_with":
            raise _operator_error(node.name)
        _add(out, node.args[0], "BEGINS_WITH", [node.args[1]])
    else:  # pragma: no cover - the parser produces nothing else
        raise AssertionError(f"unexpected key condition node {node!r}")


def _add(out: list, target: Any, op: str, operands: list) -> None:
    if type(target) is not Path:
        raise ValidationException("Invalid condition in KeyConditionExpression: No key attribute specified")
    if any(type(operand) is Path for operand in operands):
        raise ValidationException(
            "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"
        )
    if len(target.elements) > 1:
        raise ValidationException("KeyConditionExpressions cannot have conditions on nested attributes")
    out.append((target.root, op, [operand.value for operand in operands]))


def match_schema(conditions: list[tuple[str, str, list[dict]]], key: KeySchema) -> KeyCondition:
    """The KeyCondition of (attribute, operator, values) triples against the queried key schema."""
    by_name: dict[str, tuple[str, list[dict]]] = {}
    for name, op, values in conditions:
        if name in by_name:
            raise ValidationException("KeyConditionExpressions must only contain one condition per key")
        by_name[name] = (op, values)
    if key.multi_attribute:
        return _match_multi_attribute(by_name, key)
    if key.hash_name not in by_name:
        raise ValidationException(f"Query condition missed key schema element: {key.hash_name}")
    if any(name not in key.names for name in by_name):
        if key.range_name is not None and key.range_name not in by_name:
            raise ValidationException(f"Query condition missed key schema element: {key.range_name}")
        raise ValidationException("Query key condition not supported")
    hash_op, (hash_value, *_) = by_name[key.hash_name]
    if hash_op != "=":
        raise ValidationException("Query key condition not supported")
    _check_value(key.hash_name, key.hash_type, hash_value)
    if key.range_name is None or key.range_name not in by_name:
        return KeyCondition(key.hash_name, hash_value)
    sort_op, sort_values = by_name[key.range_name]
    for value in sort_values:
        _check_value(key.range_name, key.range_type, value)
    return KeyCondition(key.hash_name, hash_value, key.range_name, sort_op, list(sort_values))


def _match_multi_attribute(by_name: dict[str, tuple[str, list[dict]]], key: KeySchema) -> KeyCondition:
    hash_values = []
    for name, kind in key.hash_parts:
        if name not in by_name:
            raise ValidationException(f"Query condition missed key schema element: {name}; {HASH_RULE}")
        op, (value, *_) = by_name[name]
        if op != "=":
            raise ValidationException(f"Query key condition not supported: {HASH_RULE}; {name} is compared with {op}")
        _check_value(name, kind, value)
        hash_values.append(value)
    names = key.names
    if any(name not in names for name in by_name):
        raise ValidationException("Query key condition not supported")
    range_parts = key.range_parts
    used = [(position, name, kind) for position, (name, kind) in enumerate(range_parts) if name in by_name]
    for count, (position, name, _kind) in enumerate(used):
        if position != count:
            skipped = range_parts[count][0]
            raise ValidationException(
                f"Query key condition not supported: {RANGE_RULE}; {name} is used without {skipped}"
            )
        op = by_name[name][0]
        if op != "=" and count < len(used) - 1:
            raise ValidationException(
                f"Query key condition not supported: {RANGE_RULE}; {name} is compared with {op} and is not the last"
            )
    for _position, name, kind in used:
        op, values = by_name[name]
        for value in values:
            _check_value(name, kind, value)
        if op == "BEGINS_WITH" and kind == "N":
            raise ValidationException(
                "Invalid KeyConditionExpression: Incorrect operand type for operator or function; "
                f"operator or function: begins_with, operand type: {kind}"
            )
    hash_name, hash_value = key.hash_name, hash_values[0]
    if not used:
        return KeyCondition(hash_name, hash_value, hash_values=tuple(hash_values))
    *prefix, (_position, sort_name, _kind) = used
    sort_op, sort_values = by_name[sort_name]
    return KeyCondition(
        hash_name,
        hash_value,
        sort_name,
        sort_op,
        list(sort_values),
        tuple(hash_values),
        tuple(by_name[name][1][0] for _p, name, _k in prefix),
    )


def _check_value(name: str, key_type: str, value: dict) -> None:
    if next(iter(value)) != key_type:
        raise invalid_parameter("Condition parameter type does not match schema type")
    check_key_not_empty(name, value)
