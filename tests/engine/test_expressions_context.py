"""ExpressionAttributeNames/Values: up-front validation, undefined and unused placeholders, and the request-level
rules about expression parameters (texts as dynalite recorded them from DynamoDB)."""

from __future__ import annotations

import pytest

from globaltables.engine.errors import SerializationException, ValidationException
from globaltables.engine.expressions import (
    ExpressionContext,
    check_expression_parameters,
    parse_condition,
    parse_projection,
    parse_update,
)


def error(fn, *args, **kwargs) -> str:
    with pytest.raises(ValidationException) as caught:
        fn(*args, **kwargs)
    return caught.value.message


def test_empty_maps_are_refused():
    assert error(ExpressionContext, {}, None) == "ExpressionAttributeNames must not be empty"
    assert error(ExpressionContext, None, {}) == "ExpressionAttributeValues must not be empty"


@pytest.mark.parametrize("key", ["x", "#", "#a-b", "# a", "#\u00e9", ""])
def test_malformed_name_keys(key):
    assert error(ExpressionContext, {key: "a"}, None) == f'ExpressionAttributeNames contains invalid key: Syntax error; key: "{key}"'


@pytest.mark.parametrize("key", ["v", ":", ":a.b", "::a"])
def test_malformed_value_keys(key):
    assert error(ExpressionContext, None, {key: {"S": "a"}}) == (
        f'ExpressionAttributeValues contains invalid key: Syntax error; key: "{key}"'
    )


def test_names_must_not_be_empty_strings():
    assert error(ExpressionContext, {"#a": ""}, None) == 'ExpressionAttributeNames contains invalid value: Empty attribute name; key: "#a"'


def test_values_are_normalised_and_invalid_ones_refused_with_their_key():
    ctx = ExpressionContext(None, {":n": {"N": "0010.500"}, ":s": {"NS": ["1.0", "2"]}})
    assert ctx.values[":n"] == {"N": "10.5"}
    assert ctx.values[":s"] == {"NS": ["1", "2"]}
    assert error(ExpressionContext, None, {":v": {"SS": []}}) == (
        "ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: "
        "An string set  may not be empty for key :v"
    )
    assert error(ExpressionContext, None, {":v": {"N": "abc"}}) == (
        "ExpressionAttributeValues contains invalid value: The parameter cannot be converted to a numeric value: abc for key :v"
    )
    assert error(ExpressionContext, None, {":v": {}}) == (
        "ExpressionAttributeValues contains invalid value: Supplied AttributeValue is empty, must contain exactly one "
        "of the supported datatypes for key :v"
    )
    with pytest.raises(SerializationException):
        ExpressionContext(None, {":v": "plain"})


def test_undefined_placeholders():
    assert error(parse_condition, "#a = :v", ExpressionContext(None, {":v": {"S": "x"}})) == (
        "Invalid ConditionExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #a"
    )
    assert error(parse_update, "SET a = :v", ExpressionContext(None, None)) == (
        "Invalid UpdateExpression: An expression attribute value used in expression is not defined; attribute value: :v"
    )
    assert error(parse_projection, "a.#n", ExpressionContext({"#m": "x"}, None)) == (
        "Invalid ProjectionExpression: An expression attribute name used in the document path is not defined; "
        "attribute name: #n"
    )


def test_first_undefined_placeholder_in_text_order_is_reported():
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "#first = :second", ctx).endswith("attribute name: #first")
    assert error(parse_condition, ":first = #second", ExpressionContext(None, None)).endswith("attribute value: :first")


def test_unused_placeholders_are_reported_after_all_expressions():
    ctx = ExpressionContext({"#a": "a", "#b": "b", "#c": "c"}, {":x": {"S": "1"}, ":y": {"S": "2"}})
    parse_condition("#a = :x", ctx)
    parse_projection("#c", ctx)
    assert error(ctx.check_unused) == "Value provided in ExpressionAttributeNames unused in expressions: keys: {#b}"
    parse_update("SET #b = :x", ctx)
    assert error(ctx.check_unused) == "Value provided in ExpressionAttributeValues unused in expressions: keys: {:y}"


def test_unused_keys_are_listed_in_request_order():
    ctx = ExpressionContext({"#z": "z", "#a": "a", "#m": "m"}, None)
    assert error(ctx.check_unused) == "Value provided in ExpressionAttributeNames unused in expressions: keys: {#z, #a, #m}"


def test_all_used_passes():
    ctx = ExpressionContext({"#a": "a"}, {":v": {"S": "x"}})
    parse_condition("#a = :v", ctx)
    ctx.check_unused()


def test_placeholders_used_twice_or_by_two_expressions():
    ctx = ExpressionContext({"#a": "a"}, {":v": {"N": "1"}})
    parse_update("SET #a = #a + :v", ctx)
    parse_condition("#a < :v", ctx)
    ctx.check_unused()


# ------------------------------------------------------------------------------------ request-level parameter rules


def test_names_without_any_expression():
    request = {"ExpressionAttributeNames": {"#a": "a"}}
    assert error(check_expression_parameters, request, ("ConditionExpression",)) == (
        "ExpressionAttributeNames can only be specified when using expressions"
    )


def test_values_without_a_value_expression():
    request = {"ExpressionAttributeValues": {":a": {"S": "a"}}}
    assert error(check_expression_parameters, request, ("UpdateExpression", "ConditionExpression")) == (
        "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and "
        "ConditionExpression are null"
    )
    # With only a ProjectionExpression possible, values are left to the unused-values check.
    check_expression_parameters(request, ("ProjectionExpression",))


def test_expression_and_legacy_parameters_do_not_mix():
    request = {"ConditionExpression": "a = :a", "Expected": {}}
    assert error(check_expression_parameters, request, ("ConditionExpression",), ("Expected",)) == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"
    )


def test_well_formed_requests_pass():
    check_expression_parameters(
        {"ConditionExpression": "a = :a", "ExpressionAttributeValues": {":a": {"S": "x"}}},
        ("ConditionExpression",),
        ("Expected",),
    )
    check_expression_parameters({}, ("ConditionExpression",))
