"""On-demand mode on virtual time (engine/throughput.py): twice the previous peak, OnDemandThroughput maxima and
the per-table quota."""

from __future__ import annotations

import itertools

from capacity_drive import ARN, drive, keys_in_partitions, modelled, put, sized_put, table_request
from engine_calls import call, error_of
from globaltables.engine.throttling import (
    INDEX_ON_DEMAND_MESSAGE,
    MAX_ON_DEMAND_MESSAGE,
    RequestLimitExceeded,
    ThrottlingException,
)
from globaltables.engine.throughput import CapacitySettings


def test_twice_the_previous_peak_once_it_is_30_minutes_old():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Peaks"))
    keys = keys_in_partitions(engine.tables["Peaks"], 12, 10)  # uniform over 12 ranges, so over 4 and 6 partitions
    request = lambda n: ("PutItem", sized_put("Peaks", keys[n % len(keys)], 4096))
    served, refused = drive(engine, clock, 10.0, 740, request)  # a peak of 2,960 units a second: served
    assert (served, refused) == (7400, [])
    clock.advance(1790.0)
    call(engine, "PutItem", sized_put("Peaks", keys[0], 4096))
    assert engine.throughput.tables["Peaks"].resources[None].count == 4  # not yet 30 minutes: twice 2,000
    clock.advance(10.0)
    served, refused = drive(engine, clock, 10.0, 1500, request)
    assert (served, refused) == (15_000, [])  # 30 minutes later: twice 2,960 (six partitions serve 6,000)
    assert engine.throughput.tables["Peaks"].resources[None].count == 6


def test_a_new_tables_first_second_is_not_a_peak():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Fresh"))
    keys = keys_in_partitions(engine.tables["Fresh"], 4, 10)
    request = lambda n: ("PutItem", sized_put("Fresh", keys[n % len(keys)], 4096))
    served, _ = drive(engine, clock, 1.0, 2000, request)
    assert served >= 1990  # about 8,000 units: 4,000 a second plus the second full partitions start with
    clock.advance(1801.0)
    call(engine, "PutItem", sized_put("Fresh", keys[0], 4096))
    assert engine.throughput.tables["Fresh"].resources[None].count == 8  # twice 4,000, not twice 8,000


def test_on_demand_maximum_throttles_with_max_on_demand_reasons_until_removed():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Capped", OnDemandThroughput={"MaxWriteRequestUnits": 50}))
    request = lambda n: ("PutItem", put("Capped", f"k{n % 100}"))
    drive(engine, clock, 1.0, 200, request)
    served, refused = drive(engine, clock, 10.0, 200, request)
    assert abs(served - 500) <= 5
    body = refused[0].to_body()
    assert isinstance(refused[0], ThrottlingException) and refused[0].status == 400
    assert body == {
        "__type": "com.amazon.coral.availability#ThrottlingException",
        "message": MAX_ON_DEMAND_MESSAGE,
        "throttlingReasons": [{"reason": "TableWriteMaxOnDemandThroughputExceeded", "resource": ARN + "Capped"}],
    }
    reads = lambda n: ("GetItem", {"TableName": "Capped", "Key": {"pk": {"S": "k1"}}})
    assert drive(engine, clock, 1.0, 200, reads)[1] == []  # reads have no maximum
    call(engine, "UpdateTable", {"TableName": "Capped", "OnDemandThroughput": {"MaxWriteRequestUnits": -1}})
    served, refused = drive(engine, clock, 10.0, 200, request)
    assert (served, refused) == (2000, [])


def test_a_gsi_maximum_throttles_base_writes_with_the_index_reason():
    engine, _clock = modelled()
    request = table_request(
        "IndexCapped",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}, "OnDemandThroughput": {"MaxWriteRequestUnits": 3},
        }],
    )  # fmt: skip
    call(engine, "CreateTable", request)
    for n in range(3):
        call(engine, "PutItem", put("IndexCapped", f"k{n}", g="x"))
    error = error_of(engine, "PutItem", put("IndexCapped", "k3", g="x"))
    assert isinstance(error, ThrottlingException)
    assert error.to_body()["throttlingReasons"] == [
        {"reason": "IndexWriteMaxOnDemandThroughputExceeded", "resource": ARN + "IndexCapped/index/byG"}
    ]
    call(engine, "PutItem", put("IndexCapped", "k3"))  # not in the index: served


