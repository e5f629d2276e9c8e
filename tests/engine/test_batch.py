"""BatchGetItem and BatchWriteItem on an in-memory engine: limits, validation texts, all-or-nothing refusal,
projections, UnprocessedKeys past 16 MB, consumed capacity and item collection metrics.

Every refused request is also checked for having changed nothing.
"""

from __future__ import annotations

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.runtime.clock import ManualClock

DUPLICATES = "Provided list of item keys contains duplicates"
INVALID = "One or more parameter values were invalid: "


def create(engine, name, sort=False, lsi=False, gsi=False):
    attrs = [{"AttributeName": "id", "AttributeType": "S"}]
    keys = [{"AttributeName": "id", "KeyType": "HASH"}]
    if sort:
        attrs.append({"AttributeName": "n", "AttributeType": "N"})
        keys.append({"AttributeName": "n", "KeyType": "RANGE"})
    request = {"TableName": name, "AttributeDefinitions": attrs, "KeySchema": keys, "BillingMode": "PAY_PER_REQUEST"}
    if lsi:
        attrs.append({"AttributeName": "when", "AttributeType": "S"})
        request["LocalSecondaryIndexes"] = [
            {
                "IndexName": "byWhen",
                "KeySchema": [
                    {"AttributeName": "id", "KeyType": "HASH"},
                    {"AttributeName": "when", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ]
    if gsi:
        attrs.append({"AttributeName": "tag", "AttributeType": "S"})
        request["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "byTag",
                "KeySchema": [{"AttributeName": "tag", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    engine.handle("CreateTable", request)


@pytest.fixture
def engine(make_store):
    engine = Engine(make_store(), ManualClock(wall_time=1_700_000_000.0))
    create(engine, "Plain")
    create(engine, "Sorted", sort=True)
    return engine


def everything(engine, table="Plain"):
    return sorted(call(engine, "Scan", {"TableName": table})["Items"], key=repr)


def put_request(i, **attrs):
    return {"PutRequest": {"Item": {"id": {"S": f"k{i}"}, **attrs}}}


def delete_request(i):
    return {"DeleteRequest": {"Key": {"id": {"S": f"k{i}"}}}}


def refused(engine, request, message, type_name="ValidationException"):
    """The batch is refused with exactly this error and changes nothing."""
    before = (everything(engine, "Plain"), everything(engine, "Sorted"))
    error = error_of(engine, "BatchWriteItem", request)
    assert (error.type_name, error.message) == (type_name, message)
    assert (everything(engine, "Plain"), everything(engine, "Sorted")) == before


# ------------------------------------------------------------------------------------------------- BatchWriteItem


def test_puts_and_deletes_across_tables(engine):
    call(engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "k9"}}})
    response = call(
        engine,
        "BatchWriteItem",
        {
            "RequestItems": {
                "Plain": [put_request(1, v={"N": "01.50"}), put_request(2), delete_request(9)],
                "Sorted": [{"PutRequest": {"Item": {"id": {"S": "s"}, "n": {"N": "3"}}}}],
            }
        },
    )
    assert response == {"UnprocessedItems": {}}
    assert everything(engine) == [{"id": {"S": "k1"}, "v": {"N": "1.5"}}, {"id": {"S": "k2"}}]
    assert everything(engine, "Sorted") == [{"id": {"S": "s"}, "n": {"N": "3"}}]


def test_deleting_missing_items_succeeds(engine):
    assert call(engine, "BatchWriteItem", {"RequestItems": {"Plain": [delete_request(1)]}}) == {"UnprocessedItems": {}}


def test_26_requests_are_refused(engine):
    request = {"RequestItems": {"Plain": [put_request(i) for i in range(26)]}}
    before = everything(engine)
    error = error_of(engine, "BatchWriteItem", request)
    assert error.type_name == "ValidationException"
    assert error.message.startswith("1 validation error detected: Value '{Plain=[")
    assert error.message.endswith(
        "]}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: "
        "[Member must have length less than or equal to 25, Member must have length greater than or equal to 1]"
    )
    assert everything(engine) == before


def test_more_than_25_across_tables_are_refused(engine):
    request = {
        "RequestItems": {
            "Plain": [put_request(i) for i in range(13)],
            "Sorted": [{"PutRequest": {"Item": {"id": {"S": "s"}, "n": {"N": str(i)}}}} for i in range(13)],
        }
    }
    refused(engine, request, "Too many items requested for the BatchWriteItem call")


def test_empty_lists_and_maps(engine):
    assert error_of(engine, "BatchWriteItem", {"RequestItems": {}}).message == (
        "1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )
    assert error_of(engine, "BatchWriteItem", {}).message == (
        "1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: "
        "Member must not be null"
    )
    assert (
        "Map value must satisfy constraint"
        in error_of(engine, "BatchWriteItem", {"RequestItems": {"Plain": []}}).message
    )


def test_bad_table_names_and_enums_are_reported_together(engine):
    error = error_of(
        engine, "BatchWriteItem", {"RequestItems": {"a": [put_request(1)]}, "ReturnConsumedCapacity": "ALL"}
    )
    assert error.message == (
        "2 validation errors detected: Value 'ALL' at 'returnConsumedCapacity' failed to satisfy constraint: "
        "Member must satisfy enum value set: [INDEXES, TOTAL, NONE]; "
        'Value \'{a=[{"PutRequest":{"Item":{"id":{"S":"k1"}}}}]}\' at \'requestItems\' failed to satisfy '
        "constraint: Map keys must satisfy constraint: [Member must have length less than or equal to 255, "
        "Member must have length greater than or equal to 3, Member must satisfy regular expression pattern: "
        "[a-zA-Z0-9_.-]+]"
    )


def test_null_item_and_key_paths(engine):
    error = error_of(engine, "BatchWriteItem", {"RequestItems": {"Plain": [{"PutRequest": {}}, {"DeleteRequest": {}}]}})
    assert error.message == (
        "2 validation errors detected: "
        "Value null at 'requestItems.Plain.member.1.member.putRequest.item' failed to satisfy constraint: "
        "Member must not be null; "
        "Value null at 'requestItems.Plain.member.2.member.deleteRequest.key' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_duplicate_keys_are_refused(engine):
    call(engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "k1"}, "v": {"S": "kept"}}})
    refused(engine, {"RequestItems": {"Plain": [put_request(1), put_request(1, v={"S": "x"})]}}, DUPLICATES)
    refused(engine, {"RequestItems": {"Plain": [put_request(1), delete_request(1)]}}, DUPLICATES)
    # The same key in two tables is not a duplicate.
    call(engine, "CreateTable", {
        "TableName": "Other", "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    call(engine, "BatchWriteItem", {"RequestItems": {"Plain": [put_request(1)], "Other": [put_request(1)]}})


def test_numbers_are_compared_as_numbers_for_duplicates(engine):
    items = [{"PutRequest": {"Item": {"id": {"S": "a"}, "n": {"N": n}}}} for n in ("1", "1.0")]
    before = everything(engine, "Sorted")
    assert error_of(engine, "BatchWriteItem", {"RequestItems": {"Sorted": items}}).message == DUPLICATES
    assert everything(engine, "Sorted") == before


def test_one_bad_item_refuses_the_whole_batch(engine):
    good = [put_request(i) for i in range(5)]
    refused(engine, {"RequestItems": {"Plain": [*good, {"PutRequest": {"Item": {"v": {"S": "x"}}}}]}},
            "The provided key element does not match the schema")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, {"PutRequest": {"Item": {"id": {"N": "1"}}}}]}},
            "The provided key element does not match the schema")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, {"DeleteRequest": {"Key": {"id": {"S": "x"}, "b": {"S": "y"}}}}]}},
            "The provided key element does not match the schema")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, put_request(9, big={"S": "x" * 410_000})]}},
            "Item size has exceeded the maximum allowed size")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, put_request(9, s={"SS": []})]}},
            INVALID + "An string set  may not be empty")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, {"PutRequest": {"Item": {"id": {"S": ""}}}}]}},
            "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
            "empty string value. Key: id")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, {}]}},
            "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported "
            "datatypes")  # fmt: skip
    refused(engine, {"RequestItems": {"Plain": [*good, {**put_request(8), **delete_request(8)}]}},
            "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported "
            "datatypes")  # fmt: skip


