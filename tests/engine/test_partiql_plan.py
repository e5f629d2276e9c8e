"""The PartiQL planner (engine/partiql/plan.py) on an engine: which item operations a statement becomes, and the
statement run inline (run.py) on both stores."""

from __future__ import annotations

import pytest

from engine_calls import call, error_of
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.partiql import parse_statement
from globaltables.engine.partiql.plan import plan_select, plan_write
from globaltables.runtime.clock import ManualClock
from globaltables.runtime.rng import Rng


@pytest.fixture
def engine(make_store):
    engine = Engine(make_store(), ManualClock(wall_time=1_700_000_000.0))
    engine.handle(
        "CreateTable",
        {
            "TableName": "Songs",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "owner", "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by-owner",
                    "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    for pk in ("a", "b"):
        for sk in range(4):
            engine.handle("PutItem", {"TableName": "Songs", "Item": {"pk": {"S": pk}, "sk": {"N": str(sk)},
                                                                     "owner": {"S": f"o{sk % 2}"}}})  # fmt: skip
    return engine


def plan(engine, text, consistent=False):
    return plan_select(engine, parse_statement(text), consistent)


@pytest.mark.parametrize(
    ("where", "operation", "partitions"),
    [
        ("pk = 'a'", "Query", 1),
        ("'a' = pk AND sk > 1", "Query", 1),
        ("pk IN ['a', 'b', 'a']", "Query", 2),
        ("pk = 'a' OR pk = 'b'", "Query", 2),
        ("x = 1 AND (pk = 'a' OR pk = 'b')", "Query", 2),
        ("pk > 'a'", "Scan", 1),
        ("pk = 'a' OR x = 1", "Scan", 1),
        ("NOT pk = 'a'", "Scan", 1),
        ("pk <> 'a'", "Scan", 1),
    ],
)
def test_a_scan_only_when_no_partition_is_pinned(engine, where, operation, partitions):
    # Why: "a full table scan if an equality or IN condition with a partition key is not provided in the WHERE clause".
    read = plan(engine, f"SELECT * FROM Songs WHERE {where}")
    assert (read.operation, len(read.requests)) == (operation, partitions)


def test_the_sort_condition_goes_to_the_key_condition_and_the_rest_to_filters(engine):
    read = plan(engine, "SELECT * FROM Songs WHERE pk = 'a' AND 2 > sk AND sk <> 0 AND owner = 'o1'")
    (request,) = read.requests
    assert request["KeyConditionExpression"] == "#n0 = :v0 AND #n1 < :v1"
    assert request["FilterExpression"] == "#n2 = :v2"
    assert read.post_filter is not None  # `sk <> 0`: a Query's filter cannot hold a key attribute


def test_an_index_is_pinned_by_its_own_key_and_refuses_consistent_reads(engine):
    read = plan(engine, 'SELECT * FROM Songs."by-owner" WHERE owner = \'o1\'')
    assert read.operation == "Query" and read.requests[0]["IndexName"] == "by-owner"
    assert plan(engine, 'SELECT * FROM Songs."by-owner" WHERE pk = \'a\'').operation == "Scan"
    with pytest.raises(Exception) as caught:
        plan(engine, 'SELECT * FROM Songs."by-owner" WHERE owner = \'o1\'', consistent=True)
    assert caught.value.message == "Strongly consistent read is not supported on Global Secondary Indexes"


def test_writes_become_conditional_item_writes(engine):
    insert = plan_write(engine, parse_statement("INSERT INTO Songs VALUE {'pk': 'c', 'sk': 1}"))
    assert insert.operation == "PutItem" and insert.request["ConditionExpression"] == "attribute_not_exists(#n0)"
    update = plan_write(engine, parse_statement("UPDATE Songs SET v = 1 WHERE sk = 1 AND pk = 'a' AND v = 0"))
    assert update.operation == "UpdateItem"
    assert update.request["Key"] == {"pk": {"S": "a"}, "sk": {"N": "1"}}
    assert update.request["ConditionExpression"] == "attribute_exists(#n1) AND #n0 = :v1"
    delete = plan_write(engine, parse_statement("DELETE FROM Songs WHERE pk = 'a' AND sk = 1 AND (v = 0 OR w = 1)"))
    assert delete.request["ConditionExpression"] == "attribute_not_exists(#n0) OR (#n1 = :v0 OR #n2 = :v1)"


def test_limit_counts_items_read_across_partitions_and_next_token_resumes(engine):
    statement = "SELECT pk, sk FROM Songs WHERE pk IN ['b', 'a'] AND sk >= 2"
    first = call(engine, "ExecuteStatement", {"Statement": statement, "Limit": 3})
    assert [(i["pk"]["S"], i["sk"]["N"]) for i in first["Items"]] == [("b", "2"), ("b", "3"), ("a", "2")]
    rest = call(engine, "ExecuteStatement", {"Statement": statement, "Limit": 3, "NextToken": first["NextToken"]})
    assert [(i["pk"]["S"], i["sk"]["N"]) for i in rest["Items"]] == [("a", "3")]
    assert "NextToken" not in rest


def test_a_post_filtered_page_still_reports_where_it_stopped(engine):
    # The post-filter drops items after the read: Limit counts them read, so a page may hold fewer than Limit.
    statement = "SELECT sk FROM Songs WHERE pk = 'a' AND sk > 0 AND sk <> 2"
    first = call(engine, "ExecuteStatement", {"Statement": statement, "Limit": 2})
    assert first["Items"] == [{"sk": {"N": "1"}}] and "NextToken" in first
    rest = call(engine, "ExecuteStatement", {"Statement": statement, "NextToken": first["NextToken"]})
    assert rest["Items"] == [{"sk": {"N": "3"}}]


def test_refused_writes_change_nothing(engine):
    before = call(engine, "Scan", {"TableName": "Songs"})["Items"]
    assert error_of(engine, "ExecuteStatement", {"Statement": "INSERT INTO Songs VALUE {'pk': 'a', 'sk': 1}"}).type_name == (
        "DuplicateItemException"
    )
    assert error_of(engine, "ExecuteStatement", {"Statement": "UPDATE Songs SET v = 1 WHERE pk = 'z' AND sk = 1"}).type_name == (
        "ConditionalCheckFailedException"
    )
    batch = call(engine, "BatchExecuteStatement", {"Statements": [
        {"Statement": "UPDATE Songs SET v = 1 WHERE pk = 'a'"}, {"Statement": "INSERT INTO Nope VALUE {'pk': 'a'}"}]})  # fmt: skip
    assert [r["Error"]["Code"] for r in batch["Responses"]] == ["ValidationError", "ResourceNotFound"]
    assert call(engine, "Scan", {"TableName": "Songs"})["Items"] == before


def test_order_by_orders_partitions_by_the_partition_key_and_sort_keys_within(engine):
    # Why: with several partitions pinned, ORDER BY must name the partition key; its direction orders the Queries.
    statement = "SELECT pk, sk FROM Songs WHERE pk IN ['a', 'b'] AND sk < 2 ORDER BY pk DESC, sk DESC"
    items = call(engine, "ExecuteStatement", {"Statement": statement})["Items"]
    assert [(i["pk"]["S"], i["sk"]["N"]) for i in items] == [("b", "1"), ("b", "0"), ("a", "1"), ("a", "0")]
    refused = error_of(engine, "ExecuteStatement", {"Statement": "SELECT * FROM Songs WHERE pk IN ['a', 'b'] ORDER BY sk"})
    assert refused.message == (
        "Must have hash key in ORDER BY clause when more than one hash key condition specified in WHERE clause."
    )
    refused = error_of(engine, "ExecuteStatement", {"Statement": "SELECT * FROM Songs WHERE pk = 'a' ORDER BY owner"})
    assert refused.message == "Variable reference owner in ORDER BY clause must be part of the primary key"
    refused = error_of(engine, "ExecuteStatement", {"Statement": "SELECT * FROM Songs WHERE sk = 1 ORDER BY sk"})
    assert refused.message == (
        "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause."
    )


SOUP = [
    "SELECT", "INSERT", "INTO", "UPDATE", "DELETE", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "IS", "MISSING", "NULL",
    "BETWEEN", "SET", "REMOVE", "VALUE", "RETURNING", "ALL", "OLD", "NEW", "MODIFIED", "EXISTS", "ORDER", "BY", "DESC",
    "Songs", '"Songs"', '"by-owner"', "pk", "sk", "owner", "a", "b", "'a'", "'x''y'", "1", "-2", "3.5e2", "?", "*",
    "=", "<>", "!=", "<", ">=", "+", "-", ",", ".", "(", ")", "[", "]", "{", "}", ":", "<<", ">>", ";", "'", '"',
    "size", "begins_with", "contains", "attribute_type", "list_append", "set_add", "set_delete", "TRUE", "`", "\\",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(150))
def test_token_soup_is_answered_with_dynamodb_errors_never_a_crash(engine, seed):
    # Why: a malformed statement gets a DynamoDB-shaped error (any other exception would be a 500), and a read
    # changes nothing.
    rng = Rng(f"partiql-soup-{seed}")
    starts = ["SELECT * FROM Songs WHERE", "UPDATE Songs SET", "DELETE FROM Songs WHERE", "INSERT INTO Songs VALUE", ""]
    text = " ".join([rng.choice(starts)] + [rng.choice(SOUP) for _ in range(rng.randrange(1, 12))])
    parameters = [rng.choice(({"S": "a"}, {"N": "1"}, {"L": [{"S": "a"}]})) for _ in range(text.count("?"))]
    request = {"Statement": text, **({"Parameters": parameters} if parameters else {})}
    before = call(engine, "Scan", {"TableName": "Songs"})["Items"]
    operation = rng.choice(("ExecuteStatement", "BatchExecuteStatement", "ExecuteTransaction"))
    if operation == "BatchExecuteStatement":
        request = {"Statements": [request]}
    elif operation == "ExecuteTransaction":
        request = {"TransactStatements": [request]}
    try:
        engine.handle(operation, request)
    except DynamoError:
        pass
    if text.startswith("SELECT"):
        assert call(engine, "Scan", {"TableName": "Songs"})["Items"] == before, text  # a read never writes
