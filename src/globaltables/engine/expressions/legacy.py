"""The legacy (pre-expression) parameters, translated into the trees the expression package evaluates.

Expected + ConditionalOperator        -> a condition (as ConditionExpression)
QueryFilter / ScanFilter             -> a condition (as FilterExpression)
KeyConditions                        -> a KeyCondition (as KeyConditionExpression)
AttributesToGet                      -> a Projection (as ProjectionExpression)
AttributeUpdates                     -> an UpdateExpression (as UpdateExpression), plus a type check

There is one evaluator: a legacy request behaves exactly like the expression request it translates to. The
translations, where the legacy operator is not an expression operator of the same meaning:
- NULL / NOT_NULL, and Exists: false / Exists: true -> attribute_not_exists / attribute_exists;
- NOT_CONTAINS -> attribute_exists(a) AND NOT contains(a, v): a missing attribute does not satisfy NOT_CONTAINS;
- AttributeUpdates PUT -> SET a = v; DELETE without a value -> REMOVE a; DELETE with a set -> DELETE a v;
  ADD of a number or set -> ADD a v; ADD of a list (legacy only) -> SET a = list_append(if_not_exists(a, []), v).
Legacy names are literal attribute names: "a.b" is one top-level attribute, never a document path.

Messages follow DynamoDB as dynalite records them (validations/index.js, actions/query.js, actions/updateItem.js).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ValidationException, invalid_parameter
from ..schema import KeySchema, check_key_not_empty
from ..validation import Bool, Field, List, Map, Str, Struct, check_request
from ..values import check_attribute_name, compare_scalars, normalize_value
from .ast import (
    ADD,
    DELETE,
    REMOVE,
    SET,
    And,
    Between,
    Comparison,
    FunctionCall,
    In,
    Not,
    Or,
    Path,
    Projection,
    UpdateAction,
    UpdateExpression,
    Value,
)
from .key_condition import KeyCondition
from .paths import build_tree

# --------------------------------------------------------------------------------------------- request fields

# DynamoDB prints enum sets in its own (hash) order; these are the orders its messages show.
COMPARISON_OPERATORS = ("EQ", "NE", "IN", "LE", "LT", "GE", "GT", "BETWEEN", "NOT_NULL", "NULL", "CONTAINS",
                        "NOT_CONTAINS", "BEGINS_WITH")  # fmt: skip
COMPARISON_OPERATOR_ORDER = ("IN", "NULL", "BETWEEN", "LT", "NOT_CONTAINS", "EQ", "GT", "NOT_NULL", "NE", "LE",
                             "BEGINS_WITH", "GE", "CONTAINS")  # fmt: skip

CONDITIONAL_OPERATOR = Str(enum=("AND", "OR"), enum_order=("OR", "AND"))
ATTRIBUTES_TO_GET = List(Str(), min_length=1, max_length=255)
EXPECTED = Map(
    Struct(
        {
            "Value": Field(type="any"),
            "Exists": Bool(),
            "ComparisonOperator": Str(enum=COMPARISON_OPERATORS, enum_order=COMPARISON_OPERATOR_ORDER),
            "AttributeValueList": List(Field(type="any")),
        }
    )
)
CONDITIONS = Map(
    Struct(
        {
            "AttributeValueList": List(Field(type="any")),
            "ComparisonOperator": Str(required=True, enum=COMPARISON_OPERATORS, enum_order=COMPARISON_OPERATOR_ORDER),
        }
    )
)
ATTRIBUTE_UPDATES = Map(Struct({"Value": Field(type="any"), "Action": Str(enum=("ADD", "PUT", "DELETE"))}))

# The legacy fields of each operation's request, checked by `check_fields`.
WRITE_FIELDS: dict[str, Field] = {"Expected": EXPECTED, "ConditionalOperator": CONDITIONAL_OPERATOR}
UPDATE_FIELDS: dict[str, Field] = {**WRITE_FIELDS, "AttributeUpdates": ATTRIBUTE_UPDATES}
GET_FIELDS: dict[str, Field] = {"AttributesToGet": ATTRIBUTES_TO_GET}
QUERY_FIELDS: dict[str, Field] = {
    "AttributesToGet": ATTRIBUTES_TO_GET,
    "KeyConditions": CONDITIONS,
    "QueryFilter": CONDITIONS,
    "ConditionalOperator": CONDITIONAL_OPERATOR,
}
SCAN_FIELDS: dict[str, Field] = {
    "AttributesToGet": ATTRIBUTES_TO_GET,
    "ScanFilter": CONDITIONS,
    "ConditionalOperator": CONDITIONAL_OPERATOR,
}


def check_fields(request: dict, fields: dict[str, Field]) -> None:
    """Check an operation's legacy fields, only when the request has one of them: they are rare, and every field
    in a spec costs `check_request` a lookup and a call on the hot path."""
    for name in fields:
        if name in request:
            check_request(request, fields)
            return


# -------------------------------------------------------------------------------------- comparison operators

SCALARS = ("S", "N", "B")
# How many values each operator takes (None: one or more), and which types its values may have, in Expected,
# QueryFilter, ScanFilter and KeyConditions alike. EQ and NE take every type, lists and maps included ("EQ is supported
# for all data types, including lists and maps", Condition in the API reference); the ordering operators, CONTAINS,
# NOT_CONTAINS and IN take one scalar each, BEGINS_WITH a string or binary. A wrong type in the request is a
# ValidationException; a wrong type in the item only makes the condition false.
ARITY: dict[str, int | None] = {
    "NULL": 0, "NOT_NULL": 0, "EQ": 1, "NE": 1, "LE": 1, "LT": 1, "GE": 1, "GT": 1, "CONTAINS": 1,
    "NOT_CONTAINS": 1, "BEGINS_WITH": 1, "IN": None, "BETWEEN": 2,
}  # fmt: skip
FILTER_TYPES: dict[str, tuple[str, ...]] = {
    "EQ": ("S", "N", "B", "SS", "NS", "BS", "L", "M", "BOOL", "NULL"),
    "NE": ("S", "N", "B", "SS", "NS", "BS", "L", "M", "BOOL", "NULL"),
    "LE": SCALARS,
    "LT": SCALARS,
    "GE": SCALARS,
    "GT": SCALARS,
    "CONTAINS": SCALARS,
    "NOT_CONTAINS": SCALARS,
    "BEGINS_WITH": ("S", "B"),
    "IN": SCALARS,
    "BETWEEN": SCALARS,
}
_COMPARISONS = {"EQ": "=", "NE": "<>", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">"}
_KEY_OPERATORS = {"EQ": "=", "LE": "<=", "LT": "<", "GE": ">=", "GT": ">", "BETWEEN": "BETWEEN",
                  "BEGINS_WITH": "BEGINS_WITH"}  # fmt: skip
BETWEEN_BOUNDS = "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"


def _arity_ok(op: str, count: int) -> bool:
    arity = ARITY[op]
    return count >= 1 if arity is None else count == arity


def _arity_error(op: str) -> ValidationException:
    return invalid_parameter(f"Invalid number of argument(s) for the {op} ComparisonOperator")


def _type_of(value: dict) -> str:
    return next(iter(value))


def _check_same_type_and_bounds(op: str, values: list[dict]) -> None:
    if values:
        first = _type_of(values[0])
        if any(_type_of(v) != first for v in values):
            raise invalid_parameter("AttributeValues inside AttributeValueList must be of same type")
    if op == "BETWEEN" and len(values) == 2:
        order = compare_scalars(values[0], values[1])
        if order is not None and order > 0:
            raise ValidationException(BETWEEN_BOUNDS)


def _check_value_types(op: str, values: list[dict]) -> None:
    allowed = FILTER_TYPES[op] if op in FILTER_TYPES else ()
    for v in values:
        if _type_of(v) not in allowed:
            raise invalid_parameter(f"ComparisonOperator {op} is not valid for {_type_of(v)} AttributeValue type")


CONDITIONAL_OPERATOR_WITHOUT_CONDITIONS = "ConditionalOperator cannot be used without Filter or Expected"
CONDITIONAL_OPERATOR_WITH_ONE_CONDITION = (
    "ConditionalOperator can only be used when Filter or Expected has two or more elements"
)


def check_conditional_operator(request: dict, conditions_name: str) -> None:
    """ConditionalOperator joins the conditions of `conditions_name` (Expected, QueryFilter or ScanFilter): without
    that map, with it empty, or with a single condition there is nothing to join, and DynamoDB refuses the request."""
    if request.get("ConditionalOperator") is None:
        return
    conditions = request.get(conditions_name)
    if not conditions:
        raise ValidationException(CONDITIONAL_OPERATOR_WITHOUT_CONDITIONS)
    if len(conditions) < 2:
        raise ValidationException(CONDITIONAL_OPERATOR_WITH_ONE_CONDITION)


def comparison(name: str, op: str, values: list[dict]) -> Any:
    """The condition tree of `name <op> values` (values already normalised and counted)."""
    path = Path((name,))
    if op in _COMPARISONS:
        return Comparison(_COMPARISONS[op], path, Value(values[0]))
    if op == "NOT_NULL":
        return FunctionCall("attribute_exists", (path,))
    if op == "NULL":
        return FunctionCall("attribute_not_exists", (path,))
    if op == "CONTAINS":
        return FunctionCall("contains", (path, Value(values[0])))
    if op == "NOT_CONTAINS":
        return And(FunctionCall("attribute_exists", (path,)), Not(FunctionCall("contains", (path, Value(values[0])))))
    if op == "BEGINS_WITH":
        return FunctionCall("begins_with", (path, Value(values[0])))
    if op == "IN":
        return In(path, tuple(Value(v) for v in values))
    if op == "BETWEEN":
        return Between(path, Value(values[0]), Value(values[1]))
    raise AssertionError(f"unknown ComparisonOperator {op}")


def _combine(conditions: list, conditional_operator: str | None) -> Any:
    if not conditions:
        return None
    node = Or if conditional_operator == "OR" else And
    tree = conditions[0]
    for condition in conditions[1:]:
        tree = node(tree, condition)
    return tree


def _values(values: list | None) -> list[dict]:
    return [normalize_value(v) for v in values] if values else []


# --------------------------------------------------------------------------------------------------- Expected


def expected_condition(expected: dict, conditional_operator: str | None = None) -> Any:
    """The condition of an `Expected` map (None when it is empty), after DynamoDB's validation of it."""
    conditions = []
    for name, spec in expected.items():
        value = spec.get("Value")
        value_list = spec.get("AttributeValueList")
        op = spec.get("ComparisonOperator")
        exists = spec.get("Exists")
        if value_list is not None and value is not None:
            raise invalid_parameter(f"Value and AttributeValueList cannot be used together for Attribute: {name}")
        if op is not None:
            if exists is not None:
                raise invalid_parameter(f"Exists and ComparisonOperator cannot be used together for Attribute: {name}")
            if op not in ("NULL", "NOT_NULL") and value_list is None and value is None:
                raise invalid_parameter(
                    f"Value or AttributeValueList must be used with ComparisonOperator: {op} for Attribute: {name}"
                )
            values = _values(value_list) if value_list is not None else _values([value] if value is not None else [])
            if not _arity_ok(op, len(values)):
                raise _arity_error(op)
            _check_value_types(op, values)
            _check_same_type_and_bounds(op, values)
            conditions.append(comparison(name, op, values))
        elif value_list is not None:
            raise invalid_parameter(
                f"AttributeValueList can only be used with a ComparisonOperator for Attribute: {name}"
            )
        else:
            if exists is None or exists:
                if value is None:
                    shown = "null" if exists is None else "true"
                    raise invalid_parameter(f"Value must be provided when Exists is {shown} for Attribute: {name}")
                conditions.append(comparison(name, "EQ", [normalize_value(value)]))
            else:
                if value is not None:
                    raise invalid_parameter(f"Value cannot be used when Exists is false for Attribute: {name}")
                conditions.append(comparison(name, "NULL", []))
    return _combine(conditions, conditional_operator)


