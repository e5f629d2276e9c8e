"""Resolution: substitute #names and :values into a cached syntax tree, record which were used, and check what
needs the values (operand types, BETWEEN bounds, path overlaps after substitution).

Theory of operation
- `ExpressionContext` is built once per request from ExpressionAttributeNames/Values and validated up front, as
  DynamoDB does (empty maps, malformed keys, invalid values). Every expression of the request resolves against the
  same context, which remembers the placeholders used; `check_unused()` after the last expression reports the rest.
- `parse_condition`/`parse_update`/`parse_projection` take the text through the cached parser (parser.py), then
  resolve. Issues found by the parser and by resolution share one priority order (parser.ISSUE_ORDER); the first
  category present is reported as "Invalid <Kind>: <message>". Only then are values applied to items, so nothing
  can fail half-way for a reason the request itself carries.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SerializationException, ValidationException
from ..values import attribute_name_problem, compare_scalars, normalize_value
from .ast import (
    DELETE,
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
    Projection,
    UpdateAction,
    UpdateExpression,
    Value,
    ValueRef,
)
from .parser import (
    CONDITION,
    DISTINCT,
    ISSUE_ORDER,
    OPERAND_TYPE,
    PATH_OVERLAP,
    PLACEHOLDER,
    PROJECTION,
    UPDATE,
    Syntax,
    SyntaxFailure,
    parse_syntax,
)
from .paths import build_tree

MAX_EXPRESSION_BYTES = 4096

_NAME_KEY = re.compile(r"#[A-Za-z0-9_]+")
_VALUE_KEY = re.compile(r":[A-Za-z0-9_]+")

SCALAR_TYPES = frozenset({"S", "N", "B"})
SET_TYPES = frozenset({"SS", "NS", "BS"})
ATTRIBUTE_TYPES = frozenset({"S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"})
# DynamoDB's long type names, as some messages print them.
TYPE_WORDS = {
    "S": "STRING",
    "N": "NUMBER",
    "B": "BINARY",
    "BOOL": "BOOLEAN",
    "NULL": "NULL",
    "M": "MAP",
    "L": "LIST",
    "SS": "SS",
    "NS": "NS",
    "BS": "BS",
}


class ExpressionContext:
    """A request's ExpressionAttributeNames and ExpressionAttributeValues, validated, with usage tracking."""

    __slots__ = ("names", "used_names", "used_values", "values")

    def __init__(self, names: dict | None = None, values: dict | None = None) -> None:
        self.names: dict[str, str] = _check_names(names) if names is not None else {}
        self.values: dict[str, dict] = _check_values(values) if values is not None else {}
        self.used_names: set[str] = set()
        self.used_values: set[str] = set()

    def name(self, placeholder: str) -> str | None:
        name = self.names.get(placeholder)
        if name is not None:
            self.used_names.add(placeholder)
        return name

    def value(self, placeholder: str) -> dict | None:
        value = self.values.get(placeholder)
        if value is not None:
            self.used_values.add(placeholder)
        return value

    def check_unused(self) -> None:
        """Call once every expression of the request has been parsed."""
        if len(self.used_names) != len(self.names):
            unused = ", ".join(k for k in self.names if k not in self.used_names)
            raise ValidationException(
                f"Value provided in ExpressionAttributeNames unused in expressions: keys: {{{unused}}}"
            )
        if len(self.used_values) != len(self.values):
            unused = ", ".join(k for k in self.values if k not in self.used_values)
            raise ValidationException(
                f"Value provided in ExpressionAttributeValues unused in expressions: keys: {{{unused}}}"
            )


def _check_names(names: Any) -> dict[str, str]:
    if not isinstance(names, dict):
        raise SerializationException("Start of list found where not expected")
    if not names:
        raise ValidationException("ExpressionAttributeNames must not be empty")
    for key, name in names.items():
        if not _NAME_KEY.fullmatch(key):
            raise ValidationException(f'ExpressionAttributeNames contains invalid key: Syntax error; key: "{key}"')
        if not isinstance(name, str):
            raise SerializationException("STRING_VALUE can not be converted to a String")
        problem = attribute_name_problem(name)
        if problem is not None:
            raise ValidationException(f'ExpressionAttributeNames contains invalid value: {problem}; key: "{key}"')
    return names


