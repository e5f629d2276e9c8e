"""Secondary indexes in the engine: maintenance on every write, projections, sparseness, key validation, reads
(Query/Scan with IndexName, paging, Select rules, capacity), backfill and purge, and the item-collection rule."""

from __future__ import annotations

import copy

import pytest

from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.runtime.clock import ManualClock
from store_probes import index_entry_count, index_id_count, items_and_index_entries

INVALID = "One or more parameter values were invalid: "


def S(value):
    return {"S": value}


def N(value):
    return {"N": str(value)}


def keys(hash_name, range_name=None):
    out = [{"AttributeName": hash_name, "KeyType": "HASH"}]
    if range_name:
        out.append({"AttributeName": range_name, "KeyType": "RANGE"})
    return out


def attrs(**types):
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def gsi(name, hash_name, range_name=None, projection="ALL", non_key=None):
    spec = {"ProjectionType": projection}
    if non_key:
        spec["NonKeyAttributes"] = non_key
    return {"IndexName": name, "KeySchema": keys(hash_name, range_name), "Projection": spec}


def lsi(name, range_name, projection="ALL", non_key=None):
    return gsi(name, "customerId", range_name, projection, non_key)


def orders_table(engine, gsis=None, lsis=None, **types):
    request = {
        "TableName": "Orders",
        "AttributeDefinitions": attrs(customerId="S", sk="S", **types),
        "KeySchema": keys("customerId", "sk"),
        "BillingMode": "PAY_PER_REQUEST",
    }
    if gsis:
        request["GlobalSecondaryIndexes"] = gsis
    if lsis:
        request["LocalSecondaryIndexes"] = lsis
    engine.handle("CreateTable", request)


def order(customer, sk, **attributes):
    item = {"customerId": S(customer), "sk": S(sk)}
    for name, value in attributes.items():
        item[name] = value if isinstance(value, dict) else (N(value) if isinstance(value, int) else S(value))
    return item


def put(engine, item, table="Orders", **extra):
    return engine.handle("PutItem", {"TableName": table, "Item": item, **extra})


def query(engine, index, condition, values, table="Orders", **extra):
    request = {
        "TableName": table,
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": values,
        **extra,
    }
    if index is not None:
        request["IndexName"] = index
    return engine.handle("Query", request)


def by_order(engine, order_id, **extra):
    return query(engine, "byOrderId", "orderId = :o", {":o": S(order_id)}, **extra)


def drain(engine):
    steps = 0
    while engine.background_step():
        steps += 1
        assert steps < 10_000
    return steps


def refused(engine, operation, request, error, message=None):
    """`operation` fails with `error` (and exactly `message`) and changes no item nor index entry."""
    before = dump(engine)
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, copy.deepcopy(request))
    assert caught.value.type_name == error, caught.value.to_body()
    if message is not None:
        assert caught.value.message == message
    assert dump(engine) == before
    return caught.value


def dump(engine):
    return items_and_index_entries(engine.store)


@pytest.fixture
def engine(make_store):
    engine = Engine(make_store(), ManualClock())
    yield engine
    engine.store.close()


@pytest.fixture
def orders(engine):
    """Orders with the GSI byOrderId (partition key orderId, projects ALL)."""
    orders_table(engine, gsis=[gsi("byOrderId", "orderId")], orderId="S")
    return engine


# ====================================================================================================== maintenance