# ---------------------------------------------------------------------------------- QueryFilter / ScanFilter


def _checked_conditions(conditions: dict) -> list[tuple[str, str, list[dict]]]:
    """(attribute, operator, values) for a map of Conditions, after DynamoDB's checks of each."""
    out = []
    for name, spec in conditions.items():
        op = spec["ComparisonOperator"]
        values = _values(spec.get("AttributeValueList"))
        if not _arity_ok(op, len(values)):
            raise _arity_error(op)
        if values:
            first = _type_of(values[0])
            if any(_type_of(v) != first for v in values):
                raise invalid_parameter("AttributeValues inside AttributeValueList must be of same type")
        _check_value_types(op, values)
        _check_same_type_and_bounds(op, values)
        out.append((name, op, values))
    return out


def filter_condition(conditions: dict, conditional_operator: str | None = None) -> Any:
    """The condition of a QueryFilter or ScanFilter map (None when it is empty)."""
    checked = _checked_conditions(conditions)
    return _combine([comparison(name, op, values) for name, op, values in checked], conditional_operator)


def check_filter_not_on_key(names, key_names: tuple[str, ...], what: str) -> None:
    """Query refuses filters on the queried key: `what` is "QueryFilter" or "Filter Expression"."""
    for key_name in key_names:
        if key_name in names:
            raise ValidationException(
                f"{what} can only contain non-primary key attributes: Primary key attribute: {key_name}"
            )


