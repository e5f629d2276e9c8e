"""TransactWriteItems: how a validation error found while evaluating the actions is reported, and what the 4 MB
limit applies to."""

import pytest
from botocore.exceptions import ClientError

from conformance.tables import create_pk_table

BIG = 380 * 1024  # eleven of these are over 4 MB


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    return create_pk_table(dynamodb, unique_table_name("TxRules"))


def put(table, pk, **attributes):
    return {"Put": {"TableName": table, "Item": {"pk": {"S": pk}, **attributes}}}


def cancelled(dynamodb, items):
    with pytest.raises(ClientError) as caught:
        dynamodb.transact_write_items(TransactItems=items)
    assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"
    return caught.value.response["CancellationReasons"]


def count(dynamodb, table):
    return dynamodb.scan(TableName=table, Select="COUNT", ConsistentRead=True)["Count"]


def test_a_key_of_the_wrong_type_cancels_with_one_validation_error(dynamodb, table):
    # Why: DynamoDB stops evaluating at the first invalid action: it gets ValidationError with a message, every
    # other action None without one.
    before = count(dynamodb, table)
    reasons = cancelled(
        dynamodb, [put(table, "ok-1"), {"Put": {"TableName": table, "Item": {"pk": {"N": "1"}}}}, put(table, "ok-2")]
    )
    assert [reason["Code"] for reason in reasons] == ["None", "ValidationError", "None"]
    assert reasons[1]["Message"]
    assert "Message" not in reasons[0] and "Message" not in reasons[2]
    assert count(dynamodb, table) == before


def test_a_mistyped_key_in_a_delete_or_update(dynamodb, table):
    reasons = cancelled(
        dynamodb,
        [
            {"Delete": {"TableName": table, "Key": {"pk": {"N": "1"}}}},
            {
                "Update": {
                    "TableName": table,
                    "Key": {"pk": {"S": "u"}},
                    "UpdateExpression": "SET a = :v",
                    "ExpressionAttributeValues": {":v": {"S": "v"}},
                }
            },
        ],
    )
    assert [reason["Code"] for reason in reasons] == ["ValidationError", "None"]
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "u"}}, ConsistentRead=True)


def test_a_small_request_may_delete_more_than_4_mb(dynamodb, table):
    # Why: the 4 MB limit applies to the transaction's payload; deleting more than 4 MB of stored items is allowed.
    keys = [f"big-{i}" for i in range(11)]
    for pk in keys:
        dynamodb.put_item(TableName=table, Item={"pk": {"S": pk}, "blob": {"S": "x" * BIG}})
    dynamodb.transact_write_items(
        TransactItems=[{"Delete": {"TableName": table, "Key": {"pk": {"S": pk}}}} for pk in keys]
    )
    for pk in keys:
        assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)


def test_a_payload_over_4_mb_is_refused(dynamodb, table):
    # Why: a transaction's request payload may not exceed 4 MB; nothing of it is written.
    items = [put(table, f"huge-{i}", blob={"S": "x" * BIG}) for i in range(11)]
    with pytest.raises(ClientError) as caught:
        dynamodb.transact_write_items(TransactItems=items)
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException" and "size cannot exceed 4 MB" in error["Message"]
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "huge-0"}}, ConsistentRead=True)
    dynamodb.transact_write_items(TransactItems=items[:10])  # 3.8 MB of payload is fine
    assert "Item" in dynamodb.get_item(TableName=table, Key={"pk": {"S": "huge-9"}}, ConsistentRead=True)
