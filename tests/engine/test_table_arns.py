"""Table ARNs resolved in the engine (engine/table_arns.py): the edges the wire tests do not reach."""

from __future__ import annotations

import pytest

from engine_calls import pk_table
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.runtime.clock import ManualClock

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/Orders"


@pytest.fixture
def engine(make_store) -> Engine:
    engine = Engine(make_store(), ManualClock(), region="us-east-1")
    create(engine, "Orders")
    return engine


def create(engine: Engine, name: str) -> None:
    engine.handle("CreateTable", pk_table(name))


def error(engine: Engine, operation: str, request: dict) -> DynamoError:
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, request)
    return caught.value


def test_a_batch_naming_one_table_twice_by_name_and_arn_is_refused(engine):
    keys = {"Keys": [{"pk": {"S": "a"}}]}
    refused = error(engine, "BatchGetItem", {"RequestItems": {"Orders": keys, ARN: keys}})
    assert refused.type_name == "ValidationException" and "more than once" in refused.message


def test_a_batch_mixing_names_and_arns_answers_each_as_it_was_asked(engine):
    engine.handle("PutItem", {"TableName": "Orders", "Item": {"pk": {"S": "a"}}})
    create(engine, "Other")
    keys = {"Keys": [{"pk": {"S": "a"}}]}
    got = engine.handle("BatchGetItem", {"RequestItems": {ARN: keys, "Other": keys}})
    assert got["Responses"] == {ARN: [{"pk": {"S": "a"}}], "Other": []}


def test_too_long_and_foreign_arns(engine):
    too_long = error(engine, "GetItem", {"TableName": "arn:" + "x" * 1100, "Key": {"pk": {"S": "a"}}})
    assert too_long.type_name == "ValidationException" and "1024" in too_long.message
    foreign = error(engine, "DeleteTable", {"TableName": ARN.replace("us-east-1", "eu-west-1")})
    assert foreign.type_name == "ResourceNotFoundException"
    assert "Orders" in engine.handle("ListTables", {})["TableNames"]  # nothing was deleted


def test_a_transaction_item_named_by_arn_reports_its_table_by_name(engine):
    engine.handle(
        "TransactWriteItems",
        {"TransactItems": [{"Put": {"TableName": ARN, "Item": {"pk": {"S": "t"}}}}]},
    )
    assert engine.handle("GetItem", {"TableName": "Orders", "Key": {"pk": {"S": "t"}}})["Item"] == {"pk": {"S": "t"}}
