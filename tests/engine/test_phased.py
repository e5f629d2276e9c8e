"""`Engine.handle_many` gives exactly what one `handle` call per request gives, in order: responses, errors,
versions, the items left behind and the change log (engine/phased.py)."""

from __future__ import annotations

import random

import orjson
import pytest

from global_engines import TABLE
from global_engines import global_engine as global_engine_of
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.operations import get_item
from globaltables.runtime.clock import ManualClock


def global_engine(store) -> Engine:
    return global_engine_of("us-east-1", store=store)[0]


def random_request(rng: random.Random) -> tuple[str, dict]:
    """A write of one of a few keys, sometimes conditional, sometimes malformed."""
    key = {"pk": {"S": f"k{rng.randrange(4)}"}}
    roll = rng.random()
    if roll < 0.4:
        request = {"TableName": TABLE, "Item": {**key, "n": {"N": str(rng.randrange(5))}}}
        if rng.random() < 0.3:
            request["ConditionExpression"] = "attribute_not_exists(pk)"
        return "PutItem", request
    if roll < 0.7:
        request = {
            "TableName": TABLE, "Key": key, "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }  # fmt: skip
        if rng.random() < 0.3:  # a condition that fails once n reaches 3
            request["ConditionExpression"] = "n < :three"
            request["ExpressionAttributeValues"][":three"] = {"N": "3"}
        return "UpdateItem", request
    if roll < 0.9:
        return "DeleteItem", {"TableName": TABLE, "Key": key, "ReturnValues": "ALL_OLD"}
    return "PutItem", {"TableName": TABLE, "Item": {"n": {"N": "1"}}}  # no key: a ValidationException


def outcome(result) -> object:
    return (type(result).__name__, result.message) if isinstance(result, DynamoError) else result


@pytest.mark.parametrize("seed", range(4))
def test_handle_many_matches_one_handle_per_request(make_store, seed: int) -> None:
    rng = random.Random(seed)
    one_by_one, phased = global_engine(make_store()), global_engine(make_store())
    for _round in range(20):
        operation, _ = random_request(rng)  # one operation per batch, as handle_many takes
        batch = [random_request(rng)[1] for _ in range(rng.randint(1, 12))]
        batch = [request for request in batch if _operation_of(request) == operation] or [random_request(rng)[1]]
        operation = _operation_of(batch[0])
        expected = []
        for request in batch:
            try:
                response, version = one_by_one.execute(operation, request)
            except DynamoError as error:
                response, version = error, None
            expected.append((outcome(response), version))
        got = [(outcome(response), version) for response, version in phased.handle_many(operation, batch)]
        assert got == expected
    scan = {"TableName": TABLE, "ConsistentRead": True}
    assert phased.handle("Scan", scan) == one_by_one.handle("Scan", scan)
    for lane in range(phased.replica.lanes(TABLE)):
        assert shipped(phased, lane) == shipped(one_by_one, lane)


def shipped(engine: Engine, lane: int) -> list:
    """The lane's records as replication ships them (images as their stored JSON)."""
    return [orjson.loads(orjson.dumps(list(record))) for record in engine.replica.local_records(TABLE, lane, 0, 1000)]


def _operation_of(request: dict) -> str:
    if "Item" in request:
        return "PutItem"
    return "UpdateItem" if "UpdateExpression" in request else "DeleteItem"


def test_handle_many_refuses_operations_it_cannot_phase(make_store) -> None:
    with pytest.raises(ValueError, match="GetItem"):
        global_engine(make_store()).handle_many("Scan", [])


# ------------------------------------------------------------------------------------ execute_many (a loop turn)

READ_TABLE = "Reads"
RANGE_TABLE = "Ranges"


def capacity_engine(store) -> tuple[Engine, ManualClock]:
    """An engine with modelled capacity and a table provisioned at 5 RCU: a dozen eventually consistent reads of
    small items in one instant exhaust its first second, so batches below are throttled part of the way."""
    clock = ManualClock(wall_time=1_700_000_000.0)
    engine = Engine(store, clock, region="us-east-1", capacity="modelled")
    engine.handle(
        "CreateTable",
        {
            "TableName": READ_TABLE,
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 1000},
        },
    )
    for n in range(6):
        engine.handle("PutItem", {"TableName": READ_TABLE, "Item": {"pk": {"S": f"k{n}"}, "n": {"N": str(n)}}})
    engine.handle(
        "CreateTable",
        {
            "TableName": RANGE_TABLE,
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "N"},
            ],
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 1000},
        },
    )  # fmt: skip
    for n in range(30):
        item = {"pk": {"S": f"p{n % 3}"}, "sk": {"N": str(n)}, "n": {"N": str(n % 4)}}
        engine.handle("PutItem", {"TableName": RANGE_TABLE, "Item": item})
    return engine, clock