def test_a_missing_table_refuses_the_whole_batch(engine):
    refused(engine, {"RequestItems": {"Plain": [put_request(1)], "Nope": [put_request(2)]}},
            "Requested resource not found", "ResourceNotFoundException")  # fmt: skip


def test_values_are_checked_before_tables(engine):
    # A bad value in the second table's list wins over the first table not existing: values need no table.
    request = {"RequestItems": {"Nope": [put_request(1)], "Plain": [put_request(2, n={"N": "x"})]}}
    assert error_of(engine, "BatchWriteItem", request).message == "The parameter cannot be converted to a numeric value: x"


def test_conditions_are_not_part_of_a_batch(engine):
    # There is no condition member in a WriteRequest: anything else given is ignored, as DynamoDB ignores it.
    call(engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "k1"}, "v": {"N": "1"}}})
    request = {
        "RequestItems": {"Plain": [{"PutRequest": {"Item": {"id": {"S": "k1"}}, "ConditionExpression": "v = :x"}}]}
    }
    call(engine, "BatchWriteItem", request)
    assert everything(engine) == [{"id": {"S": "k1"}}]


def test_write_capacity_per_table(engine):
    call(engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "k3"}, "big": {"S": "x" * 3000}}})
    response = call(
        engine,
        "BatchWriteItem",
        {
            "RequestItems": {
                "Plain": [
                    put_request(1, big={"S": "x" * 1500}),  # 2 units
                    put_request(2),  # 1 unit
                    delete_request(3),  # sized by the deleted item: 3 units
                    delete_request(4),  # missing: 1 unit
                ],
                "Sorted": [{"PutRequest": {"Item": {"id": {"S": "s"}, "n": {"N": "1"}}}}],
            },
            "ReturnConsumedCapacity": "TOTAL",
        },
    )
    assert response["ConsumedCapacity"] == [
        {"TableName": "Plain", "CapacityUnits": 7.0},
        {"TableName": "Sorted", "CapacityUnits": 1.0},
    ]


