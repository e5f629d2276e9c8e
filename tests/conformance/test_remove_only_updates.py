"""An UpdateItem that only removes, on an item that does not exist, changes nothing: no item, no stream record,
no Attributes; an update that sets anything (or an empty AttributeUpdates) still creates the item."""

import pytest

from conformance.tables import create_pk_table


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("RemoveOnly")
    create_pk_table(dynamodb, name, StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
    return name


def stream_keys(client_factory, dynamodb, table):
    """The keys of every record in the table's stream, in order."""
    streams = client_factory("dynamodbstreams")
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    keys = []
    for _ in range(100):  # bounded: the shard is open, so pages keep coming with a NextShardIterator
        page = streams.get_records(ShardIterator=iterator)
        keys += [record["dynamodb"]["Keys"]["pk"]["S"] for record in page["Records"]]
        if not page["Records"]:
            return keys
        iterator = page["NextShardIterator"]
    return keys


def exists(dynamodb, table, pk):
    return "Item" in dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}}, ConsistentRead=True)


REMOVE_ONLY = {
    "remove": {"UpdateExpression": "REMOVE a, b.c"},
    "delete-from-set": {"UpdateExpression": "DELETE s :s", "ExpressionAttributeValues": {":s": {"SS": ["x"]}}},
    "remove-and-delete": {
        "UpdateExpression": "REMOVE a DELETE s :s",
        "ExpressionAttributeValues": {":s": {"SS": ["x"]}},
    },
    "legacy-delete": {"AttributeUpdates": {"a": {"Action": "DELETE"}}},
    "legacy-delete-from-set": {"AttributeUpdates": {"s": {"Action": "DELETE", "Value": {"SS": ["x"]}}}},
}


@pytest.mark.parametrize("name", sorted(REMOVE_ONLY))
def test_a_remove_only_update_of_a_missing_item_is_a_no_op(client_factory, dynamodb, table, name):
    # Why: DynamoDB does not create an item to remove attributes from: no item, no stream record, and ALL_NEW has
    # nothing to return.
    pk = f"missing-{name}"
    response = dynamodb.update_item(TableName=table, Key={"pk": {"S": pk}}, ReturnValues="ALL_NEW", **REMOVE_ONLY[name])
    assert "Attributes" not in response
    assert not exists(dynamodb, table, pk)
    dynamodb.put_item(TableName=table, Item={"pk": {"S": f"marker-{name}"}})
    keys = stream_keys(client_factory, dynamodb, table)
    assert f"marker-{name}" in keys and pk not in keys


@pytest.mark.parametrize(
    "parameters",
    [
        {"UpdateExpression": "SET a = :v", "ExpressionAttributeValues": {":v": {"S": "v"}}},
        {"UpdateExpression": "REMOVE b SET a = :v", "ExpressionAttributeValues": {":v": {"S": "v"}}},
        {"UpdateExpression": "ADD n :one", "ExpressionAttributeValues": {":one": {"N": "1"}}},
        {"AttributeUpdates": {"a": {"Action": "PUT", "Value": {"S": "v"}}}},
        {"AttributeUpdates": {}},
    ],
    ids=["set", "remove-and-set", "add", "legacy-put", "empty-attribute-updates"],
)
def test_an_update_that_sets_anything_creates_the_item(client_factory, dynamodb, table, parameters, request):
    # Why: UpdateItem "adds a new item to the table if it does not already exist" when it has something to write.
    pk = f"created-{request.node.callspec.id}"
    response = dynamodb.update_item(TableName=table, Key={"pk": {"S": pk}}, ReturnValues="ALL_NEW", **parameters)
    assert response["Attributes"]["pk"] == {"S": pk}
    assert exists(dynamodb, table, pk)
    assert pk in stream_keys(client_factory, dynamodb, table)


def test_remove_on_an_existing_item_still_removes(dynamodb, table):
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "present"}, "a": {"S": "x"}, "b": {"S": "y"}})
    response = dynamodb.update_item(
        TableName=table, Key={"pk": {"S": "present"}}, UpdateExpression="REMOVE a", ReturnValues="ALL_NEW"
    )
    assert response["Attributes"] == {"pk": {"S": "present"}, "b": {"S": "y"}}


def test_a_remove_only_transaction_update_of_a_missing_item_writes_nothing(dynamodb, table):
    dynamodb.transact_write_items(
        TransactItems=[
            {"Update": {"TableName": table, "Key": {"pk": {"S": "tx-missing"}}, "UpdateExpression": "REMOVE a"}}
        ]
    )
    assert not exists(dynamodb, table, "tx-missing")
