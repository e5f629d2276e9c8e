"""Attribute names are 1 to 65535 bytes long, wherever a request names an attribute: item attributes,
ExpressionAttributeNames values, AttributesToGet and AttributeUpdates."""

import pytest

from conformance.tables import create_pk_table, error_of

LONGEST = "n" * 65535
TOO_LONG = "n" * 65536
# Multi-byte: 21846 three-byte characters are 65538 bytes though only 21846 characters.
TOO_LONG_IN_BYTES = "\u20ac" * 21846


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    return create_pk_table(dynamodb, unique_table_name("Names"))


KEY = {"pk": {"S": "k"}}


def places(table, name):
    """Each place a request names an attribute, as (operation, parameters)."""
    return {
        "item": ("put_item", {"TableName": table, "Item": {**KEY, name: {"S": "v"}}}),
        "expression-attribute-names": (
            "update_item",
            {
                "TableName": table,
                "Key": KEY,
                "UpdateExpression": "SET #n = :v",
                "ExpressionAttributeNames": {"#n": name},
                "ExpressionAttributeValues": {":v": {"S": "v"}},
            },
        ),
        "attributes-to-get": ("get_item", {"TableName": table, "Key": KEY, "AttributesToGet": [name]}),
        "attribute-updates": (
            "update_item",
            {"TableName": table, "Key": KEY, "AttributeUpdates": {name: {"Action": "PUT", "Value": {"S": "v"}}}},
        ),
    }


PLACES = ["item", "expression-attribute-names", "attributes-to-get", "attribute-updates"]


@pytest.mark.parametrize("place", PLACES)
def test_a_name_of_65535_bytes_is_allowed(dynamodb, table, place):
    # Why: "Attribute names must be at least one character long and less than 64 KB in size" (naming rules).
    operation, parameters = places(table, LONGEST)[place]
    getattr(dynamodb, operation)(**parameters)
    dynamodb.delete_item(TableName=table, Key=KEY)


@pytest.mark.parametrize("name", [TOO_LONG, TOO_LONG_IN_BYTES], ids=["65536-ascii", "65538-bytes-utf8"])
@pytest.mark.parametrize("place", PLACES)
def test_a_longer_name_is_refused_with_the_limit(dynamodb, table, place, name):
    operation, parameters = places(table, name)[place]
    code, message = error_of(getattr(dynamodb, operation), **parameters)
    assert code == "ValidationException" and "65536" in message
    assert "Item" not in dynamodb.get_item(TableName=table, Key=KEY, ConsistentRead=True)


@pytest.mark.parametrize("place", PLACES)
def test_an_empty_name_is_refused(dynamodb, table, place):
    # Why: an attribute name is at least one character long.
    operation, parameters = places(table, "")[place]
    code, message = error_of(getattr(dynamodb, operation), **parameters)
    assert code == "ValidationException" and "Empty attribute name" in message
    assert "Item" not in dynamodb.get_item(TableName=table, Key=KEY, ConsistentRead=True)
