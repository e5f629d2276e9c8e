"""The legacy parameters on an in-memory engine: Expected, ConditionalOperator, AttributeUpdates, KeyConditions,
QueryFilter, ScanFilter and AttributesToGet, their validation texts, the rules for mixing them with expressions,
and that each behaves exactly like the expression it translates to.
"""

from __future__ import annotations

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.runtime.clock import ManualClock

INVALID = "One or more parameter values were invalid: "
MIXED = "Can not use both expression and non-expression parameters in the same request: "
OPERATOR_SET = "[IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"


@pytest.fixture
def engine(make_store):
    engine = Engine(make_store(), ManualClock(wall_time=1_700_000_000.0))
    engine.handle("CreateTable", {
        "TableName": "Items", "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    engine.handle("CreateTable", {
        "TableName": "Events",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}, {"AttributeName": "n", "AttributeType": "N"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}, {"AttributeName": "n", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    return engine


def message(engine, operation, request) -> str:
    return error_of(engine, operation, request).message


def item_of(engine, key="a", table="Items"):
    return call(engine, "GetItem", {"TableName": table, "Key": {"id": {"S": key}}}).get("Item")


SAMPLE = {
    "id": {"S": "a"},
    "s": {"S": "hello"},
    "n": {"N": "5"},
    "b": {"B": "AQID"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2"]},
    "l": {"L": [{"S": "x"}, {"N": "1"}]},
    "m": {"M": {"k": {"S": "v"}}},
    "t": {"BOOL": True},
    "z": {"NULL": True},
}


def put_sample(engine):
    call(engine, "PutItem", {"TableName": "Items", "Item": SAMPLE})


# ------------------------------------------------------------------------------------------------------- Expected


def expect(engine, expected, operator=None, operation="PutItem") -> bool:
    """Whether a write conditioned by `expected` succeeds against SAMPLE (restored afterwards)."""
    put_sample(engine)
    request = {"TableName": "Items", "Expected": expected}
    if operator is not None:
        request["ConditionalOperator"] = operator
    if operation == "PutItem":
        request["Item"] = {**SAMPLE, "written": {"BOOL": True}}
    elif operation == "UpdateItem":
        request["Key"] = {"id": {"S": "a"}}
        request["AttributeUpdates"] = {"written": {"Value": {"BOOL": True}}}
    else:
        request["Key"] = {"id": {"S": "a"}}
    try:
        engine.handle(operation, request)
    except DynamoError as error:
        assert error.type_name == "ConditionalCheckFailedException", error.message
        assert item_of(engine) == SAMPLE  # nothing changed
        return False
    return True


@pytest.mark.parametrize("operation", ["PutItem", "UpdateItem", "DeleteItem"])
def test_exists_and_value(engine, operation):
    assert expect(engine, {"s": {"Value": {"S": "hello"}}}, operation=operation)
    assert expect(engine, {"s": {"Value": {"S": "hello"}, "Exists": True}}, operation=operation)
    assert not expect(engine, {"s": {"Value": {"S": "other"}}}, operation=operation)
    assert not expect(engine, {"n": {"Value": {"S": "5"}}}, operation=operation)  # types differ
    assert expect(engine, {"nothing": {"Exists": False}}, operation=operation)
    assert not expect(engine, {"s": {"Exists": False}}, operation=operation)


CASES = [
    # (attribute, operator, values, expected outcome against SAMPLE)
    ("s", "EQ", [{"S": "hello"}], True),
    ("ss", "EQ", [{"SS": ["y", "x"]}], True),
    ("s", "NE", [{"S": "hello"}], False),
    ("missing", "NE", [{"S": "hello"}], True),
    ("n", "LT", [{"N": "6"}], True),
    ("n", "LT", [{"N": "5"}], False),
    ("n", "LE", [{"N": "5"}], True),
    ("n", "GT", [{"N": "4.9"}], True),
    ("n", "GE", [{"N": "5.0"}], True),
    ("s", "GT", [{"N": "1"}], False),
    ("s", "NOT_NULL", [], True),
    ("z", "NOT_NULL", [], True),
    ("missing", "NOT_NULL", [], False),
    ("missing", "NULL", [], True),
    ("z", "NULL", [], False),
    ("s", "CONTAINS", [{"S": "ell"}], True),
    ("ss", "CONTAINS", [{"S": "x"}], True),
    ("ns", "CONTAINS", [{"N": "2"}], True),
    ("l", "CONTAINS", [{"N": "1"}], True),
    ("b", "CONTAINS", [{"B": "Ag=="}], True),
    ("n", "CONTAINS", [{"N": "5"}], False),
    ("s", "NOT_CONTAINS", [{"S": "xyz"}], True),
    ("ss", "NOT_CONTAINS", [{"S": "x"}], False),
    ("missing", "NOT_CONTAINS", [{"S": "x"}], False),
    ("s", "BEGINS_WITH", [{"S": "he"}], True),
    ("s", "BEGINS_WITH", [{"S": "lo"}], False),
    ("b", "BEGINS_WITH", [{"B": "AQ=="}], True),
    ("n", "IN", [{"N": "1"}, {"N": "5"}], True),
    ("n", "IN", [{"N": "1"}, {"N": "2"}], False),
    ("n", "BETWEEN", [{"N": "5"}, {"N": "9"}], True),
    ("s", "BETWEEN", [{"S": "a"}, {"S": "h"}], False),
]


@pytest.mark.parametrize(("name", "op", "values", "outcome"), CASES)
def test_expected_comparison_operators(engine, name, op, values, outcome):
    condition = {"ComparisonOperator": op}
    if values:
        condition["AttributeValueList"] = values
    assert expect(engine, {name: condition}) is outcome
    if len(values) == 1:  # `Value` works in place of a one-element AttributeValueList
        assert expect(engine, {name: {"ComparisonOperator": op, "Value": values[0]}}) is outcome


def test_conditional_operator(engine):
    true, false = {"ComparisonOperator": "NOT_NULL"}, {"ComparisonOperator": "NULL"}
    assert not expect(engine, {"s": true, "n": false})
    assert not expect(engine, {"s": true, "n": false}, "AND")
    assert expect(engine, {"s": true, "n": false}, "OR")
    assert not expect(engine, {"s": false, "n": false}, "OR")
    assert expect(engine, {})  # an empty Expected is no condition


EXPECTED_ERRORS = [
    ({"a": {"Value": {"S": "x"}, "AttributeValueList": [{"S": "x"}]}},
     INVALID + "Value and AttributeValueList cannot be used together for Attribute: a"),
    ({"a": {"ComparisonOperator": "EQ", "Exists": True, "Value": {"S": "x"}}},
     INVALID + "Exists and ComparisonOperator cannot be used together for Attribute: a"),
    ({"a": {"ComparisonOperator": "EQ"}},
     INVALID + "Value or AttributeValueList must be used with ComparisonOperator: EQ for Attribute: a"),
    ({"a": {"ComparisonOperator": "NULL", "Value": {"S": "x"}}},
     INVALID + "Invalid number of argument(s) for the NULL ComparisonOperator"),
    ({"a": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "1"}]}},
     INVALID + "Invalid number of argument(s) for the BETWEEN ComparisonOperator"),
    ({"a": {"ComparisonOperator": "IN", "AttributeValueList": []}},
     INVALID + "Invalid number of argument(s) for the IN ComparisonOperator"),
    ({"a": {"ComparisonOperator": "IN", "AttributeValueList": [{"N": "1"}, {"S": "1"}]}},
     INVALID + "AttributeValues inside AttributeValueList must be of same type"),
    ({"a": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "2"}, {"N": "1"}]}},
     "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"),
    ({"a": {"AttributeValueList": [{"S": "x"}]}},
     INVALID + "AttributeValueList can only be used with a ComparisonOperator for Attribute: a"),
    ({"a": {}}, INVALID + "Value must be provided when Exists is null for Attribute: a"),
    ({"a": {"Exists": True}}, INVALID + "Value must be provided when Exists is true for Attribute: a"),
    ({"a": {"Exists": False, "Value": {"S": "x"}}},
     INVALID + "Value cannot be used when Exists is false for Attribute: a"),
    ({"a": {"Value": {"SS": []}}}, INVALID + "An string set  may not be empty"),
    ({"a": {"ComparisonOperator": "XX"}},
     (f"1 validation error detected: Value 'XX' at 'expected.a.member.comparisonOperator' failed to satisfy "
     f"constraint: Member must satisfy enum value set: {OPERATOR_SET}")),
    # Operand types are checked in the request, as for QueryFilter and ScanFilter.
    ({"a": {"ComparisonOperator": "LT", "AttributeValueList": [{"SS": ["x"]}]}},
     INVALID + "ComparisonOperator LT is not valid for SS AttributeValue type"),
    ({"a": {"ComparisonOperator": "CONTAINS", "AttributeValueList": [{"L": []}]}},
     INVALID + "ComparisonOperator CONTAINS is not valid for L AttributeValue type"),
    ({"a": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"N": "1"}]}},
     INVALID + "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"),
    ({"a": {"ComparisonOperator": "IN", "AttributeValueList": [{"BOOL": True}]}},
     INVALID + "ComparisonOperator IN is not valid for BOOL AttributeValue type"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("request_parameters", "text"),
    [
        ({}, "ConditionalOperator cannot be used without Filter or Expected"),
        ({"Expected": {}}, "ConditionalOperator cannot be used without Filter or Expected"),
        ({"Expected": {"a": {"Exists": False}}},
         "ConditionalOperator can only be used when Filter or Expected has two or more elements"),
    ],
)  # fmt: skip
def test_conditional_operator_needs_two_conditions(engine, request_parameters, text):
    put_sample(engine)
    request = {"TableName": "Items", "Item": {"id": {"S": "a"}}, "ConditionalOperator": "AND", **request_parameters}
    assert message(engine, "PutItem", request) == text
    assert item_of(engine) == SAMPLE
    for operation, conditions in (("Scan", "ScanFilter"), ("Query", "QueryFilter")):
        request = {"TableName": "Items", "ConditionalOperator": "OR"}
        if operation == "Query":
            request["KeyConditions"] = {"id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "a"}]}}
        if "Expected" in request_parameters:
            request[conditions] = {
                name: {"ComparisonOperator": "NULL"} for name in request_parameters["Expected"]
            }
        assert message(engine, operation, request) == text


@pytest.mark.parametrize(("expected", "text"), EXPECTED_ERRORS)
def test_expected_validation(engine, expected, text):
    put_sample(engine)
    request = {"TableName": "Items", "Item": {"id": {"S": "a"}}, "Expected": expected}
    error = error_of(engine, "PutItem", request)
    assert (error.type_name, error.message) == ("ValidationException", text)
    assert item_of(engine) == SAMPLE


def test_expected_mixed_with_expressions(engine):
    request = {"TableName": "Items", "Item": {"id": {"S": "a"}}, "Expected": {"a": {"Exists": False}},
               "ConditionExpression": "attribute_not_exists(a)"}  # fmt: skip
    assert message(engine, "PutItem", request) == (
        MIXED + "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}"
    )
    request = {"TableName": "Items", "Item": {"id": {"S": "a"}}, "Expected": {"a": {"Exists": False}},
               "ExpressionAttributeValues": {":v": {"S": "x"}}}  # fmt: skip
    assert message(engine, "PutItem", request) == (
        "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null"
    )
    request = {"TableName": "Items", "Key": {"id": {"S": "a"}}, "AttributeUpdates": {"x": {"Value": {"S": "x"}}},
               "ExpressionAttributeValues": {":v": {"S": "x"}}}  # fmt: skip
    assert message(engine, "UpdateItem", request) == (
        "ExpressionAttributeValues can only be specified when using expressions: "
        "UpdateExpression and ConditionExpression are null"
    )
    request = {"TableName": "Items", "Key": {"id": {"S": "a"}}, "AttributeUpdates": {"x": {"Value": {"S": "x"}}},
               "Expected": {"a": {"Exists": False}}, "UpdateExpression": "SET x = :v", "ConditionExpression": "a = :v",
               "ExpressionAttributeValues": {":v": {"S": "x"}}}  # fmt: skip
    assert message(engine, "UpdateItem", request) == (
        MIXED + "Non-expression parameters: {AttributeUpdates, Expected} "
        "Expression parameters: {UpdateExpression, ConditionExpression}"
    )
    # ConditionalOperator is a legacy parameter too: DynamoDB refuses it beside ConditionExpression.
    request = {"TableName": "Items", "Item": SAMPLE, "ConditionExpression": "attribute_exists(s)",
               "ConditionalOperator": "OR"}  # fmt: skip
    assert message(engine, "PutItem", request) == (
        MIXED + "Non-expression parameters: {ConditionalOperator} Expression parameters: {ConditionExpression}"
    )


def test_expected_returns_the_old_item_on_failure(engine):
    put_sample(engine)
    error = error_of(engine, "PutItem", {"TableName": "Items", "Item": {"id": {"S": "a"}}, "Expected": {"s": {"Exists": False}},
                                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})  # fmt: skip
    assert error.type_name == "ConditionalCheckFailedException" and error.extra["Item"] == SAMPLE


def test_conditional_operator_enum(engine):
    request = {"TableName": "Items", "Item": {"id": {"S": "a"}}, "ConditionalOperator": "XOR"}
    assert message(engine, "PutItem", request) == (
        "1 validation error detected: Value 'XOR' at 'conditionalOperator' failed to satisfy constraint: "
        "Member must satisfy enum value set: [OR, AND]"
    )


# ----------------------------------------------------------------------------------------------- AttributeUpdates


def update(engine, updates, **extra):
    return call(
        engine, "UpdateItem", {"TableName": "Items", "Key": {"id": {"S": "a"}}, "AttributeUpdates": updates, **extra}
    )


def test_attribute_updates_actions(engine):
    put_sample(engine)
    update(engine, {
        "s": {"Value": {"S": "bye"}},  # PUT is the default action
        "new": {"Action": "PUT", "Value": {"N": "1"}},
        "n": {"Action": "ADD", "Value": {"N": "-2.5"}},
        "count": {"Action": "ADD", "Value": {"N": "3"}},  # missing: starts from 0
        "ss": {"Action": "ADD", "Value": {"SS": ["y", "z"]}},
        "ns": {"Action": "DELETE", "Value": {"NS": ["1", "9"]}},
        "l": {"Action": "ADD", "Value": {"L": [{"S": "x"}]}},  # lists append, duplicates and all
        "newlist": {"Action": "ADD", "Value": {"L": [{"N": "1"}]}},
        "t": {"Action": "DELETE"},
        "gone": {"Action": "DELETE"},
        "gone2": {"Action": "DELETE", "Value": {"SS": ["q"]}},
    })  # fmt: skip
    expected = {
        **SAMPLE,
        "s": {"S": "bye"},
        "new": {"N": "1"},
        "n": {"N": "2.5"},
        "count": {"N": "3"},
        "ss": {"SS": ["x", "y", "z"]},
        "ns": {"NS": ["2"]},
        "l": {"L": [{"S": "x"}, {"N": "1"}, {"S": "x"}]},
        "newlist": {"L": [{"N": "1"}]},
    }
    del expected["t"]
    assert item_of(engine) == expected


def test_deleting_every_element_removes_the_set(engine):
    put_sample(engine)
    update(engine, {"ss": {"Action": "DELETE", "Value": {"SS": ["x", "y"]}}})
    assert "ss" not in item_of(engine)


def test_attribute_updates_create_the_item(engine):
    response = update(
        engine, {"n": {"Action": "ADD", "Value": {"N": "1"}}, "x": {"Action": "DELETE"}}, ReturnValues="ALL_NEW"
    )
    assert response == {"Attributes": {"id": {"S": "a"}, "n": {"N": "1"}}}
    assert update(engine, {}, ReturnValues="ALL_NEW") == {"Attributes": {"id": {"S": "a"}, "n": {"N": "1"}}}


def test_attribute_updates_return_values(engine):
    put_sample(engine)
    old = update(engine, {"s": {"Value": {"S": "bye"}}, "n": {"Action": "DELETE"}, "q": {"Value": {"N": "1"}}},
                 ReturnValues="UPDATED_OLD")  # fmt: skip
    assert old == {"Attributes": {"s": {"S": "hello"}, "n": {"N": "5"}}}
    new = update(engine, {"s": {"Value": {"S": "again"}}, "t": {"Action": "DELETE"}}, ReturnValues="UPDATED_NEW")
    assert new == {"Attributes": {"s": {"S": "again"}}}


ATTRIBUTE_UPDATE_ERRORS = [
    ({"x": {"Action": "PUT"}}, INVALID + "Only DELETE action is allowed when no attribute value is specified"),
    ({"x": {"Action": "ADD"}}, INVALID + "Only DELETE action is allowed when no attribute value is specified"),
    ({"x": {"Action": "DELETE", "Value": {"S": "a"}}},
     INVALID + "DELETE action with value is not supported for the type S"),
    ({"x": {"Action": "DELETE", "Value": {"L": []}}},
     INVALID + "DELETE action with value is not supported for the type L"),
    ({"x": {"Action": "ADD", "Value": {"S": "a"}}}, INVALID + "ADD action is not supported for the type S"),
    ({"x": {"Action": "ADD", "Value": {"M": {}}}}, INVALID + "ADD action is not supported for the type M"),
    ({"x": {"Action": "ADD", "Value": {"BOOL": True}}}, INVALID + "ADD action is not supported for the type BOOL"),
    ({"id": {"Value": {"S": "b"}}}, INVALID + "Cannot update attribute id. This attribute is part of the key"),
    ({"id": {"Action": "DELETE"}}, INVALID + "Cannot update attribute id. This attribute is part of the key"),
    ({"s": {"Action": "ADD", "Value": {"N": "1"}}}, "Type mismatch for attribute to update"),
    ({"ns": {"Action": "ADD", "Value": {"SS": ["1"]}}}, "Type mismatch for attribute to update"),
    ({"ns": {"Action": "DELETE", "Value": {"SS": ["1"]}}}, "Type mismatch for attribute to update"),
    ({"s": {"Action": "ADD", "Value": {"L": []}}}, "Type mismatch for attribute to update"),
    ({"x": {"Action": "SET", "Value": {"S": "a"}}},
     ("1 validation error detected: Value 'SET' at 'attributeUpdates.x.member.action' failed to satisfy constraint: "
     "Member must satisfy enum value set: [ADD, PUT, DELETE]")),
    ({"x": {"Value": {"N": "1e500"}}}, "Number overflow. Attempting to store a number with magnitude larger than supported range"),
]  # fmt: skip


@pytest.mark.parametrize(("updates", "text"), ATTRIBUTE_UPDATE_ERRORS)
def test_attribute_updates_validation(engine, updates, text):
    put_sample(engine)
    error = error_of(
        engine, "UpdateItem", {"TableName": "Items", "Key": {"id": {"S": "a"}}, "AttributeUpdates": updates}
    )
    assert (error.type_name, error.message) == ("ValidationException", text)
    assert item_of(engine) == SAMPLE


def test_attribute_updates_with_expected(engine):
    put_sample(engine)
    update(engine, {"n": {"Action": "ADD", "Value": {"N": "1"}}}, Expected={"n": {"Value": {"N": "5"}}})
    with pytest.raises(DynamoError) as caught:
        update(engine, {"n": {"Action": "ADD", "Value": {"N": "1"}}}, Expected={"n": {"Value": {"N": "5"}}})
    assert caught.value.type_name == "ConditionalCheckFailedException"
    assert item_of(engine)["n"] == {"N": "6"}


# ------------------------------------------------------------------------------------------------- KeyConditions


@pytest.fixture
def events(engine):
    items = [{"PutRequest": {"Item": {"id": {"S": p}, "n": {"N": str(i)}, "kind": {"S": "odd" if i % 2 else "even"}}}}
             for p in ("p", "q") for i in range(1, 11)]  # fmt: skip
    call(engine, "BatchWriteItem", {"RequestItems": {"Events": items[:20]}})
    return engine


def numbers(response):
    return [int(item["n"]["N"]) for item in response["Items"]]


def query(engine, conditions, **extra):
    return call(engine, "Query", {"TableName": "Events", "KeyConditions": conditions, **extra})


P = {"id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}}


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        ("EQ", ["3"], [3]),
        ("LT", ["3"], [1, 2]),
        ("LE", ["3"], [1, 2, 3]),
        ("GT", ["8"], [9, 10]),
        ("GE", ["8"], [8, 9, 10]),
        ("BETWEEN", ["4", "6"], [4, 5, 6]),
    ],
)
def test_key_conditions_on_the_sort_key(events, op, values, expected):
    condition = {"n": {"ComparisonOperator": op, "AttributeValueList": [{"N": v} for v in values]}}
    assert numbers(query(events, {**P, **condition})) == expected


