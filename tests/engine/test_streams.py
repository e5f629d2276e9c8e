"""The change log and the DynamoDB Streams API on an in-memory engine (ManualClock: iterator expiry and retention
are deterministic): which changes make records, view types, sequence numbers (also across a restart and a trim),
stream lifecycle (disable, re-enable, table deletion), iterator types and every refused input.
"""

from __future__ import annotations

import copy

import pytest

from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.runtime.clock import ManualClock
from store_probes import change_log_count

T0 = 1_700_000_000.0
DAY = 24 * 3600.0


@pytest.fixture
def clock():
    return ManualClock(wall_time=T0)


@pytest.fixture
def engine(clock, make_store):
    return Engine(make_store(), clock)


def create(engine, name="Tab", view="NEW_AND_OLD_IMAGES", sort=False, stream=True):
    attrs = [{"AttributeName": "id", "AttributeType": "S"}]
    keys = [{"AttributeName": "id", "KeyType": "HASH"}]
    if sort:
        attrs.append({"AttributeName": "n", "AttributeType": "N"})
        keys.append({"AttributeName": "n", "KeyType": "RANGE"})
    request = {"TableName": name, "AttributeDefinitions": attrs, "KeySchema": keys, "BillingMode": "PAY_PER_REQUEST"}
    if stream:
        request["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": view}
    return engine.handle("CreateTable", request)["TableDescription"]


def put(engine, item, table="Tab"):
    engine.handle("PutItem", {"TableName": table, "Item": item})


def item(i, **attrs):
    out = {"id": {"S": f"k{i}"}}
    for name, value in attrs.items():
        out[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}
    return out


def streams_call(engine, operation, request):
    return copy.deepcopy(engine.handle_streams(operation, copy.deepcopy(request)))


def error_of(engine, operation, request) -> DynamoError:
    with pytest.raises(DynamoError) as caught:
        engine.handle_streams(operation, copy.deepcopy(request))
    return caught.value


def latest_arn(engine, table="Tab"):
    return engine.handle("DescribeTable", {"TableName": table})["Table"]["LatestStreamArn"]


def shard_of(engine, arn):
    return streams_call(engine, "DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"][0]


def iterator(engine, arn, kind="TRIM_HORIZON", seq=None):
    request = {"StreamArn": arn, "ShardId": shard_of(engine, arn)["ShardId"], "ShardIteratorType": kind}
    if seq is not None:
        request["SequenceNumber"] = seq
    return streams_call(engine, "GetShardIterator", request)["ShardIterator"]


def read_all(engine, arn, kind="TRIM_HORIZON", seq=None, limit=None):
    """Every record from the iterator on, following NextShardIterator until a call returns nothing new."""
    records = []
    shard_iterator = iterator(engine, arn, kind, seq)
    while shard_iterator is not None:
        request = {"ShardIterator": shard_iterator}
        if limit is not None:
            request["Limit"] = limit
        page = streams_call(engine, "GetRecords", request)
        records.extend(page["Records"])
        shard_iterator = page.get("NextShardIterator")
        if not page["Records"]:
            break
    return records


def summary(records):
    return [(r["eventName"], r["dynamodb"]["Keys"]["id"]["S"]) for r in records]


# ------------------------------------------------------------------------------------------- which changes log