def test_write_capacity_with_indexes(engine):
    create(engine, "Tagged", gsi=True)
    response = call(
        engine,
        "BatchWriteItem",
        {
            "RequestItems": {
                "Tagged": [
                    {"PutRequest": {"Item": {"id": {"S": "a"}, "tag": {"S": "t"}}}},
                    {"PutRequest": {"Item": {"id": {"S": "b"}}}},  # not in the sparse index
                ]
            },
            "ReturnConsumedCapacity": "INDEXES",
        },
    )
    assert response["ConsumedCapacity"] == [
        {
            "TableName": "Tagged",
            "CapacityUnits": 3.0,
            "Table": {"CapacityUnits": 2.0},
            "GlobalSecondaryIndexes": {"byTag": {"CapacityUnits": 1.0}},
        }
    ]
    # The index holds what the batch wrote.
    query = {"TableName": "Tagged", "IndexName": "byTag", "KeyConditionExpression": "tag = :t",
             "ExpressionAttributeValues": {":t": {"S": "t"}}}  # fmt: skip
    assert call(engine, "Query", query)["Items"] == [{"id": {"S": "a"}, "tag": {"S": "t"}}]


def test_an_index_key_of_the_wrong_type_refuses_the_batch(engine):
    create(engine, "Tagged", gsi=True)
    request = {"RequestItems": {"Tagged": [{"PutRequest": {"Item": {"id": {"S": "a"}}}},
                                           {"PutRequest": {"Item": {"id": {"S": "b"}, "tag": {"N": "1"}}}}]}}  # fmt: skip
    error = error_of(engine, "BatchWriteItem", request)
    assert error.type_name == "ValidationException" and "Type mismatch for Index Key tag" in error.message
    assert everything(engine, "Tagged") == []


