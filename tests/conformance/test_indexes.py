"""Secondary indexes through boto3 against a real region process (issue 3, "What it must show").

Orders: partition key customerId, sort key sk = "<orderDate>#<orderId>", GSI byOrderId (partition key orderId) to
find an order by its id alone, LSI byCreatedAt (sort key createdAt) to list a customer's orders by creation time.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

BACKFILL_ITEMS = 10_000
DEADLINE_S = 60.0  # bounded waits: generous for a loaded machine, never a fixed sleep


@pytest.fixture(scope="module")
def orders(dynamodb, unique_table_name):
    name = unique_table_name("Orders")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "customerId", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "orderId", "AttributeType": "S"},
            {"AttributeName": "createdAt", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "customerId", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byOrderId",
                "KeySchema": [{"AttributeName": "orderId", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        LocalSecondaryIndexes=[
            {
                "IndexName": "byCreatedAt",
                "KeySchema": [
                    {"AttributeName": "customerId", "KeyType": "HASH"},
                    {"AttributeName": "createdAt", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    return name


def order(customer, date, order_id=None, **attributes):
    item = {"customerId": {"S": customer}, "sk": {"S": f"{date}#{order_id or 'draft'}"}}
    if order_id is not None:
        item["orderId"] = {"S": order_id}
    item.update(attributes)
    return item


def test_query_on_the_gsi_finds_the_order(dynamodb, orders):
    dynamodb.put_item(TableName=orders, Item=order("C-17", "2026-10-28", "o-981", total={"N": "42"}))
    response = dynamodb.query(
        TableName=orders,
        IndexName="byOrderId",
        KeyConditionExpression="orderId = :o",
        ExpressionAttributeValues={":o": {"S": "o-981"}},
    )
    assert response["Count"] == 1
    assert response["Items"][0]["customerId"] == {"S": "C-17"}
    assert response["Items"][0]["total"] == {"N": "42"}  # ALL projection: the whole item


def test_item_without_order_id_is_absent_from_the_gsi(dynamodb, orders):
    dynamodb.put_item(TableName=orders, Item=order("C-30", "2026-10-29", note={"S": "cart, not yet an order"}))
    dynamodb.put_item(TableName=orders, Item=order("C-30", "2026-10-30", "o-990"))
    scanned = dynamodb.scan(TableName=orders, IndexName="byOrderId")
    customers_skus = {(item["customerId"]["S"], item["sk"]["S"]) for item in scanned["Items"]}
    assert ("C-30", "2026-10-30#o-990") in customers_skus
    assert ("C-30", "2026-10-29#draft") not in customers_skus
    assert all("orderId" in item for item in scanned["Items"])
    # The item is in the table all the same.
    table = dynamodb.query(
        TableName=orders,
        KeyConditionExpression="customerId = :c",
        ExpressionAttributeValues={":c": {"S": "C-30"}},
    )
    assert table["Count"] == 2


def test_consistent_read_on_the_gsi_is_a_validation_exception(dynamodb, orders):
    with pytest.raises(ClientError) as caught:
        dynamodb.query(
            TableName=orders,
            IndexName="byOrderId",
            KeyConditionExpression="orderId = :o",
            ExpressionAttributeValues={":o": {"S": "o-981"}},
            ConsistentRead=True,
        )
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"] == "Consistent reads are not supported on global secondary indexes"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_lsi_answers_strongly_consistent_queries(dynamodb, orders):
    for created, order_id in (
        ("2026-10-03T09:00", "o-1003"),
        ("2026-10-01T17:30", "o-1001"),
        ("2026-10-02T08:15", "o-1002"),
    ):
        dynamodb.put_item(TableName=orders, Item=order("C-40", created[:10], order_id, createdAt={"S": created}))
    response = dynamodb.query(
        TableName=orders,
        IndexName="byCreatedAt",
        KeyConditionExpression="customerId = :c AND createdAt > :since",
        ExpressionAttributeValues={":c": {"S": "C-40"}, ":since": {"S": "2026-10-01T23:59"}},
        ConsistentRead=True,
        ReturnConsumedCapacity="INDEXES",
    )
    # KEYS_ONLY: the table's and the index's keys, in createdAt order.
    assert [item["sk"]["S"] for item in response["Items"]] == ["2026-10-02#o-1002", "2026-10-03#o-1003"]
    assert set(response["Items"][0]) == {"customerId", "sk", "createdAt"}
    assert response["ConsumedCapacity"]["LocalSecondaryIndexes"] == {"byCreatedAt": {"CapacityUnits": 1.0}}
    # A write is visible to the very next strongly consistent LSI query.
    dynamodb.put_item(TableName=orders, Item=order("C-40", "2026-10-04", "o-1004", createdAt={"S": "2026-10-04T07:00"}))
    latest = dynamodb.query(
        TableName=orders,
        IndexName="byCreatedAt",
        KeyConditionExpression="customerId = :c",
        ExpressionAttributeValues={":c": {"S": "C-40"}},
        ScanIndexForward=False,
        Limit=1,
        ConsistentRead=True,
        Select="ALL_ATTRIBUTES",  # an LSI fetches what it does not project from the table
    )
    assert latest["Items"][0]["orderId"] == {"S": "o-1004"}


def load(dynamodb, table: str, items: list[dict]) -> None:
    """Write many items quickly: BatchWriteItem when the region has it, else PutItem from a few threads."""
    try:
        dynamodb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": items[0]}}]})
        batched = True
    except ClientError as error:
        if error.response["Error"]["Code"] != "UnknownOperationException":
            raise
        batched = False
    if batched:
        chunks = [items[i : i + 25] for i in range(1, len(items), 25)]

        def write(chunk):
            request = {table: [{"PutRequest": {"Item": item}} for item in chunk]}
            while request:
                request = dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or None

        work, function = chunks, write
    else:
        work, function = items, lambda item: dynamodb.put_item(TableName=table, Item=item)
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in pool.map(function, work):
            pass


def wait_for_index(dynamodb, table: str, index: str) -> dict:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        description = dynamodb.describe_table(TableName=table)["Table"]
        (gsi,) = [g for g in description.get("GlobalSecondaryIndexes", []) if g["IndexName"] == index]
        if gsi["IndexStatus"] == "ACTIVE":
            return gsi
        assert time.monotonic() < deadline, f"index {index} still {gsi['IndexStatus']} after {DEADLINE_S} s"
        time.sleep(0.05)


def test_gsi_added_to_a_table_of_10000_items_backfills_them_all(dynamodb, unique_table_name):
    name = unique_table_name("Events")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    items = [
        {"id": {"S": f"e-{n:05d}"}, "kind": {"S": f"k{n % 10}"}, "at": {"N": str(n)}} for n in range(BACKFILL_ITEMS)
    ]
    load(dynamodb, name, items)
    assert dynamodb.describe_table(TableName=name)["Table"]["ItemCount"] == BACKFILL_ITEMS

    response = dynamodb.update_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "kind", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "byKind",
                    "KeySchema": [
                        {"AttributeName": "kind", "KeyType": "HASH"},
                        {"AttributeName": "at", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            }
        ],
    )["TableDescription"]
    (created,) = response["GlobalSecondaryIndexes"]
    assert created["IndexStatus"] == "CREATING"

    index = wait_for_index(dynamodb, name, "byKind")
    assert index["ItemCount"] == BACKFILL_ITEMS
    assert "Backfilling" not in index
    # Every item is in the index, once: count each kind's partition through the paginator.
    total = 0
    for kind in range(10):
        pages = dynamodb.get_paginator("query").paginate(
            TableName=name,
            IndexName="byKind",
            KeyConditionExpression="kind = :k",
            ExpressionAttributeValues={":k": {"S": f"k{kind}"}},
            Select="COUNT",
        )
        count = sum(page["Count"] for page in pages)
        assert count == BACKFILL_ITEMS // 10
        total += count
    assert total == BACKFILL_ITEMS
    newest = dynamodb.query(
        TableName=name,
        IndexName="byKind",
        KeyConditionExpression="kind = :k AND #at >= :from",
        ExpressionAttributeNames={"#at": "at"},
        ExpressionAttributeValues={":k": {"S": "k9"}, ":from": {"N": "9990"}},
    )
    assert [item["id"]["S"] for item in newest["Items"]] == ["e-09999"]

    dynamodb.update_table(TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": "byKind"}}])
    assert "GlobalSecondaryIndexes" not in dynamodb.describe_table(TableName=name)["Table"]