def test_insert_modify_remove_with_both_images(engine):
    create(engine)
    put(engine, item(1, v=1))
    engine.handle(
        "UpdateItem",
        {
            "TableName": "Tab",
            "Key": {"id": {"S": "k1"}},
            "UpdateExpression": "SET v = :v",
            "ExpressionAttributeValues": {":v": {"N": "2"}},
        },
    )
    engine.handle("DeleteItem", {"TableName": "Tab", "Key": {"id": {"S": "k1"}}})
    records = read_all(engine, latest_arn(engine))
    assert summary(records) == [("INSERT", "k1"), ("MODIFY", "k1"), ("REMOVE", "k1")]
    insert, modify, remove = (r["dynamodb"] for r in records)
    assert insert["NewImage"] == item(1, v=1) and "OldImage" not in insert
    assert modify["OldImage"] == item(1, v=1) and modify["NewImage"] == item(1, v=2)
    assert remove["OldImage"] == item(1, v=2) and "NewImage" not in remove
    for record in records:
        assert record["eventVersion"] == "1.1"
        assert record["eventSource"] == "aws:dynamodb"
        assert record["awsRegion"] == "us-east-1"
        assert len(record["eventID"]) == 32
        assert "userIdentity" not in record
        body = record["dynamodb"]
        assert body["Keys"] == {"id": {"S": "k1"}}
        assert body["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert body["ApproximateCreationDateTime"] == T0
        assert body["SizeBytes"] > 0
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert numbers == sorted(set(numbers))
    assert all(21 <= len(r["dynamodb"]["SequenceNumber"]) <= 40 for r in records)
    assert len({r["eventID"] for r in records}) == 3


def test_no_record_for_unchanged_item_or_missing_delete(engine):
    create(engine)
    put(engine, {"id": {"S": "k1"}, "s": {"SS": ["a", "b"]}})
    put(engine, {"id": {"S": "k1"}, "s": {"SS": ["b", "a"]}})  # equal: sets are unordered
    engine.handle(
        "UpdateItem",
        {
            "TableName": "Tab",
            "Key": {"id": {"S": "k1"}},
            "UpdateExpression": "SET s = s",
        },
    )
    engine.handle("DeleteItem", {"TableName": "Tab", "Key": {"id": {"S": "nothing"}}})
    engine.handle("UpdateItem", {"TableName": "Tab", "Key": {"id": {"S": "k2"}}})  # creates the item: a change
    assert summary(read_all(engine, latest_arn(engine))) == [("INSERT", "k1"), ("INSERT", "k2")]


def test_batches_and_transactions_log_each_item_and_failures_log_nothing(engine):
    create(engine)
    engine.handle(
        "BatchWriteItem",
        {"RequestItems": {"Tab": [{"PutRequest": {"Item": item(i)}} for i in range(3)]}},
    )
    engine.handle(
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Put": {"TableName": "Tab", "Item": item(0, v=1)}},
                {"Delete": {"TableName": "Tab", "Key": {"id": {"S": "k1"}}}},
            ]
        },
    )
    with pytest.raises(DynamoError):
        engine.handle(
            "TransactWriteItems",
            {
                "TransactItems": [
                    {"Put": {"TableName": "Tab", "Item": item(5)}},
                    {
                        "ConditionCheck": {
                            "TableName": "Tab",
                            "Key": {"id": {"S": "k2"}},
                            "ConditionExpression": "attribute_not_exists(id)",
                        }
                    },
                ]
            },
        )
    with pytest.raises(DynamoError):
        engine.handle(
            "PutItem", {"TableName": "Tab", "Item": item(2, v=9), "ConditionExpression": "attribute_not_exists(id)"}
        )
    assert sorted(summary(read_all(engine, latest_arn(engine)))[:3]) == [("INSERT", f"k{i}") for i in range(3)]
    assert summary(read_all(engine, latest_arn(engine)))[3:] == [("MODIFY", "k0"), ("REMOVE", "k1")]


