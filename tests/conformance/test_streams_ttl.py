"""TTL and DynamoDB Streams through boto3 against real region processes.

- TTL: an item with a past expiry is gone after the sweep (the module's region sweeps every 0.2 s) and its REMOVE
  record carries the service identity; a string TTL attribute never expires.
- A consumer reading from TRIM_HORIZON sees exactly the changes applied, with the images its view type asks for,
  across a region restart (kill -9), continuing with an iterator issued before the restart.
- Bad input (TTL specifications of the wrong JSON types or lengths, malformed and expired shard iterators) gets
  DynamoDB's error type and changes nothing.
"""

from __future__ import annotations

import time

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from region_process import wait_until

SWEEP_INTERVAL_S = "0.2"
SWEEP_WAIT_S = 30.0  # bounded wait for the sweep; normally it takes well under a second

SERVICE = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
NO_CLIENT_VALIDATION = Config(retries={"total_max_attempts": 1}, parameter_validation=False)


@pytest.fixture(scope="module")
def region_args():
    """This module's region sweeps TTL every 0.2 s."""
    return ("--ttl-sweep-interval", SWEEP_INTERVAL_S)


def create_table(dynamodb, name, view="NEW_AND_OLD_IMAGES"):
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": view},
    )
    return dynamodb.describe_table(TableName=name)["Table"]["LatestStreamArn"]


def trim_horizon(streams, arn):
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]
    return streams.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]


def drain(streams, iterator, limit=1000):
    """(records, next iterator): GetRecords until a call returns nothing."""
    records = []
    while True:
        page = streams.get_records(ShardIterator=iterator, Limit=limit)
        records.extend(page["Records"])
        iterator = page["NextShardIterator"]
        if not page["Records"]:
            return records, iterator


def changes(records):
    return [
        (r["eventName"], r["dynamodb"]["Keys"]["id"]["S"], r["dynamodb"].get("OldImage"), r["dynamodb"].get("NewImage"))
        for r in records
    ]


# -------------------------------------------------------------------------------------------------------- TTL


@pytest.mark.local_region  # the sweep interval of this module's region
def test_expired_item_is_swept_with_a_service_remove(dynamodb, streams, unique_table_name):
    name = unique_table_name("Sessions")
    arn = create_table(dynamodb, name)
    dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"})
    assert dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"] == {
        "TimeToLiveStatus": "ENABLED",
        "AttributeName": "ttl",
    }
    now = int(time.time())
    # One batch, so the sweeper (every 0.2 s) cannot remove "expired" between the writes: the stream's order below
    # is then the batch order followed by the service deletion.
    items = [
        {"id": {"S": "expired"}, "ttl": {"N": str(now - 60)}},
        {"id": {"S": "future"}, "ttl": {"N": str(now + 3600)}},
        {"id": {"S": "string"}, "ttl": {"S": str(now - 60)}},
    ]
    dynamodb.batch_write_item(RequestItems={name: [{"PutRequest": {"Item": item}} for item in items]})

    def gone() -> bool:
        return "Item" not in dynamodb.get_item(TableName=name, Key={"id": {"S": "expired"}})

    wait_until(gone, SWEEP_WAIT_S, "the TTL sweep", interval=0.1)
    # Give the sweeper a few more passes: the string and future TTLs must still be there.
    time.sleep(3 * float(SWEEP_INTERVAL_S))
    remaining = sorted(i["id"]["S"] for i in dynamodb.scan(TableName=name, ConsistentRead=True)["Items"])
    assert remaining == ["future", "string"]

    records, _ = drain(streams, trim_horizon(streams, arn))
    assert [(r["eventName"], r["dynamodb"]["Keys"]["id"]["S"]) for r in records] == [
        ("INSERT", "expired"),
        ("INSERT", "future"),
        ("INSERT", "string"),
        ("REMOVE", "expired"),
    ]
    remove = records[-1]
    assert remove["userIdentity"] == SERVICE
    assert remove["dynamodb"]["OldImage"] == {"id": {"S": "expired"}, "ttl": {"N": str(now - 60)}}
    assert all("userIdentity" not in r for r in records[:-1])