def test_the_per_table_quota_counts_the_table_and_its_indexes_and_answers_request_limit_exceeded():
    engine, clock = modelled(capacity=CapacitySettings(table_max_write_units=10))
    request = table_request(
        "Quota",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        }],
    )  # fmt: skip
    call(engine, "CreateTable", request)
    for n in range(5):  # 2 units each: the table's and the index's
        call(engine, "PutItem", put("Quota", f"k{n}", g="x"))
    error = error_of(engine, "PutItem", put("Quota", "k5", g="x"))
    assert isinstance(error, RequestLimitExceeded) and error.status == 400
    assert error.to_body() == {
        "__type": "com.amazonaws.dynamodb.v20120810#RequestLimitExceeded",
        "message": "Throughput exceeds the current throughput limit for your account. To request a limit increase, "
        "contact AWS Support at https://aws.amazon.com/support.",
        "ThrottlingReasons": [{"reason": "TableWriteAccountLimitExceeded", "resource": ARN + "Quota"}],
    }
    clock.advance(1.0)
    call(engine, "PutItem", put("Quota", "k5", g="x"))


def test_warm_throughput_pre_splits_the_partitions():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Warm", WarmThroughput={"WriteUnitsPerSecond": 8000}))
    keys = keys_in_partitions(engine.tables["Warm"], 8, 10)
    request = lambda n: ("PutItem", sized_put("Warm", keys[n % len(keys)], 4096))
    served, refused = drive(engine, clock, 5.0, 2000, request)  # 8,000 units a second at once
    assert (served, refused) == (10_000, [])
    cold, cold_clock = modelled()
    call(cold, "CreateTable", table_request("Warm"))
    cold_request = lambda n: ("PutItem", sized_put("Warm", keys[n % len(keys)], 4096))
    served, refused = drive(cold, cold_clock, 5.0, 2000, cold_request)
    assert refused  # the same load on a table that is not pre-warmed: four partitions, 4,000 a second


def test_update_table_sets_a_gsi_maximum():
    engine, _clock = modelled()
    request = table_request(
        "GsiUpdate",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"},
        }],
    )  # fmt: skip
    call(engine, "CreateTable", request)
    update = {"Update": {"IndexName": "byG", "OnDemandThroughput": {"MaxWriteRequestUnits": 1}}}
    call(engine, "UpdateTable", {"TableName": "GsiUpdate", "GlobalSecondaryIndexUpdates": [update]})
    call(engine, "PutItem", put("GsiUpdate", "a", g="x"))
    error = error_of(engine, "PutItem", put("GsiUpdate", "b", g="x"))
    assert error.to_body()["throttlingReasons"][0]["reason"] == "IndexWriteMaxOnDemandThroughputExceeded"


def test_a_hot_gsi_key_throttles_base_writes_with_the_index_key_range_reason():
    engine, clock = modelled()
    request = table_request(
        "HotIndex",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "g", "AttributeType": "S"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
        }],
    )  # fmt: skip
    call(engine, "CreateTable", request)
    # Every item has the same index key: the base table spreads them, the index holds them in one partition.
    version = itertools.count()  # every write changes the item, so every write writes the index
    write = lambda n: ("PutItem", put("HotIndex", f"k{n % 1000}", g="same", v=next(version)))
    drive(engine, clock, 1.0, 3000, write)
    served, refused = drive(engine, clock, 10.0, 1500, write)
    assert abs(served - 10_000) <= 200  # the index partition's 1,000 a second
    error = refused[0]
    assert isinstance(error, ThrottlingException)
    assert error.to_body()["message"] == INDEX_ON_DEMAND_MESSAGE
    assert error.to_body()["throttlingReasons"] == [
        {"reason": "IndexWriteKeyRangeThroughputExceeded", "resource": ARN + "HotIndex/index/byG"}
    ]