# ----------------------------------------------------------------------------------------------- KeyConditions


def check_key_conditions(conditions: dict) -> list[tuple[str, str, list[dict]]]:
    """The request-level checks of KeyConditions (before the key schema is known)."""
    checked = _checked_conditions(conditions)
    if len(checked) not in (1, 2):
        raise ValidationException("Conditions can be of length 1 or 2 only")
    return checked


def key_condition(conditions: dict, key: KeySchema) -> KeyCondition:
    """The KeyCondition of a legacy KeyConditions map against the queried key schema."""
    checked = {name: (op, values) for name, op, values in check_key_conditions(conditions)}
    count = len(checked)
    if key.range_name is None and count > 1:
        raise ValidationException("Query key condition not supported")
    for name, key_type, is_hash in ((key.hash_name, key.hash_type, True), (key.range_name, key.range_type, False)):
        if name is None:
            continue
        if name not in checked:
            if is_hash or count > 1:
                raise ValidationException(f"Query condition missed key schema element: {name}")
            continue
        op, values = checked[name]
        if op in ("NULL", "NOT_NULL", "NE", "CONTAINS", "NOT_CONTAINS", "IN"):
            raise ValidationException("Attempted conditional constraint is not an indexable operation")
        if any(_type_of(v) != key_type for v in values):
            raise invalid_parameter("Condition parameter type does not match schema type")
        if is_hash and op != "EQ":
            raise ValidationException("Query key condition not supported")
        for v in values:
            check_key_not_empty(name, v)
    hash_value = checked[key.hash_name][1][0]
    if key.range_name is None or key.range_name not in checked:
        return KeyCondition(key.hash_name, hash_value)
    op, values = checked[key.range_name]
    return KeyCondition(key.hash_name, hash_value, key.range_name, _KEY_OPERATORS[op], list(values))