def test_gsi_finds_an_order_and_is_sparse(orders):
    put(orders, order("C-17", "2026-10-28#o-981", orderId="o-981", amount=42))
    put(orders, order("C-17", "2026-10-29#draft", amount=1))  # no orderId: not in the index
    found = by_order(orders, "o-981")
    assert found["Items"] == [order("C-17", "2026-10-28#o-981", orderId="o-981", amount=42)]
    assert found["Count"] == 1 and found["ScannedCount"] == 1
    scanned = orders.handle("Scan", {"TableName": "Orders", "IndexName": "byOrderId"})
    assert [item["orderId"] for item in scanned["Items"]] == [S("o-981")]
    index = orders.handle("DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert index["ItemCount"] == 1 and index["IndexStatus"] == "ACTIVE"
    assert index["IndexSizeBytes"] > 0


def test_update_delete_and_key_change_keep_the_index_exact(orders):
    key = {"customerId": S("C-1"), "sk": S("a")}
    put(orders, order("C-1", "a", orderId="o-1", status="NEW"))
    orders.handle(
        "UpdateItem",
        {
            "TableName": "Orders",
            "Key": key,
            "UpdateExpression": "SET #s = :s",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":s": S("PAID")},
        },
    )
    assert by_order(orders, "o-1")["Items"][0]["status"] == S("PAID")
    # Key change: the entry moves from o-1 to o-2.
    orders.handle(
        "UpdateItem",
        {
            "TableName": "Orders",
            "Key": key,
            "UpdateExpression": "SET orderId = :o",
            "ExpressionAttributeValues": {":o": S("o-2")},
        },
    )
    assert by_order(orders, "o-1")["Items"] == []
    assert by_order(orders, "o-2")["Items"][0]["sk"] == S("a")
    # Removing the key attribute takes the item out of the index.
    orders.handle("UpdateItem", {"TableName": "Orders", "Key": key, "UpdateExpression": "REMOVE orderId"})
    assert by_order(orders, "o-2")["Items"] == []
    orders.handle(
        "UpdateItem",
        {
            "TableName": "Orders",
            "Key": key,
            "UpdateExpression": "SET orderId = :o",
            "ExpressionAttributeValues": {":o": S("o-3")},
        },
    )
    assert by_order(orders, "o-3")["Count"] == 1
    orders.handle("DeleteItem", {"TableName": "Orders", "Key": key})
    assert by_order(orders, "o-3")["Items"] == []
    assert index_entry_count(orders.store) == 0


def test_many_items_share_one_index_key(orders):
    for n in range(5):
        put(orders, order(f"C-{n}", "x", orderId="dup"))
    found = by_order(orders, "dup")
    assert sorted(item["customerId"]["S"] for item in found["Items"]) == [f"C-{n}" for n in range(5)]
    put(orders, order("C-2", "x", orderId="other"))
    assert by_order(orders, "dup")["Count"] == 4


@pytest.mark.parametrize(
    ("projection", "non_key", "expected"),
    [
        ("KEYS_ONLY", None, {"customerId", "sk", "orderId", "placedAt"}),
        ("INCLUDE", ["amount", "missing"], {"customerId", "sk", "orderId", "placedAt", "amount"}),
        ("ALL", None, {"customerId", "sk", "orderId", "placedAt", "amount", "note"}),
    ],
)
def test_projections(engine, projection, non_key, expected):
    orders_table(engine, gsis=[gsi("byOrderId", "orderId", "placedAt", projection, non_key)], orderId="S", placedAt="N")
    put(engine, order("C-1", "a", orderId="o-1", placedAt=5, amount=42, note="gift"))
    item = by_order(engine, "o-1")["Items"][0]
    assert set(item) == expected
    scanned = engine.handle("Scan", {"TableName": "Orders", "IndexName": "byOrderId"})["Items"][0]
    assert scanned == item


def test_keys_only_index_is_not_rewritten_for_unprojected_changes(engine):
    orders_table(engine, gsis=[gsi("byOrderId", "orderId", projection="KEYS_ONLY")], orderId="S")
    put(engine, order("C-1", "a", orderId="o-1", note="x"))
    response = put(engine, order("C-1", "a", orderId="o-1", note="y"), ReturnConsumedCapacity="INDEXES")
    assert "GlobalSecondaryIndexes" not in response["ConsumedCapacity"]
    response = put(engine, order("C-1", "a", orderId="o-2", note="y"), ReturnConsumedCapacity="INDEXES")
    # The key changed: the old entry is deleted and the new one put.
    assert response["ConsumedCapacity"]["GlobalSecondaryIndexes"] == {"byOrderId": {"CapacityUnits": 2.0}}
    assert response["ConsumedCapacity"]["CapacityUnits"] == 3.0