def test_bad_ttl_specifications_change_nothing(client_factory, dynamodb, unique_table_name):
    name = unique_table_name("TtlBad")
    create_table(dynamodb, name)
    raw = client_factory(config=NO_CLIENT_VALIDATION)  # so the bad JSON reaches the region
    cases = [
        ({"Enabled": "true", "AttributeName": "ttl"}, "SerializationException"),  # a string where a boolean goes
        ({"Enabled": True, "AttributeName": 17}, "SerializationException"),  # a number where a string goes
        ({"Enabled": True, "AttributeName": ""}, "ValidationException"),
        ({"Enabled": True}, "ValidationException"),
    ]
    for specification, expected in cases:
        with pytest.raises(ClientError) as caught:
            raw.update_time_to_live(TableName=name, TimeToLiveSpecification=specification)
        assert caught.value.response["Error"]["Code"] == expected, specification
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"] == {
            "TimeToLiveStatus": "DISABLED"
        }
    with pytest.raises(ClientError) as caught:
        dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": False, "AttributeName": "t"})
    assert caught.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "TimeToLive is already disabled",
    }
    dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "t"})
    with pytest.raises(ClientError) as caught:
        dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "t"})
    assert caught.value.response["Error"] == {"Code": "ValidationException", "Message": "TimeToLive is already enabled"}


# ----------------------------------------------------------------------------------------------------- streams


def test_bad_shard_iterators_change_nothing(dynamodb, streams, unique_table_name):
    name = unique_table_name("Iter")
    arn = create_table(dynamodb, name)
    dynamodb.put_item(TableName=name, Item={"id": {"S": "a"}})
    good = trim_horizon(streams, arn)
    # (An iterator past its 15 minutes: tests/region/test_expired_shard_iterator.py, which can mint one.)
    cases = [
        ("garbage", "ValidationException"),
        (good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB"), "ValidationException"),
    ]
    for text, expected in cases:
        with pytest.raises(ClientError) as caught:
            streams.get_records(ShardIterator=text)
        assert caught.value.response["Error"]["Code"] == expected
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(streams.exceptions.ResourceNotFoundException):
        streams.describe_stream(StreamArn=arn.replace(f"table/{name}/", "table/no-such-table/"))
    # Nothing changed: the good iterator still reads the one record, and the table has its one item.
    page = streams.get_records(ShardIterator=good)
    assert [(r["eventName"], r["dynamodb"]["Keys"]) for r in page["Records"]] == [("INSERT", {"id": {"S": "a"}})]
    assert dynamodb.scan(TableName=name)["Count"] == 1


def test_list_and_describe_through_boto3(dynamodb, streams, unique_table_name):
    name = unique_table_name("Listed")
    arn = create_table(dynamodb, name, view="KEYS_ONLY")
    listed = streams.list_streams(TableName=name)["Streams"]
    assert listed == [{"StreamArn": arn, "TableName": name, "StreamLabel": arn.rsplit("/", 1)[1]}]
    description = streams.describe_stream(StreamArn=arn)["StreamDescription"]
    assert description["StreamStatus"] == "ENABLED"
    assert description["StreamViewType"] == "KEYS_ONLY"
    assert description["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert description["Shards"][0]["ShardId"].startswith("shardId-")


def apply_changes(dynamodb, table, start):
    """A fixed sequence of writes; the (event, key, old, new) records it must produce, in order."""
    a, b, c = (f"{start}-a", f"{start}-b", f"{start}-c")
    expected = []
    dynamodb.put_item(TableName=table, Item={"id": {"S": a}, "v": {"N": "1"}})
    expected.append(("INSERT", a, None, {"id": {"S": a}, "v": {"N": "1"}}))
    dynamodb.put_item(TableName=table, Item={"id": {"S": a}, "v": {"N": "1"}})  # unchanged: no record
    dynamodb.update_item(
        TableName=table,
        Key={"id": {"S": a}},
        UpdateExpression="SET v = v + :one, tags = :t",
        ExpressionAttributeValues={":one": {"N": "1"}, ":t": {"SS": ["x", "y"]}},
    )
    expected.append(
        ("MODIFY", a, {"id": {"S": a}, "v": {"N": "1"}}, {"id": {"S": a}, "v": {"N": "2"}, "tags": {"SS": ["x", "y"]}})
    )
    dynamodb.delete_item(TableName=table, Key={"id": {"S": "never-there"}})  # nothing deleted: no record
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {"id": {"S": b}}}},
            {"Delete": {"TableName": table, "Key": {"id": {"S": a}}}},
        ]
    )
    expected.append(("INSERT", b, None, {"id": {"S": b}}))
    expected.append(("REMOVE", a, {"id": {"S": a}, "v": {"N": "2"}, "tags": {"SS": ["x", "y"]}}, None))
    dynamodb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": {"id": {"S": c}, "n": {"N": "3"}}}}]})
    expected.append(("INSERT", c, None, {"id": {"S": c}, "n": {"N": "3"}}))
    return expected


