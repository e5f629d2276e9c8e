"""An iterator older than 15 minutes is ExpiredIteratorException (DynamoDB Streams GetShardIterator: "A shard
iterator expires 15 minutes after it is returned to the requester"), through boto3 against a region process.

Here and not in tests/conformance: waiting 15 minutes is not a test, so the iterator is minted with the region's
own encoding and an issue time 16 minutes ago, which only a test that knows the testbed's internals can do.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from globaltables.engine.streams import shard_iterator
from region_process import REGION_NAME, make_client


def test_an_iterator_past_fifteen_minutes_is_expired_and_changes_nothing(region_endpoint, dynamodb, unique_table_name):
    streams = make_client(region_endpoint, "dynamodbstreams")
    name = unique_table_name("Expired")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
    )
    arn = dynamodb.describe_table(TableName=name)["Table"]["LatestStreamArn"]
    dynamodb.put_item(TableName=name, Item={"id": {"S": "a"}})
    expired = shard_iterator.encode(
        SimpleNamespace(region=REGION_NAME, account="000000000000"), arn, 1, time.time() - 16 * 60
    )
    with pytest.raises(streams.exceptions.ExpiredIteratorException) as caught:
        streams.get_records(ShardIterator=expired)
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert dynamodb.scan(TableName=name)["Count"] == 1