def test_key_conditions_hash_only_with_paging_and_filters(events):
    first = query(events, P, Limit=4, ScanIndexForward=False)
    assert numbers(first) == [10, 9, 8, 7]
    rest = query(events, P, ScanIndexForward=False, ExclusiveStartKey=first["LastEvaluatedKey"])
    assert numbers(rest) == [6, 5, 4, 3, 2, 1]
    odd = query(events, P, QueryFilter={"kind": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "odd"}]}})
    assert numbers(odd) == [1, 3, 5, 7, 9] and odd["ScannedCount"] == 10
    # KeyConditions go with expression filters and projections (only KeyConditionExpression excludes them).
    mixed = query(events, P, FilterExpression="kind = :k", ExpressionAttributeValues={":k": {"S": "even"}},
                  ProjectionExpression="n")  # fmt: skip
    assert mixed["Items"] == [{"n": {"N": str(i)}} for i in (2, 4, 6, 8, 10)]
    counted = query(events, P, Select="COUNT")
    assert counted["Count"] == 10 and "Items" not in counted


def test_begins_with_on_a_string_sort_key(engine):
    engine.handle("CreateTable", {
        "TableName": "Names",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}, {"AttributeName": "s", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}, {"AttributeName": "s", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    for s in ("apple", "apricot", "banana"):
        call(engine, "PutItem", {"TableName": "Names", "Item": {"id": {"S": "p"}, "s": {"S": s}}})
    response = call(engine, "Query", {"TableName": "Names", "KeyConditions": {
        **P, "s": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"S": "ap"}]}}})  # fmt: skip
    assert [item["s"]["S"] for item in response["Items"]] == ["apple", "apricot"]


