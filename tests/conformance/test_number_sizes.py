"""A number's size counts its significant digits only: about one byte per two of them, plus one. Trailing zeros
of a large integer cost nothing, in the 400 KB item limit and in consumed capacity alike."""

import pytest
from botocore.exceptions import ClientError

from conformance.tables import create_pk_table

HUGE_ONE = "1E+125"  # stored as 1 followed by 125 zeros: 1 significant digit, 2 bytes
MANTISSA_38 = "12345678901234567890123456789012345678E+30"  # 38 significant digits: 20 bytes


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    return create_pk_table(dynamodb, unique_table_name("NumberSize"))


def item(pk, number, payload):
    return {"pk": {"S": pk}, "n": {"N": number}, "x": {"S": "a" * payload}}


@pytest.mark.parametrize(("number", "number_bytes"), [(HUGE_ONE, 2), (MANTISSA_38, 20)])
def test_the_item_size_limit_counts_significant_digits(dynamodb, table, number, number_bytes):
    # Why: "Numbers are variable length, with up to 38 significant digits. Leading and trailing zeroes are trimmed"
    # and cost about 1 byte per 2 significant digits plus 1 (item sizes, DynamoDB Developer Guide).
    pk = "limit"
    payload = 400 * 1024 - len("pk") - len(pk) - len("n") - number_bytes - len("x")
    dynamodb.put_item(TableName=table, Item=item(pk, number, payload))
    with pytest.raises(ClientError) as caught:
        dynamodb.put_item(TableName=table, Item=item(pk, number, payload + 1))
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "Item size has exceeded the maximum allowed size" in caught.value.response["Error"]["Message"]
    stored = dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)["Item"]
    assert len(stored["x"]["S"]) == payload


@pytest.mark.parametrize(("number", "number_bytes"), [(HUGE_ONE, 2), (MANTISSA_38, 20)])
def test_capacity_counts_significant_digits(dynamodb, table, number, number_bytes):
    # Why: write capacity is 1 unit per 1 KB of item size, and the size of a number is its significant digits'.
    pk = "wcu"
    payload = 1024 - len("pk") - len(pk) - len("n") - number_bytes - len("x")  # exactly 1 KB
    one_kb = dynamodb.put_item(TableName=table, Item=item(pk, number, payload), ReturnConsumedCapacity="TOTAL")
    assert one_kb["ConsumedCapacity"]["CapacityUnits"] == 1.0
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": pk}})
    over = dynamodb.put_item(TableName=table, Item=item(pk, number, payload + 1), ReturnConsumedCapacity="TOTAL")
    assert over["ConsumedCapacity"]["CapacityUnits"] == 2.0
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": pk}})