@pytest.mark.parametrize(
    ("view", "shown"),
    [
        ("KEYS_ONLY", [set(), set(), set()]),
        ("NEW_IMAGE", [{"NewImage"}, {"NewImage"}, set()]),
        ("OLD_IMAGE", [set(), {"OldImage"}, {"OldImage"}]),
        ("NEW_AND_OLD_IMAGES", [{"NewImage"}, {"NewImage", "OldImage"}, {"OldImage"}]),
    ],
)
def test_view_type_decides_the_images_shown(engine, view, shown):
    create(engine, view=view, sort=True)
    key = {"id": {"S": "k"}, "n": {"N": "1"}}
    put(engine, {**key, "v": {"S": "x" * 100}})
    put(engine, {**key, "v": {"S": "y"}})
    engine.handle("DeleteItem", {"TableName": "Tab", "Key": key})
    records = read_all(engine, latest_arn(engine))
    assert [r["dynamodb"].keys() & {"NewImage", "OldImage"} for r in records] == shown
    assert all(r["dynamodb"]["Keys"] == key and r["dynamodb"]["StreamViewType"] == view for r in records)
    if view == "KEYS_ONLY":
        assert len({r["dynamodb"]["SizeBytes"] for r in records}) == 1  # the keys only
    description = streams_call(engine, "DescribeStream", {"StreamArn": latest_arn(engine)})["StreamDescription"]
    assert description["StreamViewType"] == view
    assert description["KeySchema"] == [
        {"AttributeName": "id", "KeyType": "HASH"},
        {"AttributeName": "n", "KeyType": "RANGE"},
    ]


def test_tables_without_a_stream_log_nothing(engine):
    create(engine, "Plain", stream=False)
    put(engine, item(1), table="Plain")
    assert change_log_count(engine.store) == 0
    assert streams_call(engine, "ListStreams", {}) == {"Streams": []}
    described = engine.handle("DescribeTable", {"TableName": "Plain"})["Table"]
    assert "LatestStreamArn" not in described and "StreamSpecification" not in described


# --------------------------------------------------------------------------------------------- describe and list


def test_describe_stream_and_table_agree(engine, clock):
    clock.advance(0.123)
    table = create(engine, view="NEW_IMAGE")
    arn = table["LatestStreamArn"]
    assert table["LatestStreamLabel"] == "2023-11-14T22:13:20.123"
    assert arn == "arn:aws:dynamodb:us-east-1:000000000000:table/Tab/stream/2023-11-14T22:13:20.123"
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"}
    description = streams_call(engine, "DescribeStream", {"StreamArn": arn})["StreamDescription"]
    assert description["StreamArn"] == arn
    assert description["StreamLabel"] == "2023-11-14T22:13:20.123"
    assert description["StreamStatus"] == "ENABLED"
    assert description["TableName"] == "Tab"
    assert description["CreationRequestDateTime"] == pytest.approx(T0 + 0.123)
    (shard,) = description["Shards"]
    assert shard["ShardId"].startswith("shardId-00000001700000000123-") and len(shard["ShardId"]) == 37
    assert "EndingSequenceNumber" not in shard["SequenceNumberRange"]
    put(engine, item(1))
    (record,) = read_all(engine, arn)
    assert record["dynamodb"]["SequenceNumber"] == shard["SequenceNumberRange"]["StartingSequenceNumber"]
    assert (
        streams_call(engine, "DescribeStream", {"StreamArn": arn, "ExclusiveStartShardId": shard["ShardId"]})[
            "StreamDescription"
        ]["Shards"]
        == []
    )


def test_list_streams_filters_and_pages(engine, clock):
    for name in ("Alpha", "Beta", "Gamma"):
        create(engine, name)
        clock.advance(1)
    create(engine, "NoStream", stream=False)
    listed = streams_call(engine, "ListStreams", {})["Streams"]
    assert [s["TableName"] for s in listed] == ["Alpha", "Beta", "Gamma"]
    assert all(s["StreamArn"].endswith("/stream/" + s["StreamLabel"]) for s in listed)
    assert streams_call(engine, "ListStreams", {"TableName": "Beta"})["Streams"] == [listed[1]]
    assert streams_call(engine, "ListStreams", {"TableName": "NoStream"}) == {"Streams": []}
    first = streams_call(engine, "ListStreams", {"Limit": 2})
    assert first["Streams"] == listed[:2] and first["LastEvaluatedStreamArn"] == listed[1]["StreamArn"]
    rest = streams_call(engine, "ListStreams", {"Limit": 2, "ExclusiveStartStreamArn": first["LastEvaluatedStreamArn"]})
    assert rest == {"Streams": listed[2:]}
    error = error_of(engine, "ListStreams", {"TableName": "Missing"})
    assert error.type_name == "ResourceNotFoundException"