KEY_CONDITION_ERRORS = [
    ({}, "Conditions can be of length 1 or 2 only"),
    ({**P, "n": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]},
      "x": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}}, "Conditions can be of length 1 or 2 only"),
    ({"n": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}},
     "Query condition missed key schema element: id"),
    ({**P, "x": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}},
     "Query condition missed key schema element: n"),
    ({"id": {"ComparisonOperator": "NE", "AttributeValueList": [{"S": "p"}]}},
     "Attempted conditional constraint is not an indexable operation"),
    ({**P, "n": {"ComparisonOperator": "IN", "AttributeValueList": [{"N": "1"}]}},
     "Attempted conditional constraint is not an indexable operation"),
    ({"id": {"ComparisonOperator": "GT", "AttributeValueList": [{"S": "p"}]}}, "Query key condition not supported"),
    ({"id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "1"}]}},
     INVALID + "Condition parameter type does not match schema type"),
    ({**P, "n": {"ComparisonOperator": "BEGINS_WITH", "AttributeValueList": [{"N": "1"}]}},
     INVALID + "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"),
    ({**P, "n": {"ComparisonOperator": "LT", "AttributeValueList": [{"N": "1"}, {"N": "2"}]}},
     INVALID + "Invalid number of argument(s) for the LT ComparisonOperator"),
    ({**P, "n": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"N": "2"}, {"N": "1"}]}},
     "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"),
    ({"id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": ""}]}},
     ("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty "
     "string value. Key: id")),
    ({"id": {"AttributeValueList": [{"S": "p"}]}},
     ("1 validation error detected: Value null at 'keyConditions.id.member.comparisonOperator' failed to satisfy "
     "constraint: Member must not be null")),
]  # fmt: skip