def view(expected, view_type):
    """What a stream of this view type shows of the expected changes."""
    shown = []
    for event, key, old, new in expected:
        shown.append(
            (
                event,
                key,
                old if view_type in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES") else None,
                new if view_type in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES") else None,
            )
        )
    return shown


def normalise_sets(records):
    out = []
    for event, key, old, new in records:
        out.append((event, key, _sorted_sets(old), _sorted_sets(new)))
    return out


def _sorted_sets(image):
    if image is None:
        return None
    return {k: ({"SS": sorted(v["SS"])} if "SS" in v else v) for k, v in image.items()}


def test_consumer_sees_every_change_in_order_across_a_restart(
    region_factory, client_factory, tmp_path, unique_table_name
):
    region = region_factory(data_dir=tmp_path / "data", extra_args=("--ttl-sweep-interval", SWEEP_INTERVAL_S))
    endpoint = region.start()
    dynamodb = client_factory(endpoint=endpoint)
    streams = client_factory("dynamodbstreams", endpoint=endpoint)
    tables = {
        view_type: unique_table_name(view_type.replace("_", "-"))
        for view_type in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY")
    }
    arns = {view_type: create_table(dynamodb, table, view_type) for view_type, table in tables.items()}
    expected = {view_type: apply_changes(dynamodb, table, "before") for view_type, table in tables.items()}
    consumed = {}
    iterators = {}
    for view_type, arn in arns.items():
        consumed[view_type], iterators[view_type] = drain(streams, trim_horizon(streams, arn), limit=2)

    region.kill()  # nothing acknowledged may be lost, the log included
    endpoint = region.restart()
    dynamodb = client_factory(endpoint=endpoint)
    streams = client_factory("dynamodbstreams", endpoint=endpoint)
    for view_type, table in tables.items():
        expected[view_type] += apply_changes(dynamodb, table, "after")

    for view_type, arn in arns.items():
        # The iterator issued before the restart carries on where the consumer stopped.
        more, _ = drain(streams, iterators[view_type], limit=3)
        records = consumed[view_type] + more
        assert normalise_sets(changes(records)) == normalise_sets(view(expected[view_type], view_type)), view_type
        numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
        assert numbers == sorted(set(numbers))
        assert all(r["dynamodb"]["StreamViewType"] == view_type for r in records)
        # A new consumer from TRIM_HORIZON sees the same records.
        fresh, _ = drain(streams, trim_horizon(streams, arn))
        assert [r["dynamodb"]["SequenceNumber"] for r in fresh] == [r["dynamodb"]["SequenceNumber"] for r in records]
        assert [r["eventID"] for r in fresh] == [r["eventID"] for r in records]