def _check_values(values: Any) -> dict[str, dict]:
    if not isinstance(values, dict):
        raise SerializationException("Start of list found where not expected")
    if not values:
        raise ValidationException("ExpressionAttributeValues must not be empty")
    normalized = {}
    for key, value in values.items():
        if not _VALUE_KEY.fullmatch(key):
            raise ValidationException(f'ExpressionAttributeValues contains invalid key: Syntax error; key: "{key}"')
        try:
            normalized[key] = normalize_value(value)
        except ValidationException as error:
            raise ValidationException(
                f"ExpressionAttributeValues contains invalid value: {error.message} for key {key}"
            ) from None
    return normalized


def check_expression_parameters(
    request: dict, expressions: tuple[str, ...] | list[str], non_expressions: tuple[str, ...] | list[str] = ()
) -> None:
    """DynamoDB's request-level rules for expression parameters (dynalite's validateExpressionParams).

    `expressions` are the request's expression fields (e.g. ("UpdateExpression", "ConditionExpression")),
    `non_expressions` the legacy parameters they exclude (e.g. ("AttributeUpdates", "Expected")).
    """
    present = [name for name in expressions if request.get(name) is not None]
    if present:
        legacy = [
            name
            for name in non_expressions
            if request.get(name) is not None
            # Query tolerates KeyConditions beside expressions when KeyConditionExpression itself is absent.
            and not (name == "KeyConditions" and request.get("KeyConditionExpression") is None)
        ]
        if legacy:
            raise ValidationException(
                "Can not use both expression and non-expression parameters in the same request: "
                f"Non-expression parameters: {{{', '.join(legacy)}}} Expression parameters: {{{', '.join(present)}}}"
            )
    if request.get("ExpressionAttributeNames") is not None and not present:
        raise ValidationException("ExpressionAttributeNames can only be specified when using expressions")
    value_expressions = [name for name in expressions if name != "ProjectionExpression"]
    if (
        value_expressions
        and request.get("ExpressionAttributeValues") is not None
        and all(request.get(name) is None for name in value_expressions)
    ):
        raise ValidationException(
            f"ExpressionAttributeValues can only be specified when using expressions: "
            f"{' and '.join(value_expressions)} {'are' if len(value_expressions) > 1 else 'is'} null"
        )


# ------------------------------------------------------------------------------------------------- entry points


def parse_condition(text: str, ctx: ExpressionContext, kind: str = "ConditionExpression") -> Any:
    """A resolved ConditionExpression or FilterExpression (kind names it in error messages)."""
    syntax = syntax_of(CONDITION, text, kind)
    resolver = Resolver(ctx)
    tree = resolver.condition(syntax.tree)
    resolver.raise_first(syntax, kind)
    return tree


def parse_update(text: str, ctx: ExpressionContext) -> UpdateExpression:
    syntax = syntax_of(UPDATE, text, "UpdateExpression")
    resolver = Resolver(ctx)
    actions = tuple(resolver.action(action) for action in syntax.tree)
    tree = build_tree([action.path for action in actions], actions)
    if isinstance(tree, str):
        resolver.note(PATH_OVERLAP, tree)
    resolver.raise_first(syntax, "UpdateExpression")
    return UpdateExpression(actions, tree)


def parse_projection(text: str, ctx: ExpressionContext) -> Projection:
    syntax = syntax_of(PROJECTION, text, "ProjectionExpression")
    resolver = Resolver(ctx)
    paths = tuple(resolver.path(path) for path in syntax.tree)
    tree = build_tree(paths)
    if isinstance(tree, str):
        resolver.note(PATH_OVERLAP, tree)
    resolver.raise_first(syntax, "ProjectionExpression")
    return Projection(paths, tree)