@pytest.mark.parametrize(("conditions", "text"), KEY_CONDITION_ERRORS)
def test_key_conditions_validation(engine, conditions, text):
    error = error_of(engine, "Query", {"TableName": "Events", "KeyConditions": conditions})
    assert (error.type_name, error.message) == ("ValidationException", text)


def test_key_conditions_on_a_hash_only_table(engine):
    two = {"id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]},
           "x": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}}  # fmt: skip
    assert message(engine, "Query", {"TableName": "Items", "KeyConditions": two}) == "Query key condition not supported"


def test_key_conditions_and_expression_parameters(engine):
    both = {"TableName": "Events", "KeyConditions": P, "KeyConditionExpression": "id = :p",
            "ExpressionAttributeValues": {":p": {"S": "p"}}}  # fmt: skip
    assert message(engine, "Query", both) == (
        MIXED + "Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}"
    )
    assert message(engine, "Query", {"TableName": "Events"}) == (
        "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request."
    )
    legacy_filter = {"TableName": "Events", "KeyConditionExpression": "id = :p", "ExpressionAttributeValues": {":p": {"S": "p"}},
                     "QueryFilter": {"kind": {"ComparisonOperator": "NOT_NULL"}}}  # fmt: skip
    assert message(engine, "Query", legacy_filter) == (
        MIXED + "Non-expression parameters: {QueryFilter} Expression parameters: {KeyConditionExpression}"
    )
    values = {"TableName": "Events", "KeyConditions": P, "ExpressionAttributeValues": {":p": {"S": "p"}}}
    assert message(engine, "Query", values) == (
        "ExpressionAttributeValues can only be specified when using expressions: "
        "FilterExpression and KeyConditionExpression are null"
    )