# ============================================================================================ index key validation


def test_type_mismatch_is_refused_and_changes_nothing(orders):
    put(orders, order("C-1", "a", orderId="o-1"))
    refused(
        orders,
        "PutItem",
        {"TableName": "Orders", "Item": order("C-1", "a", orderId=N(7))},
        "ValidationException",
        INVALID + "Type mismatch for Index Key orderId Expected: S Actual: N IndexName: byOrderId",
    )
    refused(
        orders,
        "UpdateItem",
        {
            "TableName": "Orders",
            "Key": {"customerId": S("C-1"), "sk": S("a")},
            "UpdateExpression": "SET orderId = :o",
            "ExpressionAttributeValues": {":o": {"NULL": True}},
        },
        "ValidationException",
        INVALID + "Type mismatch for Index Key orderId Expected: S Actual: NULL IndexName: byOrderId",
    )
    assert by_order(orders, "o-1")["Count"] == 1


def test_empty_index_key_is_refused(orders):
    refused(
        orders,
        "PutItem",
        {"TableName": "Orders", "Item": order("C-1", "a", orderId="")},
        "ValidationException",
        "One or more parameter values are not valid. A value specified for a secondary index key is not supported. "
        "The AttributeValue for a key attribute cannot contain an empty string value. IndexName: byOrderId, "
        "IndexKey: orderId",
    )


def test_lsi_key_type_mismatch(engine):
    orders_table(engine, lsis=[lsi("byCreatedAt", "createdAt")], createdAt="N")
    refused(
        engine,
        "PutItem",
        {"TableName": "Orders", "Item": order("C-1", "a", createdAt="yesterday")},
        "ValidationException",
        INVALID + "Type mismatch for Index Key createdAt Expected: N Actual: S IndexName: byCreatedAt",
    )


# ============================================================================================================ reads


def test_consistent_read_on_a_gsi_is_refused(orders):
    for operation, request in (
        ("Query", {"KeyConditionExpression": "orderId = :o", "ExpressionAttributeValues": {":o": S("o-1")}}),
        ("Scan", {}),
    ):
        with pytest.raises(DynamoError) as caught:
            orders.handle(
                operation, {"TableName": "Orders", "IndexName": "byOrderId", "ConsistentRead": True, **request}
            )
        assert caught.value.type_name == "ValidationException"
        assert caught.value.message == "Consistent reads are not supported on global secondary indexes"


def test_unknown_index(orders):
    with pytest.raises(DynamoError) as caught:
        orders.handle("Scan", {"TableName": "Orders", "IndexName": "nope"})
    assert caught.value.message == "The table does not have the specified index: nope"


def test_lsi_answers_strongly_consistent_queries_in_sort_order(engine):
    orders_table(engine, lsis=[lsi("byCreatedAt", "createdAt", "KEYS_ONLY")], createdAt="S")
    for sk, created in (("o-1", "2026-10-03"), ("o-2", "2026-10-01"), ("o-3", "2026-10-02"), ("o-4", None)):
        put(engine, order("C-1", sk, **({"createdAt": created} if created else {}), amount=1))
    response = query(
        engine,
        "byCreatedAt",
        "customerId = :c AND createdAt >= :d",
        {":c": S("C-1"), ":d": S("2026-10-02")},
        ConsistentRead=True,
        ReturnConsumedCapacity="INDEXES",
    )
    assert [item["sk"]["S"] for item in response["Items"]] == ["o-3", "o-1"]
    assert set(response["Items"][0]) == {"customerId", "sk", "createdAt"}
    assert response["ConsumedCapacity"] == {
        "TableName": "Orders",
        "CapacityUnits": 1.0,
        "Table": {"CapacityUnits": 0.0},
        "LocalSecondaryIndexes": {"byCreatedAt": {"CapacityUnits": 1.0}},
    }
    backwards = query(
        engine, "byCreatedAt", "customerId = :c", {":c": S("C-1")}, ScanIndexForward=False, ConsistentRead=True
    )
    assert [item["sk"]["S"] for item in backwards["Items"]] == ["o-1", "o-3", "o-2"]  # o-4 has no createdAt