# ----------------------------------------------------------------------------------------------- stream lifecycle


def test_disable_closes_the_shard_and_reenable_starts_a_new_stream(engine, clock):
    create(engine)
    first = latest_arn(engine)
    put(engine, item(1))
    engine.handle("UpdateTable", {"TableName": "Tab", "StreamSpecification": {"StreamEnabled": False}})
    put(engine, item(2))  # not logged: no stream
    described = engine.handle("DescribeTable", {"TableName": "Tab"})["Table"]
    assert described["LatestStreamArn"] == first and "StreamSpecification" not in described
    closed = streams_call(engine, "DescribeStream", {"StreamArn": first})["StreamDescription"]
    assert closed["StreamStatus"] == "DISABLED"
    rng = closed["Shards"][0]["SequenceNumberRange"]
    assert rng["EndingSequenceNumber"] == rng["StartingSequenceNumber"]
    shard_iterator = iterator(engine, first)
    page = streams_call(engine, "GetRecords", {"ShardIterator": shard_iterator})
    assert summary(page["Records"]) == [("INSERT", "k1")]
    assert "NextShardIterator" not in page  # a closed shard read to its end

    # Enabled again in the same millisecond: a new stream all the same, with its own label and ARN.
    engine.handle(
        "UpdateTable",
        {"TableName": "Tab", "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"}},
    )
    second = latest_arn(engine)
    assert second != first
    assert engine.handle("DescribeTable", {"TableName": "Tab"})["Table"]["LatestStreamLabel"] == second.split("/")[-1]
    put(engine, item(3))
    assert summary(read_all(engine, second)) == [("INSERT", "k3")]
    assert summary(read_all(engine, first)) == [("INSERT", "k1")]
    assert [s["StreamArn"] for s in streams_call(engine, "ListStreams", {"TableName": "Tab"})["Streams"]] == [
        first,
        second,
    ]
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in read_all(engine, first) + read_all(engine, second)]
    assert numbers[0] < numbers[1]


def test_deleted_table_stream_stays_readable_until_retention(engine, clock):
    create(engine)
    arn = latest_arn(engine)
    put(engine, item(1))
    engine.handle("DeleteTable", {"TableName": "Tab"})
    description = streams_call(engine, "DescribeStream", {"StreamArn": arn})["StreamDescription"]
    assert description["StreamStatus"] == "DISABLED"
    assert summary(read_all(engine, arn)) == [("INSERT", "k1")]
    # A new table of the same name gets a stream of its own, even within the same millisecond.
    create(engine)
    assert latest_arn(engine) != arn
    put(engine, item(9))
    assert summary(read_all(engine, latest_arn(engine))) == [("INSERT", "k9")]
    clock.advance(DAY + 1)
    engine.trim_change_log()
    assert error_of(engine, "DescribeStream", {"StreamArn": arn}).type_name == "ResourceNotFoundException"


# ---------------------------------------------------------------------------------------------- iterator types


def test_iterator_types(engine):
    create(engine)
    arn = latest_arn(engine)
    for i in range(4):
        put(engine, item(i))
    all_records = read_all(engine, arn)
    numbers = [r["dynamodb"]["SequenceNumber"] for r in all_records]
    assert summary(read_all(engine, arn, "AT_SEQUENCE_NUMBER", numbers[1])) == summary(all_records[1:])
    assert summary(read_all(engine, arn, "AFTER_SEQUENCE_NUMBER", numbers[1])) == summary(all_records[2:])
    latest = iterator(engine, arn, "LATEST")
    put(engine, item(7))
    page = streams_call(engine, "GetRecords", {"ShardIterator": latest})
    assert summary(page["Records"]) == [("INSERT", "k7")]
    empty = streams_call(engine, "GetRecords", {"ShardIterator": page["NextShardIterator"]})
    assert empty["Records"] == [] and "NextShardIterator" in empty  # an open shard always continues
    put(engine, item(8))
    assert summary(streams_call(engine, "GetRecords", {"ShardIterator": empty["NextShardIterator"]})["Records"]) == [
        ("INSERT", "k8")
    ]


