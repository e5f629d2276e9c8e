"""Calling an engine directly in tests: requests and responses are deep-copied, so a test can never pass because the
engine kept (or mutated) a reference to the caller's dicts. And the CreateTable requests most engine tests start from."""

from __future__ import annotations

import copy

import pytest

from globaltables.engine.errors import DynamoError


def call(engine, operation, request):
    return copy.deepcopy(engine.handle(operation, copy.deepcopy(request)))


def error_of(engine, operation, request) -> DynamoError:
    with pytest.raises(DynamoError) as caught:
        engine.handle(operation, copy.deepcopy(request))
    return caught.value


def pk_table(name: str) -> dict:
    """A CreateTable request (fresh lists each call): on-demand table `name` keyed by the string attribute `pk`."""
    return {
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


def pk_table_with_gsi(name: str, index: str, attribute: str) -> dict:
    """`pk_table(name)` with global secondary index `index` (all attributes projected) keyed by the string
    attribute `attribute`."""
    request = pk_table(name)
    request["AttributeDefinitions"].append({"AttributeName": attribute, "AttributeType": "S"})
    request["GlobalSecondaryIndexes"] = [
        {"IndexName": index, "KeySchema": [{"AttributeName": attribute, "KeyType": "HASH"}],
         "Projection": {"ProjectionType": "ALL"}},
    ]  # fmt: skip
    return request
