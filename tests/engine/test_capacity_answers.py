"""What a throttled request answers and leaves behind (engine/throttling.py, engine/throughput.py): nothing changed,
batches' unprocessed items, transactions cancelled, free TTL deletes, and ReturnConsumedCapacity equal to what the
buckets were charged."""

from __future__ import annotations

import pytest

from capacity_drive import ARN, levels, modelled, put, sized_put, stream_keys, table_request
from engine_calls import call, error_of
from globaltables.engine.errors import (
    ConditionalCheckFailedException,
    ProvisionedThroughputExceededException,
    TransactionCanceledException,
)
from globaltables.engine.throttling import REASONS, TABLE_PROVISIONED_MESSAGE, ThrottlingException


def test_the_sixteen_reasons():
    assert len(REASONS) == 16
    assert {"TableWriteKeyRangeThroughputExceeded", "IndexReadAccountLimitExceeded",
            "IndexWriteMaxOnDemandThroughputExceeded", "TableReadProvisionedThroughputExceeded"} <= REASONS  # fmt: skip


def test_a_throttled_write_changes_nothing_and_leaves_no_stream_record(make_store):
    engine, _clock = modelled(make_store())
    stream = {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}}
    call(engine, "CreateTable", table_request("Quiet", provisioned=(5, 2), **stream))
    call(engine, "PutItem", put("Quiet", "a", v=1))
    call(engine, "PutItem", put("Quiet", "b", v=1))
    for operation, request in [
        ("PutItem", put("Quiet", "a", v=2)),
        ("UpdateItem", {"TableName": "Quiet", "Key": {"pk": {"S": "a"}}, "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"N": "3"}}}),
        ("DeleteItem", {"TableName": "Quiet", "Key": {"pk": {"S": "b"}}}),
        ("BatchWriteItem", {"RequestItems": {"Quiet": [{"PutRequest": {"Item": {"pk": {"S": "c"}}}}]}}),
        ("TransactWriteItems", {"TransactItems": [{"Put": put("Quiet", "d")}]}),
    ]:  # fmt: skip
        error = error_of(engine, operation, request)
        assert isinstance(error, (ProvisionedThroughputExceededException, TransactionCanceledException)), operation
    scan = call(engine, "Scan", {"TableName": "Quiet"})
    assert sorted((i["pk"]["S"], i.get("v", {}).get("N")) for i in scan["Items"]) == [("a", "1"), ("b", "1")]
    assert stream_keys(engine, "Quiet") == ["a", "b"]


def test_a_failed_condition_consumes_capacity_unless_throttled_first():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("Conditions", provisioned=(5, 3)))
    conditional = {**put("Conditions", "a"), "ConditionExpression": "attribute_exists(pk)"}
    for _ in range(3):  # 1 unit each (no item)
        assert isinstance(error_of(engine, "PutItem", conditional), ConditionalCheckFailedException)
    assert isinstance(error_of(engine, "PutItem", conditional), ProvisionedThroughputExceededException)


def test_batch_write_leaves_throttled_items_unprocessed_and_fails_only_when_none_succeeded():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Batches", provisioned=(5, 5)))
    requests = [{"PutRequest": {"Item": {"pk": {"S": f"k{n}"}}}} for n in range(8)]
    answer = call(engine, "BatchWriteItem", {"RequestItems": {"Batches": requests}, "ReturnConsumedCapacity": "TOTAL"})
    assert answer["UnprocessedItems"] == {"Batches": requests[5:]}
    assert answer["ConsumedCapacity"] == [{"TableName": "Batches", "CapacityUnits": 5.0}]
    assert len(call(engine, "Scan", {"TableName": "Batches", "ConsistentRead": False})["Items"]) == 5
    error = error_of(engine, "BatchWriteItem", {"RequestItems": {"Batches": requests[5:]}})
    assert isinstance(error, ProvisionedThroughputExceededException)
    assert error.to_body()["ThrottlingReasons"] == [
        {"reason": "TableWriteProvisionedThroughputExceeded", "resource": ARN + "Batches"}
    ]
    clock.advance(1.0)
    assert call(engine, "BatchWriteItem", {"RequestItems": {"Batches": requests[5:]}})["UnprocessedItems"] == {}


def test_batch_write_on_demand_fails_whole_with_throttling_exception():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("OnDemandBatches", OnDemandThroughput={"MaxWriteRequestUnits": 1}))
    call(engine, "PutItem", put("OnDemandBatches", "first"))
    error = error_of(
        engine, "BatchWriteItem", {"RequestItems": {"OnDemandBatches": [{"PutRequest": {"Item": {"pk": {"S": "x"}}}}]}}
    )
    assert isinstance(error, ThrottlingException)