def test_get_records_limit_pages_in_order(engine):
    create(engine)
    for i in range(7):
        put(engine, item(i))
    records = read_all(engine, latest_arn(engine), limit=3)
    assert summary(records) == [("INSERT", f"k{i}") for i in range(7)]


# ---------------------------------------------------------------------------------------------- sequence numbers


def test_sequence_numbers_survive_restart_and_trim(tmp_path, clock):
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), clock)
    create(engine)
    put(engine, item(1))
    put(engine, item(2))
    arn = latest_arn(engine)
    before = [r["dynamodb"]["SequenceNumber"] for r in read_all(engine, arn)]
    engine.store.close()

    engine = Engine(SqliteStore(path), clock)
    assert [r["dynamodb"]["SequenceNumber"] for r in read_all(engine, arn)] == before
    clock.advance(DAY + 1)
    assert engine.trim_change_log() == 2
    engine.store.close()

    engine = Engine(SqliteStore(path), clock)  # every record trimmed: numbering still goes on
    put(engine, item(3))
    (record,) = read_all(engine, arn)
    assert int(record["dynamodb"]["SequenceNumber"]) > int(before[-1])
    engine.store.close()


def test_retention_trims_old_records_only(engine, clock):
    engine.change_log.retention_s = 100.0
    create(engine)
    arn = latest_arn(engine)
    put(engine, item(1))
    old_iterator = iterator(engine, arn)
    first_seq = read_all(engine, arn)[0]["dynamodb"]["SequenceNumber"]
    clock.advance(60)
    put(engine, item(2))
    clock.advance(60)
    assert engine.trim_change_log() == 1
    assert summary(read_all(engine, arn)) == [("INSERT", "k2")]
    start = shard_of(engine, arn)["SequenceNumberRange"]["StartingSequenceNumber"]
    assert int(start) > int(first_seq)
    error = error_of(engine, "GetRecords", {"ShardIterator": old_iterator})
    assert error.type_name == "TrimmedDataAccessException"
    shard_id = shard_of(engine, arn)["ShardId"]
    request = {
        "StreamArn": arn,
        "ShardId": shard_id,
        "ShardIteratorType": "AT_SEQUENCE_NUMBER",
        "SequenceNumber": first_seq,
    }
    assert error_of(engine, "GetShardIterator", request).type_name == "TrimmedDataAccessException"


# ------------------------------------------------------------------------------------------------ refused input


def test_malformed_and_forged_iterators_are_invalid(engine):
    create(engine)
    put(engine, item(1))
    good = iterator(engine, latest_arn(engine))
    arn, _version, token = good.rsplit("|", 2)
    other = "x" if token[5] != "x" else "y"
    forged = [
        "garbage",
        f"{arn}|2|{token}",
        f"{arn}|1|{token[:5]}{other}{token[6:]}",
        f"{arn}|1|{token}AAAA",
        f"{arn}|1|!!!!",
        f"{arn.replace('table/Tab', 'table/Uvw')}|1|{token}",
        f"{arn}|1|",
    ]
    for text in forged:
        error = error_of(engine, "GetRecords", {"ShardIterator": text})
        assert (error.type_name, error.message) == ("ValidationException", "Invalid ShardIterator"), text
    error = error_of(engine, "GetRecords", {"ShardIterator": ""})
    assert error.type_name == "ValidationException" and "shardIterator" in error.message
    error = error_of(engine, "GetRecords", {"ShardIterator": good, "Limit": 1001})
    assert error.type_name == "ValidationException" and "less than or equal to 1000" in error.message
    error = error_of(engine, "GetRecords", {"ShardIterator": 7})
    assert error.type_name == "SerializationException"
    assert summary(streams_call(engine, "GetRecords", {"ShardIterator": good})["Records"]) == [("INSERT", "k1")]


