"""Legacy conditions (Expected, ConditionalOperator, QueryFilter, ScanFilter): what DynamoDB refuses at request time
and what it only evaluates against the item."""

import pytest

from conformance.tables import error_of

INVALID = "One or more parameter values were invalid: "
WITHOUT_CONDITIONS = "ConditionalOperator cannot be used without Filter or Expected"
ONE_CONDITION = "ConditionalOperator can only be used when Filter or Expected has two or more elements"


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("Legacy")
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    items = [
        {"pk": {"S": "p"}, "sk": {"N": "1"}, "v": {"L": [{"S": "a"}, {"N": "1"}]}},
        {"pk": {"S": "p"}, "sk": {"N": "2"}, "v": {"M": {"a": {"BOOL": True}}}},
        {"pk": {"S": "p"}, "sk": {"N": "3"}, "v": {"BOOL": True}},
        {"pk": {"S": "p"}, "sk": {"N": "4"}, "v": {"NULL": True}},
        {"pk": {"S": "p"}, "sk": {"N": "5"}, "v": {"SS": ["x", "y"]}},
        {"pk": {"S": "p"}, "sk": {"N": "6"}, "v": {"S": "text"}},
    ]
    for item in items:
        dynamodb.put_item(TableName=name, Item=item)
    return name


def keys(response):
    return sorted(int(item["sk"]["N"]) for item in response["Items"])


# Expected operand types (R4): LE/LT/GE/GT/BETWEEN, CONTAINS/NOT_CONTAINS and IN take scalars only, BEGINS_WITH a
# string or binary; a wrong type in the request is refused before the item is read.
BAD_EXPECTED = [
    ("LT", [{"SS": ["a"]}]),
    ("GE", [{"BOOL": True}]),
    ("BETWEEN", [{"L": []}, {"L": []}]),
    ("CONTAINS", [{"SS": ["a"]}]),
    ("NOT_CONTAINS", [{"L": [{"S": "a"}]}]),
    ("BEGINS_WITH", [{"N": "1"}]),
    ("IN", [{"M": {}}]),
]


@pytest.mark.parametrize(("operator", "values"), BAD_EXPECTED, ids=[op for op, _ in BAD_EXPECTED])
def test_expected_operand_types_are_checked_at_request_time(dynamodb, table, operator, values):
    # Why: ExpectedAttributeValue's operators each take only the types the API reference lists for them.
    key = {"pk": {"S": "p"}, "sk": {"N": "6"}}
    before = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    code, message = error_of(
        dynamodb.put_item,
        TableName=table,
        Item={**key, "w": {"S": "written"}},
        Expected={"v": {"ComparisonOperator": operator, "AttributeValueList": values}},
    )
    kind = next(iter(values[0]))
    assert (code, message) == (
        "ValidationException",
        f"{INVALID}ComparisonOperator {operator} is not valid for {kind} AttributeValue type",
    )
    assert dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"] == before


def test_a_wrong_type_in_the_item_only_fails_the_condition(dynamodb, table):
    # Why: a legacy condition whose attribute has another type than the request's value does not match.
    key = {"pk": {"S": "p"}, "sk": {"N": "6"}}
    code, _ = error_of(
        dynamodb.put_item,
        TableName=table,
        Item={**key, "w": {"S": "written"}},
        Expected={"v": {"ComparisonOperator": "LT", "AttributeValueList": [{"N": "5"}]}},
    )
    assert code == "ConditionalCheckFailedException"


@pytest.mark.parametrize(
    "request_parameters",
    [
        {},
        {"Expected": {}},
        {"AttributeUpdates": {"w": {"Action": "PUT", "Value": {"S": "x"}}}},
    ],
    ids=["alone", "empty-expected", "with-attribute-updates"],
)
def test_conditional_operator_needs_expected(dynamodb, table, request_parameters):
    # Why: ConditionalOperator joins the conditions of Expected; without any there is nothing to join.
    code, message = error_of(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "p"}, "sk": {"N": "9"}},
        ConditionalOperator="OR",
        **request_parameters,
    )
    assert (code, message) == ("ValidationException", WITHOUT_CONDITIONS)
    assert "Item" not in dynamodb.get_item(
        TableName=table, Key={"pk": {"S": "p"}, "sk": {"N": "9"}}, ConsistentRead=True
    )