def test_filters_may_not_test_the_queried_key(events):
    on_key = {"n": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "1"}]}}
    assert message(events, "Query", {"TableName": "Events", "KeyConditions": P, "QueryFilter": on_key}) == (
        "QueryFilter can only contain non-primary key attributes: Primary key attribute: n"
    )
    expression = {"TableName": "Events", "KeyConditionExpression": "id = :p", "FilterExpression": "n > :one",
                  "ExpressionAttributeValues": {":p": {"S": "p"}, ":one": {"N": "1"}}}  # fmt: skip
    assert message(events, "Query", expression) == (
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: n"
    )
    # A Scan may filter on key attributes.
    scanned = call(events, "Scan", {"TableName": "Events", "ScanFilter": on_key})
    assert scanned["Count"] == 18


# ------------------------------------------------------------------------------------------ QueryFilter / ScanFilter

FILTER_ITEMS = [
    {"id": {"S": "1"}, "a": {"S": "abc"}, "b": {"N": "1"}},
    {"id": {"S": "2"}, "a": {"S": "bcd"}, "b": {"N": "2"}, "c": {"SS": ["x", "y"]}},
    {"id": {"S": "3"}, "a": {"N": "3"}, "c": {"L": [{"S": "x"}]}},
    {"id": {"S": "4"}, "b": {"N": "10"}, "c": {"S": "xyz"}, "d": {"NULL": True}},
    {"id": {"S": "5"}, "a": {"B": "YWJj"}, "c": {"NS": ["1", "2"]}},
]