def random_read(rng: random.Random) -> dict:
    """A GetItem of one of a few keys (some absent), sometimes strongly consistent or projected, sometimes
    malformed or of a table that does not exist."""
    request: dict = {"TableName": READ_TABLE, "Key": {"pk": {"S": f"k{rng.randrange(8)}"}}}
    roll = rng.random()
    if roll < 0.2:
        request["ConsistentRead"] = True
    elif roll < 0.3:
        request["ProjectionExpression"] = "n"
    elif roll < 0.35:
        request["ReturnConsumedCapacity"] = "TOTAL"
    elif roll < 0.42:
        del request["Key"]  # a ValidationException in the first phase
    elif roll < 0.47:
        request["TableName"] = "Missing"  # a ResourceNotFoundException in the first phase
    elif roll < 0.5:
        request["ProjectionExpression"] = "#undefined"  # an expression error in the first phase
    return request


def random_query(rng: random.Random) -> dict:
    """A Query of one of a few item collections (one empty), with sort-key conditions, limits, filters, projections
    and start keys, sometimes malformed."""
    request: dict = {
        "TableName": RANGE_TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": f"p{rng.randrange(4)}"}},
    }
    roll = rng.random()
    if roll < 0.2:
        request["KeyConditionExpression"] += " AND sk BETWEEN :lo AND :hi"
        request["ExpressionAttributeValues"].update({":lo": {"N": str(rng.randrange(10))}, ":hi": {"N": "20"}})
    elif roll < 0.3:
        request["FilterExpression"] = "n = :n"
        request["ExpressionAttributeValues"][":n"] = {"N": "1"}
    elif roll < 0.4:
        request["ProjectionExpression"] = "sk"
    elif roll < 0.5:
        request["ExclusiveStartKey"] = {"pk": request["ExpressionAttributeValues"][":p"], "sk": {"N": "6"}}
    elif roll < 0.55:
        request["ExclusiveStartKey"] = {"pk": {"S": "elsewhere"}, "sk": {"N": "6"}}  # outside the range read
    elif roll < 0.6:
        request["KeyConditionExpression"] = "sk = :p"  # no partition key condition
    elif roll < 0.65:
        del request["ExpressionAttributeValues"]  # an undefined :p
    elif roll < 0.7:
        request["ReturnConsumedCapacity"] = "INDEXES"
    if rng.random() < 0.4:
        request["Limit"] = rng.randint(1, 6)
    if rng.random() < 0.3:
        request["ScanIndexForward"] = False
    if rng.random() < 0.2:
        request["ConsistentRead"] = True
    return request


def read_outcome(result) -> object:
    """An answer as the wire sends it (encoded reads hold orjson fragments), or the error's type and message."""
    if isinstance(result, DynamoError):
        return type(result).__name__, result.message
    return orjson.loads(orjson.dumps(result))