def test_lsi_fetches_unprojected_attributes_from_the_table(engine):
    orders_table(engine, lsis=[lsi("byCreatedAt", "createdAt", "KEYS_ONLY")], createdAt="S")
    put(engine, order("C-1", "o-1", createdAt="d1", amount=5, note="n"))
    put(engine, order("C-1", "o-2", createdAt="d2", amount=50, note="m"))
    condition, values = "customerId = :c", {":c": S("C-1")}
    everything = query(
        engine, "byCreatedAt", condition, values, Select="ALL_ATTRIBUTES", ReturnConsumedCapacity="INDEXES"
    )
    assert everything["Items"][0] == order("C-1", "o-1", createdAt="d1", amount=5, note="n")
    assert everything["ConsumedCapacity"]["Table"] == {"CapacityUnits": 0.5}
    specific = query(engine, "byCreatedAt", condition, values, ProjectionExpression="note, createdAt")
    assert specific["Items"] == [{"note": S("n"), "createdAt": S("d1")}, {"note": S("m"), "createdAt": S("d2")}]
    filtered = query(engine, "byCreatedAt", condition, {**values, ":t": N(10)}, FilterExpression="amount > :t")
    # The filter reads the table's item; the page still returns what the index projects.
    assert filtered["Items"] == [{"customerId": S("C-1"), "sk": S("o-2"), "createdAt": S("d2")}]
    assert filtered["ScannedCount"] == 2


def test_select_rules(engine):
    orders_table(
        engine,
        gsis=[gsi("keysOnly", "orderId", projection="KEYS_ONLY"), gsi("all", "orderId")],
        orderId="S",
    )
    put(engine, order("C-1", "a", orderId="o-1", amount=3))
    with pytest.raises(DynamoError) as caught:
        engine.handle("Scan", {"TableName": "Orders", "IndexName": "keysOnly", "Select": "ALL_ATTRIBUTES"})
    assert caught.value.message == (
        INVALID + "Select type ALL_ATTRIBUTES is not supported for global secondary index keysOnly because its "
        "projection type is not ALL"
    )
    assert engine.handle("Scan", {"TableName": "Orders", "IndexName": "all", "Select": "ALL_ATTRIBUTES"})["Count"] == 1
    projected = engine.handle(
        "Scan", {"TableName": "Orders", "IndexName": "keysOnly", "Select": "ALL_PROJECTED_ATTRIBUTES"}
    )
    assert set(projected["Items"][0]) == {"customerId", "sk", "orderId"}
    # A GSI never fetches: "you can only request attributes that are projected into the index" (Query, Select).
    with pytest.raises(DynamoError) as caught:
        engine.handle("Scan", {"TableName": "Orders", "IndexName": "keysOnly", "ProjectionExpression": "orderId, amount"})
    assert caught.value.message == (
        "One or more parameter values were invalid: Attributes requested are not projected into global secondary "
        "index keysOnly: [amount]"
    )
    specific = engine.handle("Scan", {"TableName": "Orders", "IndexName": "keysOnly", "ProjectionExpression": "orderId"})
    assert specific["Items"] == [{"orderId": S("o-1")}]
    counted = engine.handle("Scan", {"TableName": "Orders", "IndexName": "keysOnly", "Select": "COUNT"})
    assert counted["Count"] == 1 and "Items" not in counted
    with pytest.raises(DynamoError) as caught:
        engine.handle("Scan", {"TableName": "Orders", "Select": "ALL_PROJECTED_ATTRIBUTES"})
    assert caught.value.type_name == "ValidationException"


