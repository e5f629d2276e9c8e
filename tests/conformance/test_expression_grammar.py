"""The expression grammar's edges: attribute_type's operands, how names may start, list-index range, the
300-operator limit, and parentheses around an arithmetic pair in SET."""

import pytest

from conformance.tables import create_pk_table, error_of


@pytest.fixture(scope="module")
def table(dynamodb, unique_table_name):
    name = unique_table_name("Grammar")
    create_pk_table(dynamodb, name)
    dynamodb.put_item(
        TableName=name, Item={"pk": {"S": "a"}, "n": {"N": "10"}, "l": {"L": [{"S": "x"}]}, "s": {"S": "str"}}
    )
    return name


def condition_error(dynamodb, table, expression, values=None, kind="ConditionExpression"):
    """The error of a conditional write on a key that holds no item (nothing is evaluated against an item)."""
    parameters = {"ExpressionAttributeValues": values} if values else {}
    if kind == "ConditionExpression":
        return error_of(
            dynamodb.put_item,
            TableName=table,
            Item={"pk": {"S": "never"}},
            ConditionExpression=expression,
            **parameters,
        )
    return error_of(dynamodb.scan, TableName=table, FilterExpression=expression, **parameters)


ATTRIBUTE_TYPE_PATH = (
    "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: "
)


@pytest.mark.parametrize("kind", ["ConditionExpression", "FilterExpression"])
def test_attribute_type_name_must_be_a_value(dynamodb, table, kind):
    # Why: attribute_type(path, type) takes the type as an expression attribute value; a path there is refused from
    # the text alone, before any item is read.
    code, message = condition_error(dynamodb, table, "attribute_type(n, s)", kind=kind)
    assert code == "ValidationException"
    assert message.startswith(f"Invalid {kind}: {ATTRIBUTE_TYPE_PATH}")
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "never"}}, ConsistentRead=True)


def test_attribute_type_of_a_value(dynamodb, table):
    # Why: attribute_type's first operand may be a value as well as a path.
    found = dynamodb.scan(
        TableName=table,
        FilterExpression="attribute_type(:v, :t)",
        ExpressionAttributeValues={":v": {"N": "1"}, ":t": {"S": "N"}},
    )
    assert found["Count"] == 1
    found = dynamodb.scan(
        TableName=table,
        FilterExpression="attribute_type(:v, :t)",
        ExpressionAttributeValues={":v": {"N": "1"}, ":t": {"S": "S"}},
    )
    assert found["Count"] == 0
    found = dynamodb.scan(
        TableName=table, FilterExpression="attribute_type(n, :t)", ExpressionAttributeValues={":t": {"S": "N"}}
    )
    assert found["Count"] == 1


@pytest.mark.parametrize(
    ("expression", "token"), [("_x = :v", "_"), ("1x = :v", "1"), ("a-b = :v", "-"), ("_f(n)", "_")]
)
def test_unquoted_names_start_with_a_letter(dynamodb, table, expression, token):
    # Why: an unquoted attribute or function name starts with a letter, then letters, digits and '_'.
    code, message = condition_error(dynamodb, table, expression, {":v": {"N": "1"}} if ":v" in expression else None)
    assert code == "ValidationException"
    assert message.startswith(f'Invalid ConditionExpression: Syntax error; token: "{token}"')


def test_an_unknown_function_is_not_a_syntax_error(dynamodb, table):
    assert condition_error(dynamodb, table, "f(n)") == (
        "ValidationException",
        "Invalid ConditionExpression: Invalid function name; function: f",
    )


def test_list_index_out_of_range(dynamodb, table):
    # Why: a list index must fit the allowable (32-bit) range; one that fits but is past the end just finds nothing.
    code, message = condition_error(dynamodb, table, "l[99999999999999] = :v", {":v": {"S": "x"}}, "FilterExpression")
    assert (code, message) == (
        "ValidationException",
        "Invalid FilterExpression: List index is not within the allowable range; index: [99999999999999]",
    )
    found = dynamodb.scan(TableName=table, FilterExpression="attribute_exists(l[999])")
    assert found["Count"] == 0
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}}, ProjectionExpression="l[999]")["Item"]
    assert item == {}


def nested_or(levels):
    text = "n = :v"
    for _ in range(levels):
        text = f"n = :v or ({text})"
    return text


def test_expressions_nest_as_deep_as_300_operators_allow(dynamodb, table):
    # Why: an expression may hold up to 300 operators within 4 KB; nesting depth is not limited below that.
    text = nested_or(149)  # 299 operators
    assert len(text) < 4096
    found = dynamodb.scan(TableName=table, FilterExpression=text, ExpressionAttributeValues={":v": {"N": "10"}})
    assert found["Count"] == 1


def test_more_than_300_operators(dynamodb, table):
    # Why: DynamoDB refuses an expression with more than 300 operators, counting them in its message.
    text = " or ".join(f"n = :v{i % 10}" for i in range(151))  # 151 comparisons and 150 ORs
    values = {f":v{i}": {"N": str(i)} for i in range(10)}
    assert condition_error(dynamodb, table, text, values) == (
        "ValidationException",
        "Invalid ConditionExpression: The expression contains too many operators; operator count: 301",
    )
    text = " or ".join(f"n = :v{i % 10}" for i in range(150))  # 299 operators: accepted
    dynamodb.scan(TableName=table, FilterExpression=text, ExpressionAttributeValues=values)


# R20: parentheses around an arithmetic pair in SET.
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("SET n = (n - :v)", "7"),
        ("SET n = (if_not_exists(n, :z) - :v)", "7"),
        ("SET c = (if_not_exists(c, :z) - :v)", "-3"),
    ],
)
def test_parenthesised_arithmetic_pair_in_set(dynamodb, table, expression, expected):
    # Why: DynamoDB's parser accepts SET c = (c - :v) and means the same as without the parentheses (the form
    # ElectroDB's subtract() sends).
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "arith"}, "n": {"N": "10"}})
    response = dynamodb.update_item(
        TableName=table,
        Key={"pk": {"S": "arith"}},
        UpdateExpression=expression,
        ExpressionAttributeValues={":v": {"N": "3"}, **({":z": {"N": "0"}} if ":z" in expression else {})},
        ReturnValues="UPDATED_NEW",
    )
    assert next(iter(response["Attributes"].values())) == {"N": expected}


def test_only_one_arithmetic_pair(dynamodb, table):
    code, message = error_of(
        dynamodb.update_item,
        TableName=table,
        Key={"pk": {"S": "a"}},
        UpdateExpression="SET n = (n - :v) - :v",
        ExpressionAttributeValues={":v": {"N": "1"}},
    )
    assert code == "ValidationException" and message.startswith("Invalid UpdateExpression: Syntax error;")
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}})["Item"]["n"] == {"N": "10"}
