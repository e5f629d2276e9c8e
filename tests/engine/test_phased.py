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
        global_engine(make_store()).handle_many("GetItem", [])