# --------------------------------------------------------------------------------------------- AttributesToGet


def projection(attributes: list[str]) -> Projection:
    """The Projection of an AttributesToGet list: top-level attributes, duplicates refused."""
    seen: set[str] = set()
    for name in attributes:
        check_attribute_name(name)
        if name in seen:
            raise invalid_parameter(f"Duplicate value in attribute name: {name}")
        seen.add(name)
    paths = tuple(Path((name,)) for name in attributes)
    return Projection(paths, build_tree(paths))


# -------------------------------------------------------------------------------------------- AttributeUpdates

TYPE_MISMATCH = "Type mismatch for attribute to update"
_ADD_TYPES = frozenset({"L", "SS", "NS", "BS", "N"})
_SET_TYPES = frozenset({"SS", "NS", "BS"})


@dataclass(frozen=True, slots=True)
class AttributeUpdates:
    """A legacy AttributeUpdates map: the equivalent update expression, and the types its ADD/DELETE actions need."""

    update: UpdateExpression | None
    required_types: tuple  # ((attribute, type), ...): an existing attribute must have this type

    def check_types(self, item: dict) -> None:
        """DynamoDB's legacy message for ADD/DELETE on an attribute of another type (before anything applies)."""
        for name, kind in self.required_types:
            value = item.get(name)
            if value is not None and kind not in value:
                raise ValidationException(TYPE_MISMATCH)


def attribute_updates(updates: dict, key_names: tuple[str, ...]) -> AttributeUpdates:
    """Translate and validate an AttributeUpdates map (empty: an update that changes nothing)."""
    actions = []
    required = []
    for name, spec in updates.items():
        check_attribute_name(name)
        raw = spec.get("Value")
        value = normalize_value(raw) if raw is not None else None
        action = spec.get("Action") or "PUT"
        if value is None and action != "DELETE":
            raise invalid_parameter("Only DELETE action is allowed when no attribute value is specified")
        kind = _type_of(value) if value is not None else None
        if value is not None and action == "DELETE" and kind not in _SET_TYPES:
            raise invalid_parameter(f"DELETE action with value is not supported for the type {kind}")
        if value is not None and action == "ADD" and kind not in _ADD_TYPES:
            raise invalid_parameter(f"ADD action is not supported for the type {kind}")
        path = Path((name,))
        if action == "PUT":
            actions.append(UpdateAction(SET, path, Value(value)))
        elif action == "DELETE" and value is None:
            actions.append(UpdateAction(REMOVE, path))
        elif action == "DELETE":
            actions.append(UpdateAction(DELETE, path, Value(value)))
            required.append((name, kind))
        elif kind == "L":
            appended = FunctionCall(
                "list_append", (FunctionCall("if_not_exists", (path, Value({"L": []}))), Value(value))
            )
            actions.append(UpdateAction(SET, path, appended))
            required.append((name, kind))
        else:
            actions.append(UpdateAction(ADD, path, Value(value)))
            required.append((name, kind))
    for name in key_names:
        if name in updates:
            raise invalid_parameter(f"Cannot update attribute {name}. This attribute is part of the key")
    if not actions:
        return AttributeUpdates(None, ())
    tree = build_tree([action.path for action in actions], actions)
    return AttributeUpdates(UpdateExpression(tuple(actions), tree), tuple(required))
