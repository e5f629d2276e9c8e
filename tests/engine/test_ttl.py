"""Time to live on an in-memory engine (ManualClock): UpdateTimeToLive / DescribeTimeToLive and their refusals, and
the sweeper: what expires (Numbers in the past only), service deletions in the stream, index cleanup, bounded steps.
"""

from __future__ import annotations

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.runtime.clock import ManualClock

T0 = 1_700_000_000
YEAR = 365 * 24 * 3600


@pytest.fixture
def clock():
    return ManualClock(wall_time=float(T0))


@pytest.fixture
def engine(clock, make_store):
    engine = Engine(make_store(), clock)
    engine.handle(
        "CreateTable",
        {
            "TableName": "Sessions",
            "AttributeDefinitions": [
                {"AttributeName": "id", "AttributeType": "S"},
                {"AttributeName": "user", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "byUser",
                    "KeySchema": [{"AttributeName": "user", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        },
    )
    return engine


def enable(engine, attribute="expires", table="Sessions"):
    return call(
        engine,
        "UpdateTimeToLive",
        {"TableName": table, "TimeToLiveSpecification": {"Enabled": True, "AttributeName": attribute}},
    )


def put(engine, key, expires=None, table="Sessions", **extra):
    item = {"id": {"S": key}, "user": {"S": "u"}, **extra}
    if expires is not None:
        item["expires"] = expires
    call(engine, "PutItem", {"TableName": table, "Item": item})


def keys(engine, table="Sessions"):
    return sorted(i["id"]["S"] for i in call(engine, "Scan", {"TableName": table})["Items"])


def stream_records(engine, table="Sessions"):
    arn = call(engine, "DescribeTable", {"TableName": table})["Table"]["LatestStreamArn"]
    shard = engine.handle_streams("DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"][0]
    shard_iterator = engine.handle_streams(
        "GetShardIterator", {"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}
    )["ShardIterator"]
    return engine.handle_streams("GetRecords", {"ShardIterator": shard_iterator})["Records"]


# ------------------------------------------------------------------------------------------------ the operations


def test_enable_describe_disable(engine):
    assert call(engine, "DescribeTimeToLive", {"TableName": "Sessions"}) == {
        "TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}
    }
    assert enable(engine) == {"TimeToLiveSpecification": {"AttributeName": "expires", "Enabled": True}}
    assert call(engine, "DescribeTimeToLive", {"TableName": "Sessions"}) == {
        "TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}
    }
    disabled = call(
        engine,
        "UpdateTimeToLive",
        {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": False, "AttributeName": "expires"}},
    )
    assert disabled == {"TimeToLiveSpecification": {"AttributeName": "expires", "Enabled": False}}
    assert call(engine, "DescribeTimeToLive", {"TableName": "Sessions"}) == {
        "TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}
    }
    assert enable(engine, "other")["TimeToLiveSpecification"]["AttributeName"] == "other"


def test_ttl_setting_survives_restart(tmp_path, clock):
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), clock)
    call(
        engine,
        "CreateTable",
        {
            "TableName": "Durable",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    enable(engine, table="Durable")
    engine.store.close()
    engine = Engine(SqliteStore(path), clock)
    description = call(engine, "DescribeTimeToLive", {"TableName": "Durable"})["TimeToLiveDescription"]
    assert description == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}
    engine.store.close()


def spec(enabled, name="expires"):
    return {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": enabled, "AttributeName": name}}


def test_refused_updates_change_nothing(engine):
    error = error_of(engine, "UpdateTimeToLive", spec(False))
    assert (error.type_name, error.message) == ("ValidationException", "TimeToLive is already disabled")
    enable(engine)
    for request, expected in [
        (spec(True), "TimeToLive is already enabled"),
        (spec(True, "other"), "TimeToLive is already enabled"),
        (spec(False, "other"), "TimeToLive is active on a different AttributeName: current AttributeName is expires"),
    ]:
        error = error_of(engine, "UpdateTimeToLive", request)
        assert (error.type_name, error.message) == ("ValidationException", expected)
    assert call(engine, "DescribeTimeToLive", {"TableName": "Sessions"})["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": "expires",
    }


@pytest.mark.parametrize(
    ("request_body", "expected_type", "fragment"),
    [
        ({"TableName": "Sessions"}, "ValidationException", "Value null at 'timeToLiveSpecification'"),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"AttributeName": "x"}},
            "ValidationException",
            "Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null",
        ),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": True}},
            "ValidationException",
            "Value null at 'timeToLiveSpecification.attributeName'",
        ),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": True, "AttributeName": ""}},
            "ValidationException",
            "Member must have length greater than or equal to 1",
        ),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "a" * 256}},
            "ValidationException",
            "Member must have length less than or equal to 255",
        ),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": "true", "AttributeName": "x"}},
            "SerializationException",
            "",
        ),
        (
            {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": True, "AttributeName": 5}},
            "SerializationException",
            "",
        ),
        ({"TableName": "Sessions", "TimeToLiveSpecification": "expires"}, "SerializationException", ""),
        (
            {"TableName": "Missing", "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "x"}},
            "ResourceNotFoundException",
            "Requested resource not found: Table: Missing not found",
        ),
    ],
)
def test_malformed_specifications(engine, request_body, expected_type, fragment):
    error = error_of(engine, "UpdateTimeToLive", request_body)
    assert error.type_name == expected_type and fragment in error.message
    assert call(engine, "DescribeTimeToLive", {"TableName": "Sessions"})["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "DISABLED"
    }


def test_describe_unknown_table(engine):
    assert error_of(engine, "DescribeTimeToLive", {"TableName": "Missing"}).type_name == "ResourceNotFoundException"