# Each legacy condition beside the FilterExpression it must behave exactly like.
EQUIVALENTS = [
    ("a", "EQ", [{"S": "abc"}], "a = :v0"),
    ("a", "NE", [{"S": "abc"}], "a <> :v0"),
    ("b", "LT", [{"N": "2"}], "b < :v0"),
    ("b", "LE", [{"N": "2"}], "b <= :v0"),
    ("b", "GT", [{"N": "1"}], "b > :v0"),
    ("b", "GE", [{"N": "2"}], "b >= :v0"),
    ("a", "GT", [{"S": "b"}], "a > :v0"),
    ("c", "NOT_NULL", [], "attribute_exists(c)"),
    ("c", "NULL", [], "attribute_not_exists(c)"),
    ("c", "CONTAINS", [{"S": "x"}], "contains(c, :v0)"),
    ("c", "CONTAINS", [{"N": "2"}], "contains(c, :v0)"),
    ("c", "NOT_CONTAINS", [{"S": "x"}], "attribute_exists(c) AND NOT contains(c, :v0)"),
    ("a", "BEGINS_WITH", [{"S": "b"}], "begins_with(a, :v0)"),
    ("a", "BEGINS_WITH", [{"B": "YQ=="}], "begins_with(a, :v0)"),
    ("b", "IN", [{"N": "1"}, {"N": "10"}], "b IN (:v0, :v1)"),
    ("b", "BETWEEN", [{"N": "2"}, {"N": "10"}], "b BETWEEN :v0 AND :v1"),
    ("a", "BETWEEN", [{"S": "a"}, {"S": "b"}], "a BETWEEN :v0 AND :v1"),
]


@pytest.fixture
def filtered(engine):
    call(
        engine, "BatchWriteItem", {"RequestItems": {"Items": [{"PutRequest": {"Item": item}} for item in FILTER_ITEMS]}}
    )
    return engine


def ids(response):
    return sorted(item["id"]["S"] for item in response["Items"])


@pytest.mark.parametrize(("name", "op", "values", "expression"), EQUIVALENTS)
def test_scan_filter_matches_its_filter_expression(filtered, name, op, values, expression):
    condition = {"ComparisonOperator": op, **({"AttributeValueList": values} if values else {})}
    legacy = call(filtered, "Scan", {"TableName": "Items", "ScanFilter": {name: condition}})
    request = {"TableName": "Items", "FilterExpression": expression}
    if values:
        request["ExpressionAttributeValues"] = {f":v{i}": v for i, v in enumerate(values)}
    modern = call(filtered, "Scan", request)
    assert ids(legacy) == ids(modern)
    assert (legacy["Count"], legacy["ScannedCount"]) == (modern["Count"], modern["ScannedCount"])


