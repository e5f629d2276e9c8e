"""A Query of a hash-only table reads at most one item: it returns no LastEvaluatedKey, and an ExclusiveStartKey
has nothing to resume after."""

import pytest
from botocore.exceptions import ClientError

from conformance.tables import create_pk_table


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("HashOnly")
    create_pk_table(dynamodb, name)
    for pk in ("a", "b"):
        dynamodb.put_item(TableName=name, Item={"pk": {"S": pk}})
    return name


QUERY = {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "a"}}}


def test_exclusive_start_key_on_a_hash_only_query(dynamodb, table):
    # Why: DynamoDB refuses an ExclusiveStartKey on a Query of a table without a sort key ("The provided exclusive
    # start key is invalid").
    with pytest.raises(ClientError) as caught:
        dynamodb.query(TableName=table, ExclusiveStartKey={"pk": {"S": "a"}}, **QUERY)
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"].startswith("The provided exclusive start key is invalid")


def test_a_hash_only_query_leaves_nothing_to_resume(dynamodb, table):
    page = dynamodb.query(TableName=table, Limit=1, **QUERY)
    assert page["Items"] == [{"pk": {"S": "a"}}] and "LastEvaluatedKey" not in page
    pages = list(dynamodb.get_paginator("query").paginate(TableName=table, Limit=1, **QUERY))
    assert [item for p in pages for item in p["Items"]] == [{"pk": {"S": "a"}}]


def test_a_hash_only_scan_still_pages(dynamodb, table):
    pages = list(dynamodb.get_paginator("scan").paginate(TableName=table, Limit=1))
    assert sorted(item["pk"]["S"] for p in pages for item in p["Items"]) == ["a", "b"]
