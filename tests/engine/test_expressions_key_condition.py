"""KeyConditionExpression: what DynamoDB accepts against a key schema, and how it refuses the rest."""

from __future__ import annotations

import base64

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import ExpressionContext, KeyCondition, parse_key_condition
from globaltables.engine.schema import KeySchema

COMPOSITE = KeySchema("customerId", "S", "sk", "S")
NUMERIC = KeySchema("pk", "S", "n", "N")
HASH_ONLY = KeySchema("pk", "S")

VALUES = {
    ":c": {"S": "C-17"},
    ":p": {"S": "2026-10"},
    ":q": {"S": "2026-12"},
    ":one": {"N": "1"},
    ":five": {"N": "5"},
    ":empty": {"S": ""},
    ":bin": {"B": base64.b64encode(b"\x01").decode()},
}


def key_condition(text: str, key: KeySchema = COMPOSITE, names: dict | None = None) -> KeyCondition:
    used = {k: v for k, v in VALUES.items() if k in text}
    ctx = ExpressionContext(names, used or None)
    return parse_key_condition(text, ctx, key)


def error(text: str, key: KeySchema = COMPOSITE, names: dict | None = None) -> str:
    with pytest.raises(ValidationException) as caught:
        key_condition(text, key, names)
    return caught.value.message


def test_hash_only():
    condition = key_condition("customerId = :c")
    assert condition == KeyCondition("customerId", {"S": "C-17"})
    assert condition.sort_op is None and condition.matches_sort({"S": "anything"})


@pytest.mark.parametrize(
    "text,op,values",
    [
        ("customerId = :c AND sk = :p", "=", [":p"]),
        ("customerId = :c AND sk < :p", "<", [":p"]),
        ("customerId = :c AND sk <= :p", "<=", [":p"]),
        ("customerId = :c AND sk > :p", ">", [":p"]),
        ("customerId = :c AND sk >= :p", ">=", [":p"]),
        ("customerId = :c AND sk BETWEEN :p AND :q", "BETWEEN", [":p", ":q"]),
        ("customerId = :c AND begins_with(sk, :p)", "BEGINS_WITH", [":p"]),
        ("begins_with(sk, :p) AND customerId = :c", "BEGINS_WITH", [":p"]),
        ("(customerId = :c) AND (sk > :p)", ">", [":p"]),
        ("customerId = :c AND :p < sk", ">", [":p"]),  # a constant on the left mirrors the operator
        ("customerId = :c and sk between :p and :q", "BETWEEN", [":p", ":q"]),
    ],
)
def test_sort_key_conditions(text, op, values):
    condition = key_condition(text)
    assert condition.hash_value == {"S": "C-17"}
    assert condition.sort_name == "sk"
    assert condition.sort_op == op
    assert condition.sort_values == [VALUES[v] for v in values]


def test_placeholders_for_key_names():
    condition = key_condition("#h = :c AND #r >= :p", names={"#h": "customerId", "#r": "sk"})
    assert condition.sort_op == ">="


def test_matches_sort():
    condition = key_condition("customerId = :c AND begins_with(sk, :p)")
    assert condition.matches_sort({"S": "2026-10-01#o-967"})
    assert not condition.matches_sort({"S": "2026-11-01"})
    between = key_condition("pk = :c AND n BETWEEN :one AND :five", NUMERIC)
    assert between.matches_sort({"N": "1"}) and between.matches_sort({"N": "5"}) and between.matches_sort({"N": "2.5"})
    assert not between.matches_sort({"N": "5.01"}) and not between.matches_sort(None)
    assert key_condition("pk = :c AND n < :five", NUMERIC).matches_sort({"N": "-7"})


@pytest.mark.parametrize(
    "text,message",
    [
        ("customerId = :c OR sk = :p", "Invalid operator used in KeyConditionExpression: OR"),
        ("customerId = :c AND NOT sk = :p", "Invalid operator used in KeyConditionExpression: NOT"),
        ("customerId IN (:c)", "Invalid operator used in KeyConditionExpression: IN"),
        ("customerId = :c AND sk <> :p", "Invalid operator used in KeyConditionExpression: <>"),
        ("customerId = :c AND attribute_exists(sk)", "Invalid operator used in KeyConditionExpression: attribute_exists"),
        ("customerId = :c AND contains(sk, :p)", "Invalid operator used in KeyConditionExpression: contains"),
        ("customerId = :c AND size(sk) = :one", "Invalid operator used in KeyConditionExpression: size"),
        ("customerId = :c AND sk = customerId", "Invalid condition in KeyConditionExpression: Multiple attribute names used in one condition"),
        (":c = :c", "Invalid condition in KeyConditionExpression: No key attribute specified"),
        ("customerId.x = :c", "KeyConditionExpressions cannot have conditions on nested attributes"),
        ("customerId = :c AND sk = :p AND sk = :q", "KeyConditionExpressions must only contain one condition per key"),
        ("sk = :p", "Query condition missed key schema element: customerId"),
        ("customerId = :c AND extra = :p", "Query condition missed key schema element: sk"),
        ("customerId = :c AND sk = :p AND extra = :q", "Query key condition not supported"),
        ("customerId > :c", "Query key condition not supported"),
        ("begins_with(customerId, :c)", "Query key condition not supported"),
        ("customerId = :one", "One or more parameter values were invalid: Condition parameter type does not match schema type"),
        ("customerId = :c AND sk = :one", "One or more parameter values were invalid: Condition parameter type does not match schema type"),
        ("customerId = :c AND sk BETWEEN :q AND :p", "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {S:2026-12}, upper bound operand: AttributeValue: {S:2026-10}"),
        ("customerId = :c AND begins_with(sk, :one)", "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"),
        ("customerId = :empty", "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: customerId"),
        ("customerId = :c AND", 'Invalid KeyConditionExpression: Syntax error; token: "<EOF>", near: "AND"'),
        ("((customerId = :c))", "Invalid KeyConditionExpression: The expression has redundant parentheses;"),
        ("Name = :c", "Invalid KeyConditionExpression: Attribute name is a reserved keyword; reserved keyword: Name"),
        ("customerId = :undefined", "Invalid KeyConditionExpression: An expression attribute value used in expression is not defined; attribute value: :undefined"),
    ],
)
def test_refused_key_conditions(text, message):
    assert error(text) == message


def test_hash_only_table_refuses_a_second_condition():
    assert error("pk = :c AND extra = :p", HASH_ONLY) == "Query key condition not supported"


def test_begins_with_on_a_number_sort_key():
    assert error("pk = :c AND begins_with(n, :p)", NUMERIC) == (
        "One or more parameter values were invalid: Condition parameter type does not match schema type"
    )


def test_binary_keys():
    key = KeySchema("pk", "S", "b", "B")
    condition = key_condition("pk = :c AND begins_with(b, :bin)", key)
    assert condition.matches_sort({"B": base64.b64encode(b"\x01\x02").decode()})
    assert not condition.matches_sort({"B": base64.b64encode(b"\x02").decode()})
