"""Values in requests that DynamoDB refuses: unknown AttributeValue members, number texts that do not parse,
arithmetic past 38 digits, items nested too deep. Each is a ValidationException with DynamoDB's text, and nothing
is written."""

import pytest

from conformance.raw_requests import error_message, error_type, raw_call
from conformance.tables import create_pk_table, error_of

NOT_A_NUMBER = "The parameter cannot be converted to a numeric value"
OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
TOO_DEEP = (
    "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
)


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    return create_pk_table(dynamodb, unique_table_name("Values"))


def absent(dynamodb, table, pk):
    return "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)


def test_unknown_attribute_value_member_is_an_empty_value(region_endpoint, dynamodb, table):
    # Why: DynamoDB ignores members it does not know, so {"dog": "cat"} holds no data type at all.
    status, answer = raw_call(
        region_endpoint, "PutItem", {"TableName": table, "Item": {"pk": {"S": "u"}, "x": {"dog": "cat"}}}
    )
    assert (status, error_type(answer)) == (400, "ValidationException")
    assert (
        error_message(answer) == "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
    )
    status, answer = raw_call(region_endpoint, "PutItem", {"TableName": table, "Item": {"pk": {"dog": "cat"}}})
    assert (status, error_type(answer)) == (400, "ValidationException")
    assert absent(dynamodb, table, "u")


def test_a_json_number_for_a_number_value_is_not_a_500(region_endpoint, table):
    # Why: the N member is a string on the wire; a JSON number there cannot be deserialized (a 4xx, never a 500).
    status, answer = raw_call(
        region_endpoint, "PutItem", {"TableName": table, "Item": {"pk": {"S": "j"}, "n": {"N": 3}}}
    )
    assert status == 400 and error_type(answer) in ("SerializationException", "ValidationException")


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "dog", " 1", "1 ", "0x10", "1_000"])
def test_number_text_that_does_not_parse(dynamodb, table, text):
    # Why: a number is a decimal string; DynamoDB names the text it could not convert, in an item and in
    # ExpressionAttributeValues (where the message is wrapped with the placeholder's name).
    assert error_of(dynamodb.put_item, TableName=table, Item={"pk": {"S": "n"}, "n": {"N": text}}) == (
        "ValidationException",
        f"{NOT_A_NUMBER}: {text}",
    )
    assert error_of(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "n"}},
        UpdateExpression="SET n = :x",
        ExpressionAttributeValues={":x": {"N": text}},
    ) == ("ValidationException", f"ExpressionAttributeValues contains invalid value: {NOT_A_NUMBER}: {text} for key :x")
    assert absent(dynamodb, table, "n")


def test_an_empty_number_text(dynamodb, table):
    # Why: with nothing to quote, DynamoDB's message ends after "numeric value".
    assert error_of(dynamodb.put_item, TableName=table, Item={"pk": {"S": "n"}, "n": {"N": ""}}) == (
        "ValidationException",
        NOT_A_NUMBER,
    )


@pytest.mark.parametrize(
    ("expression", "x", "y"),
    [
        ("SET n = :x + :y", "12345678901234567890123456789012345678", "0.1"),
        ("SET n = :x - :y", "1E+50", "1"),
        (
            "SET n = :x + :y",
            "9.9999999999999999999999999999999999999E+125",
            "9.9999999999999999999999999999999999999E+125",
        ),
    ],
)
def test_arithmetic_needing_more_than_38_digits_overflows(dynamodb, table, expression, x, y):
    # Why: DynamoDB refuses an update whose arithmetic result cannot be stored as "Number overflow" (UpdateItem
    # and TransactWriteItems list this message among their validation errors).
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    assert error_of(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression=expression,
        ExpressionAttributeValues={":x": {"N": x}, ":y": {"N": y}},
    ) == ("ValidationException", OVERFLOW)
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}}, ConsistentRead=True)["Item"]["n"] == {"N": "1"}


def test_arithmetic_that_fits_38_digits_is_exact(dynamodb, table):
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "b"}, "n": {"N": "12345678901234567890123456789012345678"}})
    response = dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "b"}},
        UpdateExpression="SET n = n + :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
        ReturnValues="UPDATED_NEW",
    )
    assert response["Attributes"]["n"] == {"N": "12345678901234567890123456789012345679"}


def nested(depth):
    value = {"S": "leaf"}
    for _ in range(depth):
        value = {"L": [value]}
    return value


def test_nesting_past_32_levels(dynamodb, table):
    # Why: an item's attributes may nest up to 32 levels; DynamoDB's refusal names the limit in full.
    assert error_of(dynamodb.put_item, TableName=table, Item={"pk": {"S": "deep"}, "d": nested(33)}) == (
        "ValidationException",
        TOO_DEEP,
    )
    assert absent(dynamodb, table, "deep")
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "deep"}, "d": nested(32)})
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": "deep"}})