def test_batch_get_leaves_throttled_keys_unprocessed_and_fails_only_when_none_was_read():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Reads", provisioned=(3, 100)))
    for n in range(6):
        call(engine, "PutItem", put("Reads", f"k{n}"))
    clock.advance(1.0)  # reads start with their second (3) plus one banked (3)
    keys = [{"pk": {"S": f"k{n}"}} for n in range(10)]
    entry = {"Keys": keys, "ConsistentRead": True}
    answer = call(engine, "BatchGetItem", {"RequestItems": {"Reads": entry}, "ReturnConsumedCapacity": "TOTAL"})
    assert len(answer["Responses"]["Reads"]) == 6
    assert answer["UnprocessedKeys"] == {"Reads": {"Keys": keys[6:], "ConsistentRead": True}}
    assert answer["ConsumedCapacity"] == [{"TableName": "Reads", "CapacityUnits": 6.0}]
    error = error_of(engine, "BatchGetItem", {"RequestItems": {"Reads": {"Keys": keys[6:]}}})
    assert isinstance(error, ProvisionedThroughputExceededException)
    assert error.to_body()["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"


def test_transactions_cancel_with_throttled_codes():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("Provisioned", provisioned=(5, 2)))  # one transactional write
    call(engine, "CreateTable", table_request("OnDemand", OnDemandThroughput={"MaxWriteRequestUnits": 2}))
    call(
        engine,
        "TransactWriteItems",
        {"TransactItems": [{"Put": put("Provisioned", "a")}, {"Put": put("OnDemand", "b")}]},
    )
    error = error_of(
        engine,
        "TransactWriteItems",
        {"TransactItems": [{"Put": put("OnDemand", "c")}, {"Put": put("Provisioned", "d")}]},
    )
    assert isinstance(error, TransactionCanceledException)
    reasons = error.to_body()["CancellationReasons"]
    assert [r["Code"] for r in reasons] == ["ThrottlingError", "ProvisionedThroughputExceeded"]
    assert reasons[1]["Message"] == TABLE_PROVISIONED_MESSAGE
    assert call(engine, "GetItem", {"TableName": "OnDemand", "Key": {"pk": {"S": "c"}}}) == {}
    gets = {"TransactItems": [{"Get": {"TableName": "Provisioned", "Key": {"pk": {"S": "a"}}}}] * 1}
    for _ in range(2):  # 2 units each, from the 5 reads a second
        call(engine, "TransactGetItems", gets)
    error = error_of(engine, "TransactGetItems", gets)
    assert [r["Code"] for r in error.to_body()["CancellationReasons"]] == ["ProvisionedThroughputExceeded"]


def test_query_and_scan_pages_are_throttled():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Pages", provisioned=(2, 100)))
    call(engine, "PutItem", sized_put("Pages", "p", 8192))  # 2 units to read strongly, 1 eventually
    query = {"TableName": "Pages", "KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "p"}}}
    call(engine, "Query", {**query, "ConsistentRead": True})
    error = error_of(engine, "Query", query)
    assert error.to_body()["ThrottlingReasons"][0]["reason"] == "TableReadProvisionedThroughputExceeded"
    assert isinstance(error_of(engine, "Scan", {"TableName": "Pages"}), ProvisionedThroughputExceededException)
    clock.advance(1.0)
    assert call(engine, "Scan", {"TableName": "Pages"})["Count"] == 1


def test_ttl_deletes_consume_nothing(make_store):
    engine, clock = modelled(make_store())
    call(engine, "CreateTable", table_request("Expiring", provisioned=(5, 1)))
    call(
        engine,
        "UpdateTimeToLive",
        {"TableName": "Expiring", "TimeToLiveSpecification": {"Enabled": True, "AttributeName": "exp"}},
    )
    past = int(clock.wall_time()) - 60
    for n in range(10):  # one a second: the table's rate
        clock.advance(1.0)
        call(engine, "PutItem", put("Expiring", f"k{n}", exp=past))
    clock.advance(1.0)  # one unit in the bucket
    before = levels(engine, "Expiring")
    assert engine.sweep_expired() == 10
    assert levels(engine, "Expiring") == before
    call(engine, "PutItem", put("Expiring", "after"))  # the unit is still there


def index_table() -> dict:
    return table_request(
        "Indexed",
        provisioned=(1000, 1000),
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "g", "AttributeType": "S"},
            {"AttributeName": "l", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[{
            "IndexName": "byG", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 1000, "WriteCapacityUnits": 1000},
        }],
        LocalSecondaryIndexes=[{
            "IndexName": "byL",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "l", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"},
        }],
    )  # fmt: skip


def item(pk: str, sk: str, g: str, l: str, size: int = 0) -> dict:
    return {"pk": {"S": pk}, "sk": {"S": sk}, "g": {"S": g}, "l": {"S": l}, "pad": {"S": "x" * size}}