def syntax_of(grammar: str, text: str, kind: str) -> Syntax:
    if not isinstance(text, str):
        raise SerializationException("STRING_VALUE can not be converted to a String")
    if not text:
        raise ValidationException(f"Invalid {kind}: The expression can not be empty;")
    if len(text) > MAX_EXPRESSION_BYTES // 4 and len(text.encode("utf-8")) > MAX_EXPRESSION_BYTES:
        raise ValidationException(
            f"Invalid {kind}: Expression size has exceeded the maximum allowed size; "
            f"expression size: {len(text.encode('utf-8'))}"
        )
    syntax = parse_syntax(grammar, text)
    if isinstance(syntax, SyntaxFailure):
        raise ValidationException(f"Invalid {kind}: {syntax.message}")
    return syntax


# --------------------------------------------------------------------------------------------------- resolution


def immediate_type(node: Any) -> str | None:
    """The type an operand has whatever the item holds, or None when it depends on the item."""
    if type(node) is Value:
        return next(iter(node.value))
    if type(node) is FunctionCall:
        if node.name == "size":
            return "N"
        if node.name == "list_append":
            return "L"
        if node.name == "if_not_exists" and len(node.args) == 2:
            return immediate_type(node.args[1])
    return None


def format_value(value: dict) -> str:
    """DynamoDB's rendering of a constant in messages: AttributeValue: {N:5}."""
    ((kind, inner),) = value.items()
    return f"AttributeValue: {{{kind}:{inner}}}"


