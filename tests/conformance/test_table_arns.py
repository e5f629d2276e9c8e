"""Table ARNs where DynamoDB takes a table name ("You can also provide the Amazon Resource Name (ARN) of the table in
this parameter"), through boto3 against a real region process: item and table operations, transactions, and batch
maps keyed by ARN, whose answers come back keyed the same way."""

import pytest
from botocore.exceptions import ClientError

from conformance.tables import create_pk_table


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name, region_name, account_id):
    name = unique_table_name("Arns")
    arn = f"arn:aws:dynamodb:{region_name}:{account_id}:table/{name}"
    create_pk_table(dynamodb, arn)
    return name, arn


def test_item_and_table_operations_take_the_table_arn(dynamodb, table):
    name, arn = table
    assert dynamodb.describe_table(TableName=arn)["Table"]["TableArn"] == arn
    assert dynamodb.describe_table(TableName=arn)["Table"]["TableName"] == name
    dynamodb.put_item(TableName=arn, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    dynamodb.update_item(
        TableName=arn,
        Key={"pk": {"S": "a"}},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert dynamodb.get_item(TableName=name, Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "2"}
    assert (
        dynamodb.query(TableName=arn, KeyConditionExpression="pk = :a", ExpressionAttributeValues={":a": {"S": "a"}})[
            "Count"
        ]
        == 1
    )
    assert dynamodb.scan(TableName=arn)["Count"] == 1
    dynamodb.delete_item(TableName=arn, Key={"pk": {"S": "a"}})
    assert "Item" not in dynamodb.get_item(TableName=arn, Key={"pk": {"S": "a"}})


def test_transactions_take_table_arns(dynamodb, table):
    name, arn = table
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": arn, "Item": {"pk": {"S": "t1"}}}},
            {"Put": {"TableName": name, "Item": {"pk": {"S": "t2"}}}},
        ]
    )
    got = dynamodb.transact_get_items(TransactItems=[{"Get": {"TableName": arn, "Key": {"pk": {"S": "t1"}}}}])
    assert got["Responses"] == [{"Item": {"pk": {"S": "t1"}}}]


def test_batch_answers_are_keyed_as_the_request_named_the_table(dynamodb, table):
    _name, arn = table
    written = dynamodb.batch_write_item(RequestItems={arn: [{"PutRequest": {"Item": {"pk": {"S": "b1"}}}}]})
    assert written["UnprocessedItems"] == {}
    got = dynamodb.batch_get_item(RequestItems={arn: {"Keys": [{"pk": {"S": "b1"}}]}})
    assert got["Responses"] == {arn: [{"pk": {"S": "b1"}}]} and got["UnprocessedKeys"] == {}


def test_an_arn_of_another_region_or_account_is_not_found_and_a_malformed_one_is_refused(
    dynamodb, table, region_name, account_id
):
    name, _arn = table
    other_region = "eu-west-1" if region_name != "eu-west-1" else "us-east-1"
    for other in (
        f"arn:aws:dynamodb:{other_region}:{account_id}:table/{name}",
        f"arn:aws:dynamodb:{region_name}:111111111111:table/{name}",
    ):
        with pytest.raises(ClientError) as caught:
            dynamodb.get_item(TableName=other, Key={"pk": {"S": "a"}})
        assert caught.value.response["Error"]["Code"] == "ResourceNotFoundException"
    with pytest.raises(ClientError) as caught:
        stream_arn = f"arn:aws:dynamodb:{region_name}:{account_id}:stream/{name}"
        dynamodb.get_item(TableName=stream_arn, Key={"pk": {"S": "a"}})
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