def test_conditional_operator_needs_two_conditions(dynamodb, table):
    # Why: ConditionalOperator with one condition in Expected, QueryFilter or ScanFilter is refused.
    one = {"v": {"ComparisonOperator": "NOT_NULL"}}
    cases = [
        (dynamodb.put_item, {"Item": {"pk": {"S": "p"}, "sk": {"N": "9"}}, "Expected": one}),
        (dynamodb.delete_item, {"Key": {"pk": {"S": "p"}, "sk": {"N": "1"}}, "Expected": one}),
        (dynamodb.scan, {"ScanFilter": one}),
        (
            dynamodb.query,
            {
                "KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}},
                "QueryFilter": one,
            },
        ),
    ]
    for call, parameters in cases:
        assert error_of(call, TableName=table, ConditionalOperator="AND", **parameters) == (
            "ValidationException",
            ONE_CONDITION,
        )
    assert len(dynamodb.scan(TableName=table, ConsistentRead=True)["Items"]) == 6


def test_conditional_operator_without_a_filter_is_refused_on_reads(dynamodb, table):
    # Why: on Scan and Query ConditionalOperator joins ScanFilter/QueryFilter conditions, and is checked before the
    # key condition is looked for.
    assert error_of(dynamodb.scan, TableName=table, ConditionalOperator="OR") == (
        "ValidationException",
        WITHOUT_CONDITIONS,
    )
    assert error_of(dynamodb.scan, TableName=table, ConditionalOperator="OR", ScanFilter={}) == (
        "ValidationException",
        WITHOUT_CONDITIONS,
    )
    assert error_of(dynamodb.query, TableName=table, ConditionalOperator="OR") == (
        "ValidationException",
        WITHOUT_CONDITIONS,
    )


def test_conditional_operator_is_a_non_expression_parameter(dynamodb, table):
    # Why: DynamoDB refuses legacy parameters, ConditionalOperator among them, beside expression parameters.
    code, message = error_of(
        dynamodb.put_item,
        TableName=table,
        Item={"pk": {"S": "p"}, "sk": {"N": "9"}},
        ConditionalOperator="OR",
        ConditionExpression="attribute_not_exists(pk)",
    )
    assert code == "ValidationException"
    assert message == (
        "Can not use both expression and non-expression parameters in the same request: "
        "Non-expression parameters: {ConditionalOperator} Expression parameters: {ConditionExpression}"
    )


def test_conditional_operator_with_two_expected_conditions(dynamodb, table):
    key = {"pk": {"S": "p"}, "sk": {"N": "6"}}
    expected = {"v": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "other"}]}, "missing": {"Exists": False}}
    dynamodb.update_item(
        TableName=table,
        Key=key,
        AttributeUpdates={"w": {"Action": "PUT", "Value": {"S": "ok"}}},
        Expected=expected,
        ConditionalOperator="OR",
    )
    assert dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["w"] == {"S": "ok"}
    code, _ = error_of(
        dynamodb.update_item,
        TableName=table,
        Key=key,
        Expected=expected,
        ConditionalOperator="AND",
        AttributeUpdates={"w": {"Action": "PUT", "Value": {"S": "no"}}},
    )
    assert code == "ConditionalCheckFailedException"
    dynamodb.update_item(TableName=table, Key=key, AttributeUpdates={"w": {"Action": "DELETE"}})


# R8: QueryFilter/ScanFilter EQ and NE accept every type ("EQ is supported for all data types, including lists and
# maps", Condition in the API reference).
EVERY_TYPE = [
    ({"L": [{"S": "a"}, {"N": "1"}]}, 1),
    ({"M": {"a": {"BOOL": True}}}, 2),
    ({"BOOL": True}, 3),
    ({"NULL": True}, 4),
    ({"SS": ["y", "x"]}, 5),
    ({"S": "text"}, 6),
]


@pytest.mark.parametrize(("value", "match"), EVERY_TYPE, ids=[next(iter(v)) for v, _ in EVERY_TYPE])
def test_filter_eq_and_ne_take_every_type(dynamodb, table, value, match):
    # Why: EQ matches only an attribute of the same type and value; NE matches every other item that has the attribute.
    for operation, extra in (
        (dynamodb.scan, {}),
        (dynamodb.query, {"KeyConditions": {"pk": {"ComparisonOperator": "EQ", "AttributeValueList": [{"S": "p"}]}}}),
    ):
        filter_name = "ScanFilter" if operation == dynamodb.scan else "QueryFilter"
        eq = operation(
            TableName=table,
            ConsistentRead=True,
            **extra,
            **{filter_name: {"v": {"ComparisonOperator": "EQ", "AttributeValueList": [value]}}},
        )
        ne = operation(
            TableName=table,
            ConsistentRead=True,
            **extra,
            **{filter_name: {"v": {"ComparisonOperator": "NE", "AttributeValueList": [value]}}},
        )
        assert keys(eq) == [match]
        assert keys(ne) == sorted({1, 2, 3, 4, 5, 6} - {match})
