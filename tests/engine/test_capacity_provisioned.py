"""Provisioned mode on virtual time (engine/throughput.py): the table's rate, burst capacity, adaptive capacity,
UpdateTable, and GSI back-pressure on base-table writes."""

from __future__ import annotations

from capacity_drive import ARN, drive, keys_in_partitions, modelled, put, sized_put, stream_keys, table_request
from engine_calls import call, error_of
from globaltables.engine.errors import ProvisionedThroughputExceededException
from globaltables.engine.throttling import INDEX_PROVISIONED_MESSAGE, TABLE_PROVISIONED_MESSAGE


def test_a_provisioned_table_serves_its_rate_and_answers_ptee_beyond_it():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Slow", provisioned=(5, 20)))
    request = lambda n: ("PutItem", put("Slow", f"k{n % 50}"))
    served, refused = drive(engine, clock, 10.0, 100, request)
    assert abs(served - (20 + 10 * 20)) <= 2  # the second it starts with, then 20 a second
    error = refused[0]
    assert isinstance(error, ProvisionedThroughputExceededException) and error.status == 400
    assert error.to_body() == {
        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
        "message": TABLE_PROVISIONED_MESSAGE,
        "ThrottlingReasons": [{"reason": "TableWriteProvisionedThroughputExceeded", "resource": ARN + "Slow"}],
    }
    get = lambda n: ("GetItem", {"TableName": "Slow", "Key": {"pk": {"S": "k1"}}, "ConsistentRead": True})
    served, refused = drive(engine, clock, 10.0, 100, get)
    assert abs(served - (5 + 10 * 5 + 10 * 5)) <= 2  # reads have their own rate (and banked 10 s unused)
    assert refused[0].to_body()["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"


def test_burst_capacity_banks_up_to_300_seconds_of_unused_capacity():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Bursty", provisioned=(10, 10)))
    request = lambda n: ("PutItem", put("Bursty", f"k{n % 50}"))
    clock.advance(100.0)
    served, _ = drive(engine, clock, 20.0, 500, request)
    assert abs(served - (10 + 100 * 10 + 20 * 10)) <= 3  # 100 s idle: 1,000 units banked, spent at once
    clock.advance(1000.0)
    served, _ = drive(engine, clock, 20.0, 500, request)
    assert abs(served - (300 * 10 + 20 * 10)) <= 3  # 1,000 s idle banks no more than 300 s
    served, refused = drive(engine, clock, 10.0, 500, request)
    assert abs(served - 100) <= 2 and refused  # spent: throttled at its rate again


def test_adaptive_capacity_lets_a_hot_partition_use_the_tables_unused_capacity_up_to_the_partition_limit():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Adaptive", provisioned=(5, 1500)))  # 2 partitions, 750 each
    keys = keys_in_partitions(engine.tables["Adaptive"], 2, 10)
    spread = lambda n: ("PutItem", put("Adaptive", keys[n % len(keys)]))
    drive(engine, clock, 2.0, 4000, spread)  # spends the second every bucket starts with
    served, _ = drive(engine, clock, 10.0, 2000, spread)
    assert abs(served - 15_000) <= 300  # two partitions together: the table's 1,500 a second
    hot = lambda n: ("PutItem", put("Adaptive", "hot"))
    drive(engine, clock, 3.0, 3000, hot)  # until its partition, not the table, is what limits it
    served, _ = drive(engine, clock, 10.0, 1200, hot)
    # One key gets 1,000 a second: above its partition's share (750), up to the partition limit, though the table
    # has 500 a second more.
    assert abs(served - 10_000) <= 200


def test_update_table_changes_the_rate_at_once():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Grows", provisioned=(5, 5)))
    request = lambda n: ("PutItem", put("Grows", f"k{n % 50}"))
    drive(engine, clock, 2.0, 100, request)
    call(
        engine,
        "UpdateTable",
        {"TableName": "Grows", "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 50}},
    )
    served, _ = drive(engine, clock, 10.0, 100, request)
    assert abs(served - 500) <= 5
    call(
        engine,
        "UpdateTable",
        {"TableName": "Grows", "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10}},
    )
    drive(engine, clock, 1.0, 100, request)
    served, _ = drive(engine, clock, 10.0, 100, request)
    assert abs(served - 100) <= 2


def gsi_table(name: str, gsi_writes: int) -> dict:
    return table_request(
        name,
        provisioned=(100, 1000),
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "owner", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byOwner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": gsi_writes},
            }
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )


def test_a_gsi_short_of_write_capacity_throttles_the_base_tables_writes(make_store):
    engine, clock = modelled(make_store())
    call(engine, "CreateTable", gsi_table("Owned", gsi_writes=5))
    for n in range(5):  # the index's first second
        call(engine, "PutItem", put("Owned", f"k{n}", owner="ann"))
    error = error_of(engine, "PutItem", put("Owned", "k9", owner="ann"))
    assert isinstance(error, ProvisionedThroughputExceededException)
    assert error.to_body()["message"] == INDEX_PROVISIONED_MESSAGE
    assert error.to_body()["ThrottlingReasons"] == [
        {"reason": "IndexWriteProvisionedThroughputExceeded", "resource": ARN + "Owned/index/byOwner"}
    ]
    # Nothing changed: no item, no index entry, no stream record.
    assert call(engine, "GetItem", {"TableName": "Owned", "Key": {"pk": {"S": "k9"}}}) == {}
    assert stream_keys(engine, "Owned") == ["k0", "k1", "k2", "k3", "k4"]
    # A write the index does not see is served: the table has capacity of its own.
    call(engine, "PutItem", put("Owned", "k9", note="no owner"))
    # A second later the index can take five more.
    clock.advance(1.0)
    call(engine, "PutItem", put("Owned", "k10", owner="bob"))


def test_a_gsi_short_of_reads_does_not_affect_the_table():
    engine, _clock = modelled()
    call(engine, "CreateTable", gsi_table("Readers", gsi_writes=1000))
    call(engine, "PutItem", put("Readers", "k1", owner="ann"))
    query = {"TableName": "Readers", "IndexName": "byOwner", "KeyConditionExpression": "#o = :o",
             "ExpressionAttributeNames": {"#o": "owner"}, "ExpressionAttributeValues": {":o": {"S": "ann"}}}  # fmt: skip
    for _ in range(10):  # 0.5 units each: the index's 5 a second
        call(engine, "Query", query)
    error = error_of(engine, "Query", query)
    assert error.to_body()["ThrottlingReasons"] == [
        {"reason": "IndexReadProvisionedThroughputExceeded", "resource": ARN + "Readers/index/byOwner"}
    ]
    call(engine, "GetItem", {"TableName": "Readers", "Key": {"pk": {"S": "k1"}}})
    call(engine, "PutItem", put("Readers", "k2", owner="ann"))


def test_a_write_larger_than_the_bucket_waits_for_a_full_bucket_then_succeeds():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Tiny", provisioned=(1, 1)))  # burst: 300 units at most
    big = sized_put("Tiny", "big", 350 * 1024)  # 350 units
    assert isinstance(error_of(engine, "PutItem", big), ProvisionedThroughputExceededException)
    clock.advance(298.0)  # 299 banked: not yet full
    assert isinstance(error_of(engine, "PutItem", big), ProvisionedThroughputExceededException)
    clock.advance(1.0)
    call(engine, "PutItem", big)  # a full bucket lets it through, 50 units in debt
    clock.advance(50.0)
    assert isinstance(error_of(engine, "PutItem", put("Tiny", "small")), ProvisionedThroughputExceededException)
    clock.advance(1.0)
    call(engine, "PutItem", put("Tiny", "small"))