def test_scan_filter_conditional_operator(filtered):
    conditions = {"a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "abc"}]},
                  "b": {"ComparisonOperator": "GT", "AttributeValueList": [{"N": "5"}]}}  # fmt: skip
    assert ids(call(filtered, "Scan", {"TableName": "Items", "ScanFilter": conditions})) == []
    assert ids(
        call(filtered, "Scan", {"TableName": "Items", "ScanFilter": conditions, "ConditionalOperator": "OR"})
    ) == ["1", "4"]


@pytest.mark.parametrize(
    ("name", "value", "equal"),
    [("c", {"L": [{"S": "x"}]}, ["3"]), ("c", {"M": {"k": {"S": "v"}}}, []), ("d", {"NULL": True}, ["4"]),
     ("a", {"BOOL": True}, [])],
)  # fmt: skip
def test_filter_eq_and_ne_take_every_type(filtered, name, value, equal):
    # "EQ is supported for all data types, including lists and maps" (Condition, API reference); another type in the
    # item does not match EQ and matches NE (as a missing attribute does, like `a <> :v`).
    everyone = {item["id"]["S"] for item in FILTER_ITEMS}
    for op, expected in (("EQ", equal), ("NE", sorted(everyone - set(equal)))):
        condition = {name: {"ComparisonOperator": op, "AttributeValueList": [value]}}
        assert ids(call(filtered, "Scan", {"TableName": "Items", "ScanFilter": condition})) == expected


FILTER_ERRORS = [
    ({"a": {"ComparisonOperator": "GE", "AttributeValueList": [{"BOOL": True}]}},
     INVALID + "ComparisonOperator GE is not valid for BOOL AttributeValue type"),
    ({"a": {"ComparisonOperator": "LT", "AttributeValueList": [{"SS": ["a"]}]}},
     INVALID + "ComparisonOperator LT is not valid for SS AttributeValue type"),
    ({"a": {"ComparisonOperator": "CONTAINS", "AttributeValueList": [{"L": []}]}},
     INVALID + "ComparisonOperator CONTAINS is not valid for L AttributeValue type"),
    ({"a": {"ComparisonOperator": "NULL", "AttributeValueList": [{"S": "a"}]}},
     INVALID + "Invalid number of argument(s) for the NULL ComparisonOperator"),
    ({"a": {"ComparisonOperator": "EQ"}}, INVALID + "Invalid number of argument(s) for the EQ ComparisonOperator"),
    ({"a": {"ComparisonOperator": "IN", "AttributeValueList": [{"S": "a"}, {"N": "1"}]}},
     INVALID + "AttributeValues inside AttributeValueList must be of same type"),
    ({"a": {"ComparisonOperator": "BETWEEN", "AttributeValueList": [{"S": "b"}, {"S": "a"}]}},
     "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"),
    ({"a": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "x"}]}},
     "The parameter cannot be converted to a numeric value: x"),
    ({"a": {"ComparisonOperator": "EQUALS", "AttributeValueList": [{"S": "a"}]}},
     (f"1 validation error detected: Value 'EQUALS' at 'scanFilter.a.member.comparisonOperator' failed to satisfy "
     f"constraint: Member must satisfy enum value set: {OPERATOR_SET}")),
]  # fmt: skip


@pytest.mark.parametrize(("conditions", "text"), FILTER_ERRORS)
def test_scan_filter_validation(engine, conditions, text):
    error = error_of(engine, "Scan", {"TableName": "Items", "ScanFilter": conditions})
    assert (error.type_name, error.message) == ("ValidationException", text)


def test_scan_filter_beside_expressions(engine):
    request = {
        "TableName": "Items",
        "ScanFilter": {"a": {"ComparisonOperator": "NOT_NULL"}},
        "ProjectionExpression": "a",
    }
    assert message(engine, "Scan", request) == (
        MIXED + "Non-expression parameters: {ScanFilter} Expression parameters: {ProjectionExpression}"
    )
    request = {"TableName": "Items", "AttributesToGet": ["a"], "FilterExpression": "a = :a",
               "ExpressionAttributeValues": {":a": {"S": "x"}}}  # fmt: skip
    assert message(engine, "Scan", request) == (
        MIXED + "Non-expression parameters: {AttributesToGet} Expression parameters: {FilterExpression}"
    )


# ------------------------------------------------------------------------------------------------ AttributesToGet


def test_attributes_to_get(filtered):
    got = call(
        filtered, "GetItem", {"TableName": "Items", "Key": {"id": {"S": "2"}}, "AttributesToGet": ["b", "c", "zz"]}
    )
    assert got == {"Item": {"b": {"N": "2"}, "c": {"SS": ["x", "y"]}}}
    nothing = call(filtered, "GetItem", {"TableName": "Items", "Key": {"id": {"S": "2"}}, "AttributesToGet": ["zz"]})
    assert nothing == {"Item": {}}
    scanned = call(filtered, "Scan", {"TableName": "Items", "AttributesToGet": ["id"], "Select": "SPECIFIC_ATTRIBUTES"})
    assert sorted(scanned["Items"], key=repr) == [{"id": {"S": str(i)}} for i in range(1, 6)]
    # A legacy name is one literal attribute name, never a document path.
    call(
        filtered,
        "PutItem",
        {"TableName": "Items", "Item": {"id": {"S": "9"}, "a.b": {"S": "dotted"}, "a": {"M": {"b": {"S": "nested"}}}}},
    )
    dotted = call(filtered, "GetItem", {"TableName": "Items", "Key": {"id": {"S": "9"}}, "AttributesToGet": ["a.b"]})
    assert dotted == {"Item": {"a.b": {"S": "dotted"}}}