def test_index_query_pages_cover_every_entry_once(orders):
    for n in range(7):
        put(orders, order(f"C-{n % 3}", f"s{n}", orderId="same"))
    for forward in (True, False):
        seen, start, pages = [], None, 0
        while True:
            extra = {"Limit": 3, "ScanIndexForward": forward}
            if start is not None:
                extra["ExclusiveStartKey"] = start
            page = by_order(orders, "same", **extra)
            pages += 1
            seen += [(item["customerId"]["S"], item["sk"]["S"]) for item in page["Items"]]
            start = page.get("LastEvaluatedKey")
            if start is None:
                break
            assert set(start) == {"customerId", "sk", "orderId"}
        assert len(seen) == 7 and len(set(seen)) == 7
        assert pages == 3
        if not forward:
            assert seen == sorted(seen, reverse=True)


def test_index_start_key_validation(orders):
    put(orders, order("C-1", "a", orderId="o-1"))
    cases = [
        ({"customerId": S("C-1"), "sk": S("a")}, "The provided starting key is invalid"),
        ({"customerId": S("C-1"), "sk": S("a"), "other": S("o-1")}, "The provided starting key is invalid"),
        ({"customerId": S("C-1"), "sk": S("a"), "orderId": N(1)}, "The provided key element does not match the schema"),
        (
            {"customerId": N(1), "sk": S("a"), "orderId": S("o-1")},
            "The provided starting key is invalid: The provided key element does not match the schema",
        ),
        (
            {"customerId": S("C-1"), "sk": S("a"), "orderId": S("o-2")},
            "The provided starting key is outside query boundaries based on provided conditions",
        ),
    ]
    for start, message in cases:
        with pytest.raises(DynamoError) as caught:
            by_order(orders, "o-1", ExclusiveStartKey=start)
        assert caught.value.message == message


def test_parallel_scan_of_an_index(orders):
    for n in range(200):
        put(orders, order(f"C-{n}", "x", orderId=f"o-{n % 50}"))
    put(orders, order("C-none", "x"))
    seen = []
    for segment in range(4):
        start = None
        while True:
            request = {
                "TableName": "Orders",
                "IndexName": "byOrderId",
                "Segment": segment,
                "TotalSegments": 4,
                "Limit": 17,
            }
            if start is not None:
                request["ExclusiveStartKey"] = start
            page = orders.handle("Scan", request)
            seen += [item["customerId"]["S"] for item in page["Items"]]
            start = page.get("LastEvaluatedKey")
            if start is None:
                break
    assert sorted(seen) == sorted(f"C-{n}" for n in range(200))


