"""`Engine.execute(encoded=True)`: GetItem and Query answer whole items as their stored JSON (storage/records.py,
raw reads). The answer must serialise to exactly the bytes of the decoded answer, on both stores, for standalone
and global tables, with and without the throughput model, whatever the items hold; and every read that needs the
item as a value (a projection, a filter, ConsumedCapacity, a page's LastEvaluatedKey) still gets it."""

from __future__ import annotations

import orjson
import pytest

from global_engines import TABLE, global_engine
from globaltables.engine.engine import Engine
from globaltables.runtime.clock import ManualClock

ITEMS = [
    {"pk": {"S": "p"}, "sk": {"S": "a"}, "text": {"S": "plain"}},
    {"pk": {"S": "p"}, "sk": {"S": "b"}, "text": {"S": "ünïcödé \u2028 \"quoted\" \\ \n tab\t"}, "n": {"N": "-0.5e3"}},
    {"pk": {"S": "p"}, "sk": {"S": "c"}, "bin": {"B": "AAEC/w=="}, "bs": {"BS": ["AQ==", "Ag=="]}},
    {"pk": {"S": "p"}, "sk": {"S": "d"}, "ns": {"NS": ["1", "10", "2.50"]}, "ss": {"SS": ["x", "y"]}},
    {"pk": {"S": "p"}, "sk": {"S": "e"}, "m": {"M": {"l": {"L": [{"NULL": True}, {"BOOL": False}, {"N": "7"}]}}}},
    {"pk": {"S": "q"}, "sk": {"S": "a"}, "only": {"S": "other partition"}},
]

QUERY = {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "p"}}}
READS = [
    ("GetItem", {"Key": {"pk": {"S": "p"}, "sk": {"S": "b"}}}),
    ("GetItem", {"Key": {"pk": {"S": "p"}, "sk": {"S": "e"}}, "ConsistentRead": True}),
    ("GetItem", {"Key": {"pk": {"S": "p"}, "sk": {"S": "zz"}}}),  # no such item
    ("GetItem", {"Key": {"pk": {"S": "p"}, "sk": {"S": "c"}}, "ProjectionExpression": "bin"}),
    ("GetItem", {"Key": {"pk": {"S": "p"}, "sk": {"S": "d"}}, "ReturnConsumedCapacity": "TOTAL"}),
    ("Query", QUERY),
    ("Query", {**QUERY, "ScanIndexForward": False}),
    ("Query", {**QUERY, "Limit": 2}),  # a LastEvaluatedKey, from the last item read
    ("Query", {**QUERY, "Limit": 2, "ExclusiveStartKey": {"pk": {"S": "p"}, "sk": {"S": "b"}}}),
    ("Query", {**QUERY, "Select": "COUNT"}),
    ("Query", {**QUERY, "ProjectionExpression": "sk, m"}),
    ("Query", {**QUERY, "FilterExpression": "attribute_exists(ns)"}),
    ("Query", {**QUERY, "ReturnConsumedCapacity": "TOTAL"}),
    ("Query", {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": {"S": "none"}}}),
]


def standalone(store, capacity: str) -> Engine:
    engine = Engine(store, ManualClock(wall_time=1_700_000_000.0), region="us-east-1", capacity=capacity)
    engine.handle(
        "CreateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    for item in ITEMS:
        engine.handle("PutItem", {"TableName": TABLE, "Item": item})
    return engine


@pytest.mark.parametrize("capacity", ["unlimited", "modelled"])
@pytest.mark.parametrize(("operation", "request_fields"), READS)
def test_encoded_answers_serialise_to_the_decoded_bytes(make_store, capacity, operation, request_fields):
    engine = standalone(make_store(), capacity)
    request = {"TableName": TABLE, **request_fields}
    decoded = engine.execute(operation, orjson.loads(orjson.dumps(request)))
    encoded = engine.execute(operation, orjson.loads(orjson.dumps(request)), encoded=True)
    assert orjson.dumps(encoded.response) == orjson.dumps(decoded.response)
    assert encoded.version == decoded.version
    assert isinstance(decoded.response.get("Item", {}), dict)  # a caller that does not ask gets values
    assert all(isinstance(item, dict) for item in decoded.response.get("Items", []))


def test_whole_items_are_answered_as_stored_and_the_rest_as_values(make_store):
    engine = standalone(make_store(), "unlimited")
    got = engine.execute("GetItem", {"TableName": TABLE, "Key": {"pk": {"S": "p"}, "sk": {"S": "a"}}}, encoded=True)
    assert isinstance(got.response["Item"], orjson.Fragment)
    page = engine.execute("Query", {"TableName": TABLE, **QUERY, "Limit": 2}, encoded=True).response
    assert all(isinstance(item, orjson.Fragment) for item in page["Items"])
    assert page["LastEvaluatedKey"] == {"pk": {"S": "p"}, "sk": {"S": "b"}}
    projected = engine.execute("Query", {"TableName": TABLE, **QUERY, "ProjectionExpression": "sk"}, encoded=True)
    assert projected.response["Items"][0] == {"sk": {"S": "a"}}


@pytest.mark.parametrize("capacity_read", [False, True])
def test_a_global_tables_encoded_get_answers_the_version_read(make_store, capacity_read):
    engine, _clock = global_engine("us-east-1", store=make_store())
    put = engine.execute("PutItem", {"TableName": TABLE, "Item": {"pk": {"S": "k"}, "v": {"S": "ü"}}})
    request = {"TableName": TABLE, "Key": {"pk": {"S": "k"}}}
    if capacity_read:
        request["ReturnConsumedCapacity"] = "TOTAL"
    decoded = engine.execute("GetItem", dict(request))
    encoded = engine.execute("GetItem", dict(request), encoded=True)
    assert encoded.version == decoded.version == put.version
    assert orjson.dumps(encoded.response) == orjson.dumps(decoded.response)