def test_item_collection_metrics(engine):
    create(engine, "Local", sort=True, lsi=True)
    response = call(
        engine,
        "BatchWriteItem",
        {
            "RequestItems": {
                "Local": [
                    {"PutRequest": {"Item": {"id": {"S": "a"}, "n": {"N": "1"}, "when": {"S": "x"}}}},
                    {"PutRequest": {"Item": {"id": {"S": "a"}, "n": {"N": "2"}}}},
                    {"PutRequest": {"Item": {"id": {"S": "b"}, "n": {"N": "1"}}}},
                ],
                "Plain": [put_request(1)],
            },
            "ReturnItemCollectionMetrics": "SIZE",
        },
    )
    assert response["ItemCollectionMetrics"] == {
        "Local": [
            {"ItemCollectionKey": {"id": {"S": "a"}}, "SizeEstimateRangeGB": [0.0, 1.0]},
            {"ItemCollectionKey": {"id": {"S": "b"}}, "SizeEstimateRangeGB": [0.0, 1.0]},
        ]
    }
    plain = call(
        engine, "BatchWriteItem", {"RequestItems": {"Plain": [put_request(2)]}, "ReturnItemCollectionMetrics": "SIZE"}
    )
    assert "ItemCollectionMetrics" not in plain


def test_requests_on_held_items_are_left_unprocessed(engine):
    engine.faults.hold_item(engine.table("Plain"), {"id": {"S": "k2"}})
    requests = [put_request(1), put_request(2, v={"S": "x"})]
    response = call(engine, "BatchWriteItem", {"RequestItems": {"Plain": requests}})
    assert response == {"UnprocessedItems": {"Plain": [requests[1]]}}
    assert everything(engine) == [{"id": {"S": "k1"}}]
    engine.faults.release_all()
    call(engine, "BatchWriteItem", {"RequestItems": response["UnprocessedItems"]})
    assert everything(engine) == [{"id": {"S": "k1"}}, {"id": {"S": "k2"}, "v": {"S": "x"}}]


# --------------------------------------------------------------------------------------------------- BatchGetItem


def fill(engine, count=5):
    call(
        engine,
        "BatchWriteItem",
        {"RequestItems": {"Plain": [put_request(i, v={"N": str(i)}, w={"S": "w"}) for i in range(count)]}},
    )


def test_get_across_tables(engine):
    fill(engine)
    call(engine, "PutItem", {"TableName": "Sorted", "Item": {"id": {"S": "s"}, "n": {"N": "1"}}})
    response = call(
        engine,
        "BatchGetItem",
        {
            "RequestItems": {
                "Plain": {"Keys": [{"id": {"S": "k3"}}, {"id": {"S": "missing"}}, {"id": {"S": "k1"}}]},
                "Sorted": {"Keys": [{"id": {"S": "s"}, "n": {"N": "1.0"}}], "ConsistentRead": True},
            }
        },
    )
    assert response == {
        "Responses": {
            "Plain": [
                {"id": {"S": "k3"}, "v": {"N": "3"}, "w": {"S": "w"}},
                {"id": {"S": "k1"}, "v": {"N": "1"}, "w": {"S": "w"}},
            ],
            "Sorted": [{"id": {"S": "s"}, "n": {"N": "1"}}],
        },
        "UnprocessedKeys": {},
    }


def test_get_with_projections(engine):
    fill(engine)
    response = call(
        engine,
        "BatchGetItem",
        {
            "RequestItems": {
                "Plain": {
                    "Keys": [{"id": {"S": "k2"}}],
                    "ProjectionExpression": "#v, id",
                    "ExpressionAttributeNames": {"#v": "v"},
                }
            }
        },
    )
    assert response["Responses"] == {"Plain": [{"id": {"S": "k2"}, "v": {"N": "2"}}]}
    legacy = call(
        engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": [{"id": {"S": "k2"}}], "AttributesToGet": ["w"]}}}
    )
    assert legacy["Responses"] == {"Plain": [{"w": {"S": "w"}}]}