class Resolver:
    """Substitutes placeholders into one syntax tree and collects resolution-time issues."""

    __slots__ = ("ctx", "issues")

    def __init__(self, ctx: ExpressionContext) -> None:
        self.ctx = ctx
        self.issues: dict[str, str] = {}

    def note(self, category: str, message: str) -> None:
        self.issues.setdefault(category, message)

    def raise_first(self, syntax: Syntax, kind: str) -> None:
        parsed = syntax.issues
        found = self.issues
        if not parsed and not found:
            return
        for category in ISSUE_ORDER:
            message = parsed.get(category) or found.get(category)
            if message is not None:
                raise ValidationException(f"Invalid {kind}: {message}")

    # ---------------------------------------------------------------------------------------------- operands

    def path(self, path: Path) -> Path:
        elements = path.elements
        if not any(type(e) is str and e[0] == "#" for e in elements):
            return path
        resolved = []
        for element in elements:
            if type(element) is str and element[0] == "#":
                name = self.ctx.name(element)
                if name is None:
                    self.note(
                        PLACEHOLDER,
                        "An expression attribute name used in the document path is not defined; "
                        f"attribute name: {element}",
                    )
                    name = element
                resolved.append(name)
            else:
                resolved.append(element)
        return Path(tuple(resolved))

    def operand(self, node: Any) -> Any:
        kind = type(node)
        if kind is Path:
            return self.path(node)
        if kind is ValueRef:
            value = self.ctx.value(node.name)
            if value is None:
                self.note(
                    PLACEHOLDER,
                    f"An expression attribute value used in expression is not defined; attribute value: {node.name}",
                )
                return Value({"NULL": True})
            return Value(value)
        if kind is FunctionCall:
            call = FunctionCall(node.name, tuple(self.operand(arg) for arg in node.args))
            self.check_function(call)
            return call
        if kind is Arithmetic:
            left, right = self.operand(node.left), self.operand(node.right)
            for side in (left, right):
                self.expect_type(node.op, side, ("N",))
            return Arithmetic(node.op, left, right)
        raise AssertionError(f"not an operand: {node!r}")

    def expect_type(self, operator: str, operand: Any, allowed: tuple[str, ...] | frozenset[str]) -> None:
        kind = immediate_type(operand)
        if kind is not None and kind not in allowed:
            self.note(
                OPERAND_TYPE,
                f"Incorrect operand type for operator or function; operator or function: {operator}, "
                f"operand type: {kind}",
            )

    def check_distinct(self, operator: str, first: Any, other: Any) -> None:
        if type(first) is Path and type(other) is Path and first.elements == other.elements:
            self.note(
                DISTINCT,
                "The first operand must be distinct from the remaining operands for this operator or function; "
                f"operator: {operator}, first operand: {first}",
            )

    def check_function(self, call: FunctionCall) -> None:
        name, args = call.name, call.args
        if name == "begins_with" and len(args) == 2:
            self.check_distinct(name, args[0], args[1])
            for arg in args:
                self.expect_type(name, arg, ("S", "B"))
        elif name == "contains" and len(args) == 2:
            self.check_distinct(name, args[0], args[1])
        elif name == "size" and len(args) == 1:
            self.expect_type(name, args[0], ("S", "B", "SS", "NS", "BS", "L", "M"))
        elif name == "attribute_type" and len(args) == 2 and type(args[1]) is Path:
            # The type name must be a value: a path's type is unknown until an item is read.
            self.note(
                OPERAND_TYPE,
                "Incorrect operand type for operator or function; operator or function: attribute_type, "
                "operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}",
            )
        elif name == "attribute_type" and len(args) == 2 and type(args[1]) is not Value:
            self.expect_type(name, args[1], ("S",))
        elif name == "attribute_type" and len(args) == 2:
            kind, inner = next(iter(args[1].value.items()))
            if kind != "S":
                self.expect_type(name, args[1], ("S",))
            elif inner not in ATTRIBUTE_TYPES:
                self.note(
                    OPERAND_TYPE,
                    f"Invalid attribute type name found; type: {inner}, "
                    "valid types: { B,NULL,SS,BOOL,L,BS,N,NS,S,M }",
                )
        elif name == "list_append" and len(args) == 2:
            for arg in args:
                self.expect_type(name, arg, ("L",))

    # -------------------------------------------------------------------------------------------- conditions

    def condition(self, node: Any) -> Any:
        kind = type(node)
        if kind is And:
            return And(self.condition(node.left), self.condition(node.right))
        if kind is Or:
            return Or(self.condition(node.left), self.condition(node.right))
        if kind is Not:
            return Not(self.condition(node.condition))
        if kind is Comparison:
            left, right = self.operand(node.left), self.operand(node.right)
            self.check_distinct(node.op, left, right)
            if node.op not in ("=", "<>"):
                self.expect_type(node.op, left, SCALAR_TYPES)
                self.expect_type(node.op, right, SCALAR_TYPES)
            return Comparison(node.op, left, right)
        if kind is Between:
            operand, lower, upper = self.operand(node.operand), self.operand(node.lower), self.operand(node.upper)
            for side in (operand, lower, upper):
                self.expect_type("BETWEEN", side, SCALAR_TYPES)
            self.check_bounds(lower, upper)
            return Between(operand, lower, upper)
        if kind is In:
            return In(self.operand(node.operand), tuple(self.operand(choice) for choice in node.choices))
        if kind is FunctionCall:
            return self.operand(node)
        raise AssertionError(f"not a condition: {node!r}")

    def check_bounds(self, lower: Any, upper: Any) -> None:
        if type(lower) is not Value or type(upper) is not Value:
            return
        low, high = lower.value, upper.value
        if next(iter(low)) not in SCALAR_TYPES or next(iter(high)) not in SCALAR_TYPES:
            return
        order = compare_scalars(low, high)
        if order is None:
            self.note(
                OPERAND_TYPE,
                "The BETWEEN operator requires same data type for lower and upper bounds; "
                f"lower bound operand: {format_value(low)}, upper bound operand: {format_value(high)}",
            )
        elif order > 0:
            self.note(
                OPERAND_TYPE,
                "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; "
                f"lower bound operand: {format_value(low)}, upper bound operand: {format_value(high)}",
            )

    # ------------------------------------------------------------------------------------------------ updates

    def action(self, action: UpdateAction) -> UpdateAction:
        path = self.path(action.path)
        if action.kind == SET:
            return UpdateAction(SET, path, self.operand(action.value))
        if action.value is None:
            return UpdateAction(action.kind, path)
        value = self.operand(action.value)
        kind = next(iter(value.value))
        # ADD takes a number or a set, DELETE a set. These messages name the clause as an operator and the type
        # by its long name (STRING, LIST, ...), unlike the function/arithmetic ones.
        if kind not in SET_TYPES and (action.kind == DELETE or kind != "N"):
            self.note(
                OPERAND_TYPE,
                f"Incorrect operand type for operator or function; operator: {action.kind}, "
                f"operand type: {TYPE_WORDS[kind]}",
            )
        return UpdateAction(action.kind, path, value)
