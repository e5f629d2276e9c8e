"""Response shapes: what DeleteTable's description holds, TagResource/UntagResource's empty bodies, UPDATED_NEW
after removing a list element."""

import pytest

from conformance.raw_requests import raw_post


def make_table(dynamodb, name, **extra):
    gsi_throughput = (
        {"ProvisionedThroughput": extra["ProvisionedThroughput"]} if "ProvisionedThroughput" in extra else {}
    )
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                **gsi_throughput,
            }
        ],
        **extra,
    )
    return name


LEFT_OUT = ("CreationDateTime", "KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")


def test_delete_table_description_on_demand(dynamodb, unique_table_name):
    # Why: DynamoDB's DeleteTable description leaves out the schema, the indexes and the creation time; it keeps
    # the name, DELETING, the ids, the billing mode summary and 0/0 capacity for an on-demand table.
    name = make_table(dynamodb, unique_table_name("DelShape"), BillingMode="PAY_PER_REQUEST")
    table = dynamodb.describe_table(TableName=name)["Table"]
    description = dynamodb.delete_table(TableName=name)["TableDescription"]
    for member in LEFT_OUT:
        assert member not in description
    assert description["TableName"] == name and description["TableStatus"] == "DELETING"
    assert description["TableId"] == table["TableId"] and description["TableArn"] == table["TableArn"]
    assert description["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert "LastUpdateToPayPerRequestDateTime" in description["BillingModeSummary"]
    throughput = description["ProvisionedThroughput"]
    assert (
        throughput["ReadCapacityUnits"],
        throughput["WriteCapacityUnits"],
        throughput["NumberOfDecreasesToday"],
    ) == (0, 0, 0)


def test_delete_table_description_provisioned(dynamodb, unique_table_name):
    name = make_table(
        dynamodb,
        unique_table_name("DelShape"),
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 3, "WriteCapacityUnits": 4},
    )
    description = dynamodb.delete_table(TableName=name)["TableDescription"]
    for member in LEFT_OUT:
        assert member not in description
    assert description["TableStatus"] == "DELETING"
    assert (
        description["ProvisionedThroughput"]["ReadCapacityUnits"],
        description["ProvisionedThroughput"]["WriteCapacityUnits"],
    ) == (3, 4)


def test_tag_and_untag_answer_an_empty_body(region_endpoint, dynamodb, unique_table_name):
    # Why: TagResource and UntagResource have no output members; DynamoDB answers 200 with an empty body.
    name = make_table(dynamodb, unique_table_name("TagBody"), BillingMode="PAY_PER_REQUEST")
    arn = dynamodb.describe_table(TableName=name)["Table"]["TableArn"]
    status, body = raw_post(region_endpoint, "TagResource", {"ResourceArn": arn, "Tags": [{"Key": "k", "Value": "v"}]})
    assert (status, body) == (200, b"")
    assert dynamodb.list_tags_of_resource(ResourceArn=arn)["Tags"] == [{"Key": "k", "Value": "v"}]
    status, body = raw_post(region_endpoint, "UntagResource", {"ResourceArn": arn, "TagKeys": ["k"]})
    assert (status, body) == (200, b"")
    assert dynamodb.list_tags_of_resource(ResourceArn=arn)["Tags"] == []
    dynamodb.tag_resource(ResourceArn=arn, Tags=[{"Key": "k2", "Value": "v2"}])  # and boto3 takes the empty body


@pytest.fixture(scope="module")
def items(dynamodb, unique_table_name):
    name = unique_table_name("UpdatedNew")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def test_updated_new_after_removing_a_list_element(dynamodb, items):
    # Why: UPDATED_NEW shows each updated path as it is after the update; after REMOVE l[i] that is the element
    # that moved into index i, if there is one.
    letters = {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}]}
    dynamodb.put_item(
        TableName=items, Item={"pk": {"S": "l"}, "l": letters, "m": {"M": {"x": {"S": "1"}}}, "z": {"S": "z"}}
    )
    response = dynamodb.update_item(
        TableName=items, Key={"pk": {"S": "l"}}, UpdateExpression="REMOVE l[1], m.x, z", ReturnValues="UPDATED_NEW"
    )
    assert response["Attributes"] == {"l": {"L": [{"S": "c"}]}}
    response = dynamodb.update_item(
        TableName=items, Key={"pk": {"S": "l"}}, UpdateExpression="REMOVE l[1]", ReturnValues="UPDATED_NEW"
    )
    assert "Attributes" not in response  # [a] has no element at index 1 any more
    old = dynamodb.update_item(
        TableName=items, Key={"pk": {"S": "l"}}, UpdateExpression="REMOVE l[0]", ReturnValues="UPDATED_OLD"
    )
    assert old["Attributes"] == {"l": {"L": [{"S": "a"}]}}