def test_get_projection_errors(engine):
    def message(entry):
        return error_of(
            engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": [{"id": {"S": "k"}}], **entry}}}
        ).message

    assert message({"ProjectionExpression": "a", "AttributesToGet": ["a"]}) == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"
    )
    assert message({"AttributesToGet": ["a", "a"]}) == INVALID + "Duplicate value in attribute name: a"
    assert message({"ExpressionAttributeNames": {"#a": "a"}}) == (
        "ExpressionAttributeNames can only be specified when using expressions"
    )
    assert message({"ProjectionExpression": "a", "ExpressionAttributeNames": {"#a": "a"}}) == (
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}"
    )
    assert message({"ProjectionExpression": "a,"}).startswith("Invalid ProjectionExpression: Syntax error;")


def test_get_limits_and_duplicates(engine):
    keys = [{"id": {"S": f"k{i}"}} for i in range(101)]
    assert error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": keys[:60]}, "Sorted": {
        "Keys": [{"id": {"S": "s"}, "n": {"N": str(i)}} for i in range(41)]}}}).message == (
        "Too many items requested for the BatchGetItem call"
    )  # fmt: skip
    message = error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": keys}}}).message
    assert message.startswith("1 validation error detected: Value '[")
    assert message.endswith("' at 'requestItems.Plain.member.keys' failed to satisfy constraint: "
                            "Member must have length less than or equal to 100")  # fmt: skip
    assert (
        error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": [keys[0], keys[0]]}}}).message
        == DUPLICATES
    )
    assert error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": []}}}).message == (
        "1 validation error detected: Value '[]' at 'requestItems.Plain.member.keys' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )
    assert error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {}}}).message == (
        "1 validation error detected: Value null at 'requestItems.Plain.member.keys' failed to satisfy constraint: "
        "Member must not be null"
    )


def test_get_missing_table_and_bad_keys(engine):
    error = error_of(
        engine,
        "BatchGetItem",
        {"RequestItems": {"Plain": {"Keys": [{"id": {"S": "k"}}]}, "Nope": {"Keys": [{"id": {"S": "k"}}]}}},
    )
    assert (error.type_name, error.message) == ("ResourceNotFoundException", "Requested resource not found")
    for bad in ({"id": {"N": "1"}}, {"other": {"S": "x"}}, {"id": {"S": "x"}, "b": {"S": "y"}}):
        assert error_of(engine, "BatchGetItem", {"RequestItems": {"Plain": {"Keys": [bad]}}}).message == (
            "The provided key element does not match the schema"
        )


def test_get_capacity(engine):
    call(
        engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "big"}, "b": {"S": "x" * 5000}}}
    )  # 2 read units
    call(engine, "PutItem", {"TableName": "Sorted", "Item": {"id": {"S": "s"}, "n": {"N": "1"}}})
    response = call(
        engine,
        "BatchGetItem",
        {
            "RequestItems": {
                "Plain": {"Keys": [{"id": {"S": "big"}}, {"id": {"S": "nothing"}}], "ProjectionExpression": "id"},
                "Sorted": {"Keys": [{"id": {"S": "s"}, "n": {"N": "1"}}], "ConsistentRead": True},
            },
            "ReturnConsumedCapacity": "INDEXES",
        },
    )
    # Eventual reads at half: (2 + 1) / 2 for Plain (sized by the whole item, not the projection); 1 consistent.
    assert response["ConsumedCapacity"] == [
        {"TableName": "Plain", "CapacityUnits": 1.5, "Table": {"CapacityUnits": 1.5}},
        {"TableName": "Sorted", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}},
    ]


def test_get_stops_at_16_mb_and_returns_the_rest_unprocessed(engine):
    blob = "x" * 399_000
    for start in range(0, 44, 20):
        call(engine, "BatchWriteItem", {"RequestItems": {"Plain": [
            put_request(i, payload={"S": blob}) for i in range(start, min(start + 20, 44))]}})  # fmt: skip
    keys = [{"id": {"S": f"k{i}"}} for i in range(44)]
    request = {"RequestItems": {"Plain": {"Keys": keys, "ConsistentRead": True, "ProjectionExpression": "id, payload"}}}
    response = call(engine, "BatchGetItem", request)
    got = response["Responses"]["Plain"]
    assert sum(len(item["payload"]["S"]) for item in got) <= 16 * 1024 * 1024
    assert len(got) == 42  # 42 items of ~399 KB fit in 16 MB, the 43rd would not
    assert response["UnprocessedKeys"] == {
        "Plain": {"Keys": keys[42:], "ConsistentRead": True, "ProjectionExpression": "id, payload"}
    }
    again = call(engine, "BatchGetItem", {"RequestItems": response["UnprocessedKeys"]})
    assert [{"id": item["id"]} for item in again["Responses"]["Plain"]] == keys[42:]
    assert again["UnprocessedKeys"] == {}