def test_iterators_expire_after_15_minutes(engine, clock):
    create(engine)
    put(engine, item(1))
    shard_iterator = iterator(engine, latest_arn(engine))
    clock.advance(15 * 60)
    page = streams_call(engine, "GetRecords", {"ShardIterator": shard_iterator})  # just in time
    clock.advance(15 * 60 + 0.001)
    for stale in (shard_iterator, page["NextShardIterator"]):
        assert error_of(engine, "GetRecords", {"ShardIterator": stale}).type_name == "ExpiredIteratorException"


def test_bad_stream_requests(engine):
    create(engine)
    arn = latest_arn(engine)
    shard_id = shard_of(engine, arn)["ShardId"]
    missing = arn.replace("table/Tab/", "table/Missing/")
    cases = [
        ("DescribeStream", {}, "ValidationException"),
        ("DescribeStream", {"StreamArn": missing}, "ResourceNotFoundException"),
        ("DescribeStream", {"StreamArn": "arn:aws:dynamodb:us-east-1:000000000000:nonsense"}, "ValidationException"),
        ("DescribeStream", {"StreamArn": arn, "Limit": 0}, "ValidationException"),
        ("GetShardIterator", {"StreamArn": arn, "ShardId": shard_id}, "ValidationException"),
        (
            "GetShardIterator",
            {"StreamArn": arn, "ShardId": shard_id, "ShardIteratorType": "OLDEST"},
            "ValidationException",
        ),
        (
            "GetShardIterator",
            {"StreamArn": arn, "ShardId": shard_id, "ShardIteratorType": "AT_SEQUENCE_NUMBER"},
            "ValidationException",
        ),
        (
            "GetShardIterator",
            {
                "StreamArn": arn,
                "ShardId": shard_id,
                "ShardIteratorType": "AT_SEQUENCE_NUMBER",
                "SequenceNumber": "9" * 21,
            },
            "ValidationException",
        ),
        (
            "GetShardIterator",
            {
                "StreamArn": arn,
                "ShardId": shard_id,
                "ShardIteratorType": "AFTER_SEQUENCE_NUMBER",
                "SequenceNumber": "x" * 21,
            },
            "ValidationException",
        ),
        (
            "GetShardIterator",
            {"StreamArn": arn, "ShardId": "shardId-00000000000000000000-00000000", "ShardIteratorType": "LATEST"},
            "ResourceNotFoundException",
        ),
        (
            "GetShardIterator",
            {"StreamArn": missing, "ShardId": shard_id, "ShardIteratorType": "LATEST"},
            "ResourceNotFoundException",
        ),
        ("ListStreams", {"Limit": 101}, "ValidationException"),
        ("ListStreams", {"TableName": "ab"}, "ValidationException"),
        ("ListStreams", {"Limit": "2"}, "SerializationException"),
    ]
    for operation, request, expected in cases:
        assert error_of(engine, operation, request).type_name == expected, (operation, request)
    assert error_of(engine, "PutRecord", {}).type_name == "UnknownOperationException"
    assert error_of(engine, "ListStreams", []).type_name == "SerializationException"
    error = error_of(engine, "DescribeStream", {"StreamArn": missing})
    assert error.message == f"Requested resource not found: Stream: {missing} not found"
    assert error.to_body()["__type"] == "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"


def test_write_path_cost_without_streams_is_a_lookup(engine):
    """Tables without a stream never reach the log: the hook returns before looking at a write."""
    create(engine, "Plain", stream=False)
    assert engine.change_log._logged == {}
    create(engine, "Logged")
    assert set(engine.change_log._logged) == {"Logged"}