# -------------------------------------------------------------------------------------------------- the sweeper


def test_sweep_deletes_only_numbers_in_the_past(engine, clock):
    enable(engine)
    put(engine, "past", {"N": str(T0 - 10)})
    put(engine, "now", {"N": str(T0)})
    put(engine, "fractional-past", {"N": f"{T0 - 1}.5"})
    put(engine, "future", {"N": str(T0 + 10)})
    put(engine, "string", {"S": str(T0 - 10)})  # a string TTL is never expired
    put(engine, "number-set", {"NS": [str(T0 - 10)]})
    put(engine, "ancient", {"N": str(T0 - 6 * YEAR)})  # more than five years back: ignored, as DynamoDB does
    put(engine, "no-ttl")
    assert engine.sweep_expired(100) == 3
    assert engine.ttl.pass_complete
    assert keys(engine) == ["ancient", "future", "no-ttl", "number-set", "string"]
    # The index lost them too.
    indexed = call(
        engine,
        "Query",
        {
            "TableName": "Sessions",
            "IndexName": "byUser",
            "KeyConditionExpression": "#u = :u",
            "ExpressionAttributeNames": {"#u": "user"},
            "ExpressionAttributeValues": {":u": {"S": "u"}},
        },
    )
    assert sorted(i["id"]["S"] for i in indexed["Items"]) == keys(engine)
    clock.advance(11)
    assert engine.sweep_expired(100) == 1
    assert "future" not in keys(engine)


def test_expired_items_stay_readable_until_the_sweep(engine, clock):
    enable(engine)
    put(engine, "a", {"N": str(T0 + 5)})
    clock.advance(10)
    assert keys(engine) == ["a"]  # not instant, as in DynamoDB
    engine.sweep_expired(10)
    assert keys(engine) == []


def test_ttl_deletion_is_a_service_remove_in_the_stream(engine):
    enable(engine)
    put(engine, "a", {"N": str(T0 - 1)})
    call(engine, "DeleteItem", {"TableName": "Sessions", "Key": {"id": {"S": "gone-already"}}})
    put(engine, "b")
    call(engine, "DeleteItem", {"TableName": "Sessions", "Key": {"id": {"S": "b"}}})
    engine.sweep_expired(10)
    records = stream_records(engine)
    assert [(r["eventName"], r["dynamodb"]["Keys"]["id"]["S"]) for r in records] == [
        ("INSERT", "a"),
        ("INSERT", "b"),
        ("REMOVE", "b"),
        ("REMOVE", "a"),
    ]
    assert "userIdentity" not in records[2]  # a user's delete
    assert records[3]["userIdentity"] == {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
    assert records[3]["dynamodb"]["OldImage"]["expires"] == {"N": str(T0 - 1)}


def test_no_sweep_without_ttl_enabled(engine):
    put(engine, "a", {"N": str(T0 - 1)})
    assert engine.sweep_expired(10) == 0
    enable(engine)
    call(
        engine,
        "UpdateTimeToLive",
        {"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": False, "AttributeName": "expires"}},
    )
    assert engine.sweep_expired(10) == 0
    assert keys(engine) == ["a"]


def test_sweep_is_bounded_and_resumes(engine):
    enable(engine)
    for i in range(25):
        put(engine, f"k{i:02d}", {"N": str(T0 - 1 if i % 2 else T0 + 100)})
    engine.ttl.scan_budget = 4
    deleted = []
    steps = 0
    while True:
        deleted.append(engine.sweep_expired(100))
        steps += 1
        assert deleted[-1] <= 4
        if engine.ttl.pass_complete:
            break
        assert steps < 20
    assert sum(deleted) == 12 and steps >= 6
    engine.ttl.scan_budget = 1000
    assert engine.sweep_expired(5) == 0 and engine.ttl.pass_complete
    assert len(keys(engine)) == 13


def test_sweep_limit_bounds_deletions(engine):
    enable(engine)
    for i in range(10):
        put(engine, f"k{i}", {"N": str(T0 - 1)})
    assert engine.sweep_expired(3) == 3 and not engine.ttl.pass_complete
    assert engine.sweep_expired(3) == 3
    assert engine.sweep_expired(100) == 4 and engine.ttl.pass_complete
    assert keys(engine) == []


def test_sweep_covers_every_ttl_table_and_survives_table_deletion(engine):
    engine.handle(
        "CreateTable",
        {
            "TableName": "Other",
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    enable(engine)
    enable(engine, "gone", table="Other")
    put(engine, "a", {"N": str(T0 - 1)})
    call(engine, "PutItem", {"TableName": "Other", "Item": {"id": {"S": "x"}, "gone": {"N": str(T0 - 1)}}})
    call(engine, "PutItem", {"TableName": "Other", "Item": {"id": {"S": "y"}, "gone": {"N": str(T0 - 1)}}})
    assert engine.sweep_expired(1) == 1  # stops inside "Other"
    engine.handle("DeleteTable", {"TableName": "Other"})
    put(engine, "b", {"N": str(T0 - 1)})
    while True:
        engine.sweep_expired(10)
        if engine.ttl.pass_complete:
            break
    engine.sweep_expired(10)
    assert keys(engine) == []


def test_held_items_wait_for_a_later_pass(engine):
    enable(engine)
    put(engine, "a", {"N": str(T0 - 1)})
    engine.faults.hold_item(engine.table("Sessions"), {"id": {"S": "a"}})
    assert engine.sweep_expired(10) == 0
    engine.faults.release_all()
    assert engine.sweep_expired(10) == 1