def drawn(engine, before: dict, kind: str) -> dict:
    """Units drawn since `before`, per resource: from its provisioned bucket, and from its partitions (as units)."""
    after = levels(engine, "Indexed")
    per_partition = 3000 if kind == "read" else 1000
    return {
        name: (
            round(before[name]["provisioned"][kind] - after[name]["provisioned"][kind], 6),
            round(sum(before[name]["parts"]) * per_partition - sum(after[name]["parts"]) * per_partition, 6),
        )
        for name in after
    }


CASES = [
    ("PutItem", lambda: {"TableName": "Indexed", "Item": item("a", "1", "g2", "l2", 1500)}, "write"),
    ("UpdateItem", lambda: {"TableName": "Indexed", "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                            "UpdateExpression": "SET #p = :p", "ExpressionAttributeNames": {"#p": "pad"}, "ExpressionAttributeValues": {":p": {"S": "y" * 3000}}}, "write"),
    ("DeleteItem", lambda: {"TableName": "Indexed", "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}}}, "write"),
    ("BatchWriteItem", lambda: {"RequestItems": {"Indexed": [
        {"PutRequest": {"Item": item("a", "1", "g9", "l9", 2500)}}, {"PutRequest": {"Item": item("b", "1", "g1", "l1")}},
        {"DeleteRequest": {"Key": {"pk": {"S": "a"}, "sk": {"S": "2"}}}}]}}, "write"),
    ("TransactWriteItems", lambda: {"TransactItems": [
        {"Put": {"TableName": "Indexed", "Item": item("a", "1", "g3", "l1", 900)}},
        {"ConditionCheck": {"TableName": "Indexed", "Key": {"pk": {"S": "a"}, "sk": {"S": "2"}},
                            "ConditionExpression": "attribute_exists(pk)"}}]}, "write"),
    ("GetItem", lambda: {"TableName": "Indexed", "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}}}, "read"),
    ("Query", lambda: {"TableName": "Indexed", "IndexName": "byG", "KeyConditionExpression": "g = :g",
                       "ExpressionAttributeValues": {":g": {"S": "g1"}}}, "read"),
    ("Query", lambda: {"TableName": "Indexed", "IndexName": "byL", "KeyConditionExpression": "pk = :p",
                       "ExpressionAttributeValues": {":p": {"S": "a"}}, "ConsistentRead": True}, "read"),
    ("Scan", lambda: {"TableName": "Indexed"}, "read"),
    ("BatchGetItem", lambda: {"RequestItems": {"Indexed": {"Keys": [{"pk": {"S": "a"}, "sk": {"S": "1"}},
                                                                    {"pk": {"S": "a"}, "sk": {"S": "2"}}]}}}, "read"),
    ("TransactGetItems", lambda: {"TransactItems": [{"Get": {"TableName": "Indexed", "Key": {"pk": {"S": "a"}, "sk": {"S": "2"}}}}]}, "read"),
]  # fmt: skip


@pytest.mark.parametrize(("operation", "request_of", "kind"), CASES, ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_return_consumed_capacity_is_what_the_buckets_were_charged(operation, request_of, kind):
    engine, clock = modelled()
    call(engine, "CreateTable", index_table())
    call(engine, "PutItem", {"TableName": "Indexed", "Item": item("a", "1", "g1", "l1", 5000)})
    call(engine, "PutItem", {"TableName": "Indexed", "Item": item("a", "2", "g1", "l2", 200)})
    clock.advance(10.0)  # every bucket back to full
    before = levels(engine, "Indexed")
    answer = call(engine, operation, {**request_of(), "ReturnConsumedCapacity": "INDEXES"})
    consumed = answer["ConsumedCapacity"]
    consumed = consumed if isinstance(consumed, list) else [consumed]
    [structure] = consumed
    table_units = structure.get("Table", {}).get("CapacityUnits", 0.0)
    lsi_units = sum(u["CapacityUnits"] for u in structure.get("LocalSecondaryIndexes", {}).values())
    gsi_units = structure.get("GlobalSecondaryIndexes", {}).get("byG", {}).get("CapacityUnits", 0.0)
    assert structure["CapacityUnits"] == table_units + lsi_units + gsi_units > 0
    charged = drawn(engine, before, kind)
    # The table's buckets drew the table's and the local index's units; the global index's, its own.
    assert charged[None] == (table_units + lsi_units, table_units + lsi_units)
    assert charged["byG"] == (gsi_units, gsi_units)


def test_unlimited_never_throttles():
    engine, _clock = modelled(capacity="unlimited")
    assert engine.throughput is None
    call(engine, "CreateTable", table_request("Free", provisioned=(1, 1)))
    for n in range(300):  # 10 units each on a 1-unit table, at one instant
        call(engine, "PutItem", sized_put("Free", "k", 10 * 1024))
        call(engine, "GetItem", {"TableName": "Free", "Key": {"pk": {"S": "k"}}, "ConsistentRead": True})