def compare_turns(make_store, rng: random.Random, operation: str, make_request, most: int, steps) -> tuple:
    """25 turns of 1 to `most` requests of `operation` (`make_request(rng)` each), answered by `execute_many` on one
    engine and by one `execute` per request on another (the same tables and items, the same clock steps between
    turns): asserts the answers are equal turn by turn; returns them all and the two engines (one by one first)."""
    (one_by_one, clock_a), (phased, clock_b) = capacity_engine(make_store()), capacity_engine(make_store())
    answers = []
    for _round in range(25):
        batch = [make_request(rng) for _ in range(rng.randint(1, most))]
        expected = []
        for request in batch:
            try:
                response, version = one_by_one.execute(operation, request, encoded=True)
            except DynamoError as error:
                response, version = error, None
            expected.append((read_outcome(response), version))
        got = [(read_outcome(response), version) for response, version in phased.execute_many(operation, batch, True)]
        assert got == expected
        answers.extend(result for result, _version in got)
        step = rng.choice(steps)
        clock_a.advance(step)
        clock_b.advance(step)
    return answers, (one_by_one, phased)


@pytest.mark.parametrize("seed", range(4))
def test_execute_many_reads_match_one_execute_per_request(make_store, seed: int) -> None:
    """GetItems of one turn, checked together and then read: the same answers, throttles and throttle counts as
    one `execute` per request, in order."""
    answers, engines = compare_turns(make_store, random.Random(seed), "GetItem", random_read, 16, [0.0, 0.3, 1.0])
    refused = [result for result in answers if type(result) is tuple]
    throttled = sum(1 for name, _message in refused if name == "ProvisionedThroughputExceededException")
    assert throttled > 0, "the batches must reach the table's limit, or the charges' order is not tested"
    counts = [engine.throughput.tables[READ_TABLE].throttled_requests for engine in engines]
    assert counts[0] == counts[1] and counts[0].get("GetItem") == throttled


@pytest.mark.parametrize("seed", range(3))
def test_execute_many_queries_match_one_execute_per_request(make_store, seed: int) -> None:
    """Queries of one turn, checked together and then read: the same pages, errors and throttles as one `execute`
    per request, in order."""
    answers, _engines = compare_turns(make_store, random.Random(seed), "Query", random_query, 20, [0.0, 0.1, 1.0])
    kinds = {result[0] if type(result) is tuple else "page" for result in answers}
    assert {"page", "ValidationException", "ProvisionedThroughputExceededException"} <= kinds


def test_execute_many_answers_a_failing_request_alone(make_store, monkeypatch) -> None:
    """A bug in one request's read is that request's result; the requests before and after it are answered."""
    engine, _clock = capacity_engine(make_store())
    real_read = get_item.read

    def read(engine, request, checked, encoded=False):
        if request["Key"]["pk"]["S"] == "k1":
            raise RuntimeError("a bug")
        return real_read(engine, request, checked, encoded)

    monkeypatch.setattr(get_item, "read", read)
    batch = [{"TableName": READ_TABLE, "Key": {"pk": {"S": f"k{n}"}}} for n in range(3)]
    results = engine.execute_many("GetItem", batch, encoded=False)
    assert [type(result).__name__ for result, _version in results] == ["dict", "RuntimeError", "dict"]
    assert [result["Item"]["n"] for result, _ in results if isinstance(result, dict)] == [{"N": "0"}, {"N": "2"}]


def test_execute_many_resolves_table_arns_one_request_at_a_time(make_store) -> None:
    """A request naming its table by ARN is not phased (Engine.execute resolves the ARN): the batch is answered one
    `execute` after another, with the same answers."""
    engine, _clock = capacity_engine(make_store())
    arn = engine.handle("DescribeTable", {"TableName": READ_TABLE})["Table"]["TableArn"]
    batch = [
        {"TableName": arn, "Key": {"pk": {"S": "k2"}}},
        {"TableName": READ_TABLE, "Key": {"pk": {"S": "k3"}}},
        {"TableName": READ_TABLE},
    ]
    results = engine.execute_many("GetItem", batch)
    assert results[0][0]["Item"] == {"pk": {"S": "k2"}, "n": {"N": "2"}}
    assert results[1][0]["Item"] == {"pk": {"S": "k3"}, "n": {"N": "3"}}
    assert type(results[2][0]).__name__ == "ValidationException"