SELECT_ERRORS = [
    ({"Select": "COUNT", "AttributesToGet": ["a"]}, "Cannot specify the AttributesToGet when choosing to get only the Count"),
    ({"Select": "ALL_ATTRIBUTES", "AttributesToGet": ["a"]},
     "Cannot specify the AttributesToGet when choosing to get ALL_ATTRIBUTES"),
    ({"Select": "COUNT", "ProjectionExpression": "a"},
     "Cannot specify the ProjectionExpression when choosing to get only the Count"),
    ({"Select": "ALL_ATTRIBUTES", "ProjectionExpression": "a"},
     "Cannot specify the ProjectionExpression when choosing to get ALL_ATTRIBUTES"),
    ({"Select": "SPECIFIC_ATTRIBUTES"},
     "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"),
    ({"Select": "ALL_PROJECTED_ATTRIBUTES"}, "ALL_PROJECTED_ATTRIBUTES can be used only when Scanning using an IndexName"),
    ({"Select": "SOME"},
     ("1 validation error detected: Value 'SOME' at 'select' failed to satisfy constraint: Member must satisfy enum "
     "value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]")),
    ({"AttributesToGet": ["a", "b", "a"]}, INVALID + "Duplicate value in attribute name: a"),
    ({"AttributesToGet": []},
     ("1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: "
     "Member must have length greater than or equal to 1")),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "text"), SELECT_ERRORS)
def test_select_validation(engine, extra, text):
    assert message(engine, "Scan", {"TableName": "Items", **extra}) == text


def test_select_on_query(events):
    assert message(
        events, "Query", {"TableName": "Events", "KeyConditions": P, "Select": "ALL_PROJECTED_ATTRIBUTES"}
    ) == ("ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
    specific = query(events, P, Select="SPECIFIC_ATTRIBUTES", AttributesToGet=["n"], Limit=2)
    assert specific["Items"] == [{"n": {"N": "1"}}, {"n": {"N": "2"}}]
    everything = query(events, P, Select="ALL_ATTRIBUTES", Limit=1)
    assert everything["Items"] == [{"id": {"S": "p"}, "n": {"N": "1"}, "kind": {"S": "odd"}}]


def test_get_item_attributes_to_get_beside_a_projection(engine):
    request = {"TableName": "Items", "Key": {"id": {"S": "a"}}, "AttributesToGet": ["a"], "ProjectionExpression": "a"}
    assert message(engine, "GetItem", request) == (
        MIXED + "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}"
    )


def test_key_conditions_on_a_global_secondary_index(engine):
    engine.handle("CreateTable", {
        "TableName": "Tagged",
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}, {"AttributeName": "tag", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "GlobalSecondaryIndexes": [{"IndexName": "byTag", "KeySchema": [{"AttributeName": "tag", "KeyType": "HASH"}],
                                    "Projection": {"ProjectionType": "ALL"}}],
        "BillingMode": "PAY_PER_REQUEST",
    })  # fmt: skip
    for i, tag in enumerate(("red", "red", "blue")):
        call(engine, "PutItem", {"TableName": "Tagged", "Item": {"id": {"S": f"i{i}"}, "tag": {"S": tag}}})
    red = {"tag": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "red"}]}}
    response = call(engine, "Query", {"TableName": "Tagged", "IndexName": "byTag", "KeyConditions": red,
                                      "QueryFilter": {"id": {"ComparisonOperator": "NE", "AttributeValueList": [{"S": "i0"}]}}})  # fmt: skip
    assert response["Items"] == [{"id": {"S": "i1"}, "tag": {"S": "red"}}]  # the table's key may be filtered on
    assert message(engine, "Query", {"TableName": "Tagged", "IndexName": "byTag", "KeyConditions": {
        "id": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "i0"}]}}}) == (
        "Query condition missed key schema element: tag"
    )  # fmt: skip
    assert message(engine, "Query", {"TableName": "Tagged", "IndexName": "byTag", "KeyConditions": red,
                                     "QueryFilter": {"tag": {"ComparisonOperator": "NOT_NULL"}}}) == (
        "QueryFilter can only contain non-primary key attributes: Primary key attribute: tag"
    )  # fmt: skip


def test_return_values_enum_is_printed_in_dynamodb_order(engine):
    request = {"TableName": "Items", "Key": {"id": {"S": "a"}}, "ReturnValues": "EVERYTHING"}
    assert message(engine, "UpdateItem", request) == (
        "1 validation error detected: Value 'EVERYTHING' at 'returnValues' failed to satisfy constraint: "
        "Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]"
    )