# --------------------------------------------------------------------------------------------- capacity elsewhere


def test_single_item_capacity(engine):
    put = call(engine, "PutItem", {"TableName": "Plain", "Item": {"id": {"S": "a"}, "b": {"S": "x" * 2000}},
                                   "ReturnConsumedCapacity": "TOTAL"})  # fmt: skip
    assert put["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 2.0}
    get = call(engine, "GetItem", {"TableName": "Plain", "Key": {"id": {"S": "a"}}, "ReturnConsumedCapacity": "TOTAL"})
    assert get["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 0.5}
    get = call(engine, "GetItem", {"TableName": "Plain", "Key": {"id": {"S": "a"}}, "ConsistentRead": True,
                                   "ReturnConsumedCapacity": "INDEXES"})  # fmt: skip
    assert get["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    update = call(engine, "UpdateItem", {"TableName": "Plain", "Key": {"id": {"S": "a"}}, "UpdateExpression": "REMOVE b",
                                         "ReturnConsumedCapacity": "TOTAL"})  # fmt: skip
    assert update["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 2.0}  # the larger of old and new
    delete = call(
        engine, "DeleteItem", {"TableName": "Plain", "Key": {"id": {"S": "a"}}, "ReturnConsumedCapacity": "NONE"}
    )
    assert delete == {}


def test_gsi_write_capacity_on_single_writes(engine):
    create(engine, "Tagged", gsi=True)

    def units(operation, request):
        return call(engine, operation, {"TableName": "Tagged", "ReturnConsumedCapacity": "INDEXES", **request})[
            "ConsumedCapacity"
        ]

    first = units("PutItem", {"Item": {"id": {"S": "a"}, "tag": {"S": "t"}}})
    assert first == {"TableName": "Tagged", "CapacityUnits": 2.0, "Table": {"CapacityUnits": 1.0},
                     "GlobalSecondaryIndexes": {"byTag": {"CapacityUnits": 1.0}}}  # fmt: skip
    # Changing the index key deletes the old entry and puts the new one: two index writes.
    moved = units("UpdateItem", {"Key": {"id": {"S": "a"}}, "UpdateExpression": "SET tag = :u",
                                 "ExpressionAttributeValues": {":u": {"S": "u"}}})  # fmt: skip
    assert moved["GlobalSecondaryIndexes"] == {"byTag": {"CapacityUnits": 2.0}} and moved["CapacityUnits"] == 3.0
    # A write the index does not see (same item again) costs the table only.
    same = units("PutItem", {"Item": {"id": {"S": "a"}, "tag": {"S": "u"}}})
    assert same == {"TableName": "Tagged", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0}}
    gone = units("DeleteItem", {"Key": {"id": {"S": "a"}}})
    assert gone["GlobalSecondaryIndexes"] == {"byTag": {"CapacityUnits": 1.0}}


def test_query_and_scan_capacity(engine):
    fill(engine, 3)
    scan = call(engine, "Scan", {"TableName": "Plain", "ReturnConsumedCapacity": "TOTAL", "FilterExpression": "v = :no",
                                 "ExpressionAttributeValues": {":no": {"N": "99"}}})  # fmt: skip
    assert scan["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 0.5}  # filtered items are still read
    empty = call(engine, "Query", {"TableName": "Plain", "KeyConditionExpression": "id = :k", "ConsistentRead": True,
                                   "ExpressionAttributeValues": {":k": {"S": "none"}}, "ReturnConsumedCapacity": "TOTAL"})  # fmt: skip
    assert empty["ConsumedCapacity"] == {"TableName": "Plain", "CapacityUnits": 1.0}
