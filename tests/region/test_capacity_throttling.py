"""Throttling through boto3 against a region process with modelled capacity (`globaltables region --capacity
modelled`): the exceptions, statuses and reasons as botocore parses them, botocore's own retries, and batches'
unprocessed items. The limits here are a few units a second, so a test's requests land within a second of each
other on any machine; waits come from the region's buckets, not from sleeps."""

from __future__ import annotations

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from region_process import REGION_NAME, RegionProcess, make_client

NO_RETRIES = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)
ARN = f"arn:aws:dynamodb:{REGION_NAME}:000000000000:table/"


@pytest.fixture(scope="module")
def modelled_region(tmp_path_factory):
    process = RegionProcess(REGION_NAME, tmp_path_factory.mktemp("capacity"), capacity="modelled")
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def client(modelled_region):
    return make_client(modelled_region.endpoint, config=NO_RETRIES)


def create(client, name: str, provisioned: tuple[int, int] | None = None, **extra) -> str:
    request = {
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        **extra,
    }
    if provisioned is None:
        request["BillingMode"] = "PAY_PER_REQUEST"
    else:
        request["ProvisionedThroughput"] = {"ReadCapacityUnits": provisioned[0], "WriteCapacityUnits": provisioned[1]}
    client.create_table(**request)
    return name


def item(key: str, size: int = 0) -> dict:
    return {"pk": {"S": key}, "b": {"S": "x" * size}} if size else {"pk": {"S": key}}


def test_provisioned_throttle_as_botocore_parses_it(client, unique_table_name):
    table = create(client, unique_table_name("ptee"), provisioned=(1, 1))
    client.put_item(TableName=table, Item=item("a"))
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException) as caught:
        client.put_item(TableName=table, Item=item("b"))
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"] == {
        "Code": "ProvisionedThroughputExceededException",
        "Message": "The level of configured provisioned throughput for the table was exceeded. Consider increasing "
        "your provisioning level with the UpdateTable API.",
    }
    assert response["ThrottlingReasons"] == [
        {"reason": "TableWriteProvisionedThroughputExceeded", "resource": ARN + table}
    ]
    assert "Item" not in client.get_item(TableName=table, Key={"pk": {"S": "b"}}, ConsistentRead=True)


def test_on_demand_maximum_as_botocore_parses_it(client, unique_table_name):
    table = create(client, unique_table_name("maxod"), OnDemandThroughput={"MaxWriteRequestUnits": 1})
    client.put_item(TableName=table, Item=item("a"))
    with pytest.raises(client.exceptions.ThrottlingException) as caught:
        client.put_item(TableName=table, Item=item("b"))
    response = caught.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"]["Code"] == "ThrottlingException"
    assert (
        response["Error"]["Message"] == "Throughput exceeds the maximum OnDemandThroughput configured on table or index"
    )
    assert response["throttlingReasons"] == [
        {"reason": "TableWriteMaxOnDemandThroughputExceeded", "resource": ARN + table}
    ]


def test_legacy_retries_wait_out_a_short_throttle(modelled_region, unique_table_name):
    table = create(make_client(modelled_region.endpoint), unique_table_name("legacy"), provisioned=(1, 20))
    legacy = make_client(modelled_region.endpoint, config=Config(retries={"mode": "legacy"}))
    # 40 units on a table with 20 a second (and 20 to start): about a second's wait; legacy makes 10 attempts,
    # 50 ms doubling (25 s in all).
    answer = legacy.put_item(TableName=table, Item=item("big", 40 * 1024))
    assert answer["ResponseMetadata"]["RetryAttempts"] >= 1
    assert "Item" in legacy.get_item(TableName=table, Key={"pk": {"S": "big"}}, ConsistentRead=True)


def test_standard_retries_give_up_after_three_attempts_with_the_throttle(modelled_region, unique_table_name):
    table = create(make_client(modelled_region.endpoint), unique_table_name("standard"), provisioned=(1, 1))
    standard = make_client(modelled_region.endpoint, config=Config(retries={"mode": "standard"}))
    # 100 units on a table with 1 a second needs a full 100-unit bucket, 99 s away: three attempts within 3 s fail.
    with pytest.raises(standard.exceptions.ProvisionedThroughputExceededException) as caught:
        standard.put_item(TableName=table, Item=item("big", 100 * 1024))
    assert caught.value.response["ResponseMetadata"]["RetryAttempts"] == 2
    assert caught.value.response["ResponseMetadata"]["MaxAttemptsReached"] is True


def test_batch_write_returns_throttled_items_unprocessed(client, unique_table_name):
    table = create(client, unique_table_name("bwi"), provisioned=(1, 1))
    requests = [{"PutRequest": {"Item": item(f"k{n}")}} for n in range(10)]
    answer = client.batch_write_item(RequestItems={table: requests})
    assert answer["UnprocessedItems"] == {table: requests[1:]}
    with pytest.raises(client.exceptions.ProvisionedThroughputExceededException):
        client.batch_write_item(RequestItems={table: requests[1:]})  # none could be written: the whole batch fails


def test_batch_get_returns_throttled_keys_unprocessed(client, unique_table_name):
    table = create(client, unique_table_name("bgi"), provisioned=(1, 5))
    for n in range(5):
        client.put_item(TableName=table, Item=item(f"k{n}"))
    keys = [{"pk": {"S": f"k{n}"}} for n in range(5)]
    answer = client.batch_get_item(RequestItems={table: {"Keys": keys, "ConsistentRead": True}})
    assert len(answer["Responses"][table]) == 1
    assert answer["UnprocessedKeys"][table]["Keys"] == [k for k in keys if k not in answer["Responses"][table]]
    with pytest.raises(ClientError) as caught:
        client.batch_get_item(RequestItems={table: {"Keys": keys[1:], "ConsistentRead": True}})
    assert caught.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert caught.value.response["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"


def test_transactions_cancel_with_the_throttled_code(client, unique_table_name):
    table = create(client, unique_table_name("twi"), provisioned=(1, 2))
    client.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": item("a")}}])  # 2 units
    with pytest.raises(client.exceptions.TransactionCanceledException) as caught:
        client.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": item("b")}}])
    assert [r["Code"] for r in caught.value.response["CancellationReasons"]] == ["ProvisionedThroughputExceeded"]