def test_gsi_read_capacity(orders):
    put(orders, order("C-1", "a", orderId="o-1", blob="x" * 5000))
    response = by_order(orders, "o-1", ReturnConsumedCapacity="INDEXES")
    assert response["ConsumedCapacity"] == {
        "TableName": "Orders",
        "CapacityUnits": 1.0,
        "Table": {"CapacityUnits": 0.0},
        "GlobalSecondaryIndexes": {"byOrderId": {"CapacityUnits": 1.0}},
    }
    total = by_order(orders, "o-1", ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"]
    assert total == {"TableName": "Orders", "CapacityUnits": 1.0}


def test_write_capacity_per_index(engine):
    orders_table(
        engine,
        gsis=[gsi("byOrderId", "orderId")],
        lsis=[lsi("byCreatedAt", "createdAt", "KEYS_ONLY")],
        orderId="S",
        createdAt="S",
    )
    response = put(engine, order("C-1", "a", orderId="o-1", createdAt="d"), ReturnConsumedCapacity="INDEXES")
    assert response["ConsumedCapacity"] == {
        "TableName": "Orders",
        "CapacityUnits": 3.0,
        "Table": {"CapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {"byOrderId": {"CapacityUnits": 1.0}},
        "LocalSecondaryIndexes": {"byCreatedAt": {"CapacityUnits": 1.0}},
    }


# ======================================================================================= backfill, delete, purge


def test_gsi_added_to_a_table_with_data_is_backfilled(engine):
    orders_table(engine)
    engine.indexes.backfill_chunk = 100
    for n in range(1050):
        put(engine, order(f"C-{n}", "x", orderId=f"o-{n}" if n % 10 else N(n)))  # every tenth: wrong type
    response = engine.handle(
        "UpdateTable",
        {
            "TableName": "Orders",
            "AttributeDefinitions": attrs(orderId="S"),
            "GlobalSecondaryIndexUpdates": [{"Create": gsi("byOrderId", "orderId")}],
        },
    )["TableDescription"]
    created = response["GlobalSecondaryIndexes"][0]
    assert created["IndexStatus"] == "CREATING" and created["Backfilling"] is False
    assert engine.pending_work
    with pytest.raises(DynamoError) as caught:
        by_order(engine, "o-1")
    assert caught.value.message == "Cannot read from backfilling global secondary index: byOrderId"

    assert engine.background_step()
    described = engine.handle("DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert described["IndexStatus"] == "CREATING" and described["Backfilling"] is True
    # Writes during the backfill are indexed, and violations are skipped rather than refused.
    put(engine, order("C-new", "x", orderId="o-new"))
    put(engine, order("C-bad", "x", orderId=N(1)))
    engine.handle("DeleteItem", {"TableName": "Orders", "Key": {"customerId": S("C-1"), "sk": S("x")}})
    steps = drain(engine)
    assert 9 <= steps <= 12
    described = engine.handle("DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert described["IndexStatus"] == "ACTIVE" and "Backfilling" not in described
    assert described["ItemCount"] == 1050 - 105 - 1 + 1
    assert by_order(engine, "o-new")["Count"] == 1
    assert by_order(engine, "o-1")["Count"] == 0
    assert by_order(engine, "o-1049")["Items"][0]["customerId"] == S("C-1049")
    # Once ACTIVE, a violation is refused.
    with pytest.raises(DynamoError):
        put(engine, order("C-bad2", "x", orderId=N(2)))


def test_deleted_index_is_purged_and_a_new_one_starts_empty(orders):
    orders.indexes.purge_chunk = 10
    for n in range(35):
        put(orders, order(f"C-{n}", "x", orderId=f"o-{n}"))
    response = orders.handle(
        "UpdateTable", {"TableName": "Orders", "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": "byOrderId"}}]}
    )
    assert response["TableDescription"]["GlobalSecondaryIndexes"][0]["IndexStatus"] == "DELETING"
    assert "GlobalSecondaryIndexes" not in orders.handle("DescribeTable", {"TableName": "Orders"})["Table"]
    assert orders.pending_work
    assert drain(orders) == 3
    assert index_entry_count(orders.store) == 0
    assert index_id_count(orders.store) == 0
    # Same name again, with another key: backfilled from the items, no stale entries.
    orders.handle(
        "UpdateTable",
        {
            "TableName": "Orders",
            "AttributeDefinitions": attrs(orderId="S"),
            "GlobalSecondaryIndexUpdates": [{"Create": gsi("byOrderId", "orderId", projection="KEYS_ONLY")}],
        },
    )
    drain(orders)
    assert set(by_order(orders, "o-3")["Items"][0]) == {"customerId", "sk", "orderId"}


def test_dropped_table_entries_never_reach_a_new_table_of_the_same_name(orders):
    put(orders, order("C-1", "x", orderId="o-1"))
    orders.handle("DeleteTable", {"TableName": "Orders"})
    orders_table(orders, gsis=[gsi("byOrderId", "orderId")], orderId="S")
    assert by_order(orders, "o-1")["Items"] == []
    drain(orders)
    assert index_entry_count(orders.store) == 0


def test_backfill_resumes_after_a_restart(tmp_path):
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), ManualClock())
    orders_table(engine)
    engine.indexes.backfill_chunk = 10
    for n in range(25):
        put(engine, order(f"C-{n}", "x", orderId=f"o-{n}"))
    engine.handle(
        "UpdateTable",
        {
            "TableName": "Orders",
            "AttributeDefinitions": attrs(orderId="S"),
            "GlobalSecondaryIndexUpdates": [{"Create": gsi("byOrderId", "orderId")}],
        },
    )
    engine.background_step()
    engine.store.close()

    engine = Engine(SqliteStore(path), ManualClock())
    assert engine.pending_work
    drain(engine)
    index = engine.handle("DescribeTable", {"TableName": "Orders"})["Table"]["GlobalSecondaryIndexes"][0]
    assert index["IndexStatus"] == "ACTIVE" and index["ItemCount"] == 25
    put(engine, order("C-99", "x", orderId="o-99"))
    assert by_order(engine, "o-99")["Count"] == 1
    engine.store.close()


# ============================================================================================= item collections


def test_item_collection_size_limit(engine):
    orders_table(engine, lsis=[lsi("byCreatedAt", "createdAt", "KEYS_ONLY")], createdAt="S")
    engine.indexes.item_collection_limit = 2500
    for n in range(4):
        put(engine, order("C-1", f"o-{n}", createdAt=f"d{n}", note="x" * 400))
    refused(
        engine,
        "PutItem",
        {"TableName": "Orders", "Item": order("C-1", "o-9", createdAt="d9", note="x" * 400)},
        "ItemCollectionSizeLimitExceededException",
        "Collection size exceeded.",
    )
    # Another collection is not affected, and a write that shrinks the full one is allowed.
    put(engine, order("C-2", "o-9", createdAt="d9", note="x" * 400))
    put(engine, order("C-1", "o-0", createdAt="d0", note="short"))
    engine.handle("DeleteItem", {"TableName": "Orders", "Key": {"customerId": S("C-1"), "sk": S("o-1")}})


def test_return_item_collection_metrics(engine):
    orders_table(engine, lsis=[lsi("byCreatedAt", "createdAt")], createdAt="S")
    response = put(engine, order("C-1", "o-1", createdAt="d"), ReturnItemCollectionMetrics="SIZE")
    assert response["ItemCollectionMetrics"] == {
        "ItemCollectionKey": {"customerId": S("C-1")},
        "SizeEstimateRangeGB": [0.0, 1.0],
    }
    plain = Engine(SqliteStore(None), ManualClock())
    orders_table(plain)
    assert "ItemCollectionMetrics" not in put(plain, order("C-1", "o-1"), ReturnItemCollectionMetrics="SIZE")


# ========================================================================================================= limits


def test_index_limits_and_projection_rules(engine):
    many = {f"a{n}": "S" for n in range(21)}
    with pytest.raises(DynamoError) as caught:
        orders_table(engine, gsis=[gsi(f"gsi{n}", f"a{n}") for n in range(21)], **many)
    assert caught.value.message == INVALID + "GlobalSecondaryIndex count exceeds the per-table limit of 20"
    with pytest.raises(DynamoError) as caught:
        orders_table(engine, lsis=[lsi(f"lsi{n}", f"a{n}") for n in range(6)], **{f"a{n}": "S" for n in range(6)})
    assert caught.value.message == INVALID + "Number of LocalSecondaryIndexes exceeds per-table limit of 5"
    with pytest.raises(DynamoError) as caught:
        orders_table(engine, gsis=[gsi("gsi", "orderId", projection="ALL", non_key=["x"])], orderId="S")
    assert caught.value.message == INVALID + "ProjectionType is ALL, but NonKeyAttributes is specified"
    with pytest.raises(DynamoError) as caught:
        orders_table(
            engine,
            gsis=[
                gsi(f"gsi{n}", f"a{n}", projection="INCLUDE", non_key=[f"x{n}_{m}" for m in range(20)])
                for n in range(6)
            ],
            **{f"a{n}": "S" for n in range(6)},
        )
    assert caught.value.message == (
        INVALID + "Number of projected attributes in all indexes exceeds limit of 100, number of projected "
        "attributes: 120"
    )
    assert engine.tables == {}
