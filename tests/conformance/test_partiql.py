"""PartiQL (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction) through boto3 against a real region process.

Behaviour as AWS documents it: the Developer Guide's "PartiQL select / insert / update / delete statements for
DynamoDB", "Using the EXISTS function", "Running batch operations" and "Performing transactions with PartiQL for
DynamoDB", and the API Reference of the three operations and BatchStatementError. Every refused statement is also
checked for having changed nothing.
"""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from conformance.aws_cli import aws_cli

NOT_WELL_FORMED = "Statement wasn't well formed, can't be processed: "
INCOMPLETE_KEY = "Where clause does not contain a mandatory equality on all key attributes"
CCF_MESSAGE = "The conditional request failed"


def create(client, name, *, sort=True, gsi=False, stream=False):
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    if sort:
        attributes.append({"AttributeName": "sk", "AttributeType": "N"})
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
    extra = {}
    if gsi:
        attributes.append({"AttributeName": "owner", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "by-owner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    if stream:
        extra["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    client.create_table(
        TableName=name, AttributeDefinitions=attributes, KeySchema=schema, BillingMode="PAY_PER_REQUEST", **extra
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})
    return name


@pytest.fixture(scope="module")
def music(dynamodb, unique_table_name):
    return create(dynamodb, unique_table_name("Music"), gsi=True)


@pytest.fixture(scope="module")
def flat(dynamodb, unique_table_name):
    return create(dynamodb, unique_table_name("Flat"), sort=False)


def fresh(prefix="p"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(client, statement, **kwargs):
    return client.execute_statement(Statement=statement, **kwargs)


def refusal(call, **kwargs):
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


def get(client, table, pk, sk=None):
    key = {"pk": {"S": pk}} if sk is None else {"pk": {"S": pk}, "sk": {"N": str(sk)}}
    return client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")


def put(client, table, pk, sk, **attributes):
    """PutItem of the item keyed (pk, sk) holding `attributes` (AttributeValues by name)."""
    client.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"N": str(sk)}, **attributes})


def put_rows(client, table, pk, count, **extra):
    for sk in range(count):
        put(client, table, pk, sk, **extra)


# ------------------------------------------------------------------------------------------------------- INSERT


def test_insert_stores_every_literal_type(dynamodb, music):
    # Why: INSERT's VALUE tuple must map strings, numbers, booleans, NULL, maps, lists and <<sets>> to DynamoDB types.
    pk = fresh()
    response = run(
        dynamodb,
        f"INSERT INTO \"{music}\" VALUE {{'pk': '{pk}', 'sk': 1, 'title': 'It''s PartiQL', 'plays': -12.50, "
        "'live': true, 'notes': null, 'tags': <<'a', 'b'>>, 'scores': <<1, 2>>, "
        "'detail': {'grammys': [2020, 2018], 'label': 'Acme'}}",
    )
    assert response["Items"] == []
    assert get(dynamodb, music, pk, 1) == {
        "pk": {"S": pk},
        "sk": {"N": "1"},
        "title": {"S": "It's PartiQL"},
        "plays": {"N": "-12.5"},
        "live": {"BOOL": True},
        "notes": {"NULL": True},
        "tags": {"SS": ["a", "b"]},
        "scores": {"NS": ["1", "2"]},
        "detail": {"M": {"grammys": {"L": [{"N": "2020"}, {"N": "2018"}]}, "label": {"S": "Acme"}}},
    }


def test_insert_takes_positional_parameters(dynamodb, music):
    # Why: `?` placeholders take the request's Parameters in order, binary values included.
    pk = fresh()
    run(
        dynamodb,
        f"INSERT INTO \"{music}\" VALUE {{'pk': ?, 'sk': ?, 'blob': ?}}",
        Parameters=[{"S": pk}, {"N": "7"}, {"B": b"\x00\x01"}],
    )
    assert get(dynamodb, music, pk, 7)["blob"] == {"B": b"\x00\x01"}


def test_insert_of_an_existing_key_is_duplicate_item_and_changes_nothing(dynamodb, music):
    # Why: "If the DynamoDB table already has an item with the same primary key ... DuplicateItemException".
    pk = fresh()
    run(dynamodb, f"INSERT INTO \"{music}\" VALUE {{'pk': '{pk}', 'sk': 1, 'v': 'first'}}")
    error = refusal(run, client=dynamodb, statement=f"INSERT INTO \"{music}\" VALUE {{'pk': '{pk}', 'sk': 1, 'v': 'x'}}")
    assert error["Error"] == {"Code": "DuplicateItemException", "Message": "Duplicate primary key exists in table"}
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert get(dynamodb, music, pk, 1)["v"] == {"S": "first"}


def test_insert_on_conflict_do_nothing_leaves_the_existing_item(dynamodb, music):
    # Why: with ON CONFLICT DO NOTHING an existing key is success and the stored item stays as it was.
    pk = fresh()
    statement = f"INSERT INTO \"{music}\" VALUE {{'pk': '{pk}', 'sk': 1, 'v': ?}} ON CONFLICT DO NOTHING"
    assert run(dynamodb, statement, Parameters=[{"S": "first"}])["Items"] == []
    assert run(dynamodb, statement, Parameters=[{"S": "second"}])["Items"] == []
    assert get(dynamodb, music, pk, 1)["v"] == {"S": "first"}


# ------------------------------------------------------------------------------------------------------- SELECT


def test_select_with_key_conditions_and_filters(dynamodb, music):
    # Why: WHERE mixes a partition equality, sort-key conditions and filters on other attributes.
    pk = fresh()
    for sk in range(6):
        dynamodb.put_item(
            TableName=music,
            Item={"pk": {"S": pk}, "sk": {"N": str(sk)}, "name": {"S": f"song-{sk}"}, "odd": {"BOOL": sk % 2 == 1}},
        )
    table = f'"{music}"'

    def sks(statement, **kwargs):
        return [int(item["sk"]["N"]) for item in run(dynamodb, statement, **kwargs)["Items"]]

    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND sk > 3") == [4, 5]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND sk BETWEEN 1 AND 3") == [1, 2, 3]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND sk >= 1 AND sk < 4 AND odd = true") == [1, 3]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND begins_with(name, 'song-2')") == [2]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND name IN ['song-0', 'song-5']") == [0, 5]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' AND NOT (odd = true OR sk = 0)") == [2, 4]
    assert sks(f"SELECT * FROM {table} WHERE pk = '{pk}' ORDER BY sk DESC") == [5, 4, 3, 2, 1, 0]
    assert sks(f"SELECT * FROM {table} WHERE pk = ? AND sk = ?", Parameters=[{"S": pk}, {"N": "2"}]) == [2]


def test_select_functions_missing_type_size_contains(dynamodb, music):
    # Why: the documented PartiQL functions and IS MISSING work in WHERE as the item API's functions do.
    pk = fresh()
    put(dynamodb, music, pk, 1, tags={"SS": ["rock", "live"]})
    put(dynamodb, music, pk, 2, tags={"S": "rock"})
    put(dynamodb, music, pk, 3)
    base = f"SELECT sk FROM \"{music}\" WHERE pk = '{pk}' AND "

    def sks(condition):
        return [int(item["sk"]["N"]) for item in run(dynamodb, base + condition)["Items"]]

    assert sks("tags IS MISSING") == [3]
    assert sks("tags IS NOT MISSING") == [1, 2]
    assert sks("attribute_type(tags, 'SS')") == [1]
    assert sks("ATTRIBUTE_TYPE(tags, 'S')") == [2]
    assert sks("CONTAINS(tags, 'live')") == [1]
    assert sks("size(tags) = 2") == [1]
    assert sks("size(tags) BETWEEN 3 AND 4") == [2]


def test_select_projects_top_level_and_nested_paths(dynamodb, music):
    # Why: a projection list of document paths answers each value under the path's last attribute name.
    pk = fresh()
    put(
        dynamodb,
        music,
        pk,
        1,
        title={"S": "t"},
        detail={"M": {"label": {"S": "Acme"}, "years": {"L": [{"N": "2020"}, {"N": "2018"}]}}},
    )
    items = run(dynamodb, f"SELECT title, detail.label, detail.years[1], nothing FROM \"{music}\" WHERE pk = '{pk}'")
    assert items["Items"] == [{"title": {"S": "t"}, "label": {"S": "Acme"}, "years[1]": {"N": "2018"}}]


def test_select_from_an_index(dynamodb, music):
    # Why: SELECT ... FROM "table"."index" reads the index, pinned by the index's own partition key.
    owner = fresh("owner")
    pks = [fresh(), fresh()]
    for pk in pks:
        put(dynamodb, music, pk, 1, owner={"S": owner})
    items = run(dynamodb, f"SELECT pk FROM \"{music}\".\"by-owner\" WHERE owner = '{owner}'")["Items"]
    assert sorted(item["pk"]["S"] for item in items) == sorted(pks)
    error = refusal(
        run, client=dynamodb, statement=f"SELECT * FROM \"{music}\".\"by-owner\" WHERE owner = 'x'", ConsistentRead=True
    )
    assert error["Error"]["Message"] == "Strongly consistent read is not supported on Global Secondary Indexes"
    error = refusal(run, client=dynamodb, statement=f"SELECT * FROM \"{music}\".\"nope\" WHERE owner = 'x'")
    assert error["Error"]["Message"] == "The table does not have the specified index: nope"


def test_only_a_where_clause_without_a_pinned_partition_scans(dynamodb, unique_table_name):
    # Why: "a full table scan if an equality or IN condition with a partition key is not provided": capacity shows
    # whether the statement read one item collection (a Query) or the whole table (a Scan).
    table = create(dynamodb, unique_table_name("Scanned"))
    filler = "x" * 4000  # each item just under 4 KB: an eventually consistent read of one costs 0.5 units
    for i in range(8):
        dynamodb.put_item(TableName=table, Item={"pk": {"S": f"p{i}"}, "sk": {"N": "1"}, "f": {"S": filler}})

    def units(where):
        response = run(dynamodb, f'SELECT pk FROM "{table}" WHERE {where}', ReturnConsumedCapacity="TOTAL")
        return response["ConsumedCapacity"]["CapacityUnits"], len(response["Items"])

    assert units("pk = 'p3'") == (0.5, 1)
    consistent = run(dynamodb, f"SELECT pk FROM \"{table}\" WHERE pk = 'p3'", ConsistentRead=True,
                     ReturnConsumedCapacity="TOTAL")  # fmt: skip
    assert consistent["ConsumedCapacity"]["CapacityUnits"] == 1.0  # a strongly consistent read costs a whole unit
    assert units("pk = 'p3' AND f = 'nope'") == (0.5, 0)
    assert units("pk IN ['p1', 'p2']") == (1.0, 2)
    assert units("pk = 'p1' OR pk = 'p2'") == (1.0, 2)
    assert units("pk > 'p5'") == (4.0, 2)  # 8 items of ~4 KB read: a scan
    assert units("pk = 'p1' OR f = 'nope'") == (4.0, 1)


def test_an_in_list_reads_at_most_fifty_partitions(dynamodb, music):
    # Why: IN takes "at max 50 hash attribute values"; more is refused before anything is read.
    values = ", ".join(f"'v{i}'" for i in range(51))
    error = refusal(run, client=dynamodb, statement=f"SELECT * FROM \"{music}\" WHERE pk IN [{values}]")
    assert error["Error"]["Message"] == "Too many decomposed read operations for a given query."
    fifty = ", ".join(f"'v{i}'" for i in range(50))
    assert run(dynamodb, f"SELECT * FROM \"{music}\" WHERE pk IN [{fifty}]")["Items"] == []


def test_limit_and_next_token_page_through_every_item(dynamodb, music):
    # Why: Limit bounds the items read per call; NextToken resumes where the previous page stopped.
    pk = fresh()
    put_rows(dynamodb, music, pk, 7)
    statement = f"SELECT sk FROM \"{music}\" WHERE pk = '{pk}'"
    pages, token = [], None
    while True:
        response = run(dynamodb, statement, Limit=3, **({"NextToken": token} if token else {}))
        pages.append([int(item["sk"]["N"]) for item in response["Items"]])
        token = response.get("NextToken")
        if token is None:
            break
    assert [sk for page in pages for sk in page] == list(range(7))
    assert [len(page) for page in pages][:2] == [3, 3]


def test_a_page_stops_at_one_megabyte_read_and_next_token_resumes(dynamodb, music):
    # Why: "if the total number of processed items exceeds the maximum dataset size limit of 1 MB, the read stops".
    pk = fresh()
    blob = "x" * 390_000
    put_rows(dynamodb, music, pk, 4, blob={"S": blob})
    statement = f"SELECT sk FROM \"{music}\" WHERE pk = '{pk}'"
    first = run(dynamodb, statement)
    assert [item["sk"]["N"] for item in first["Items"]] == ["0", "1", "2"]  # the third item crosses 1 MB
    assert first["LastEvaluatedKey"] == {"pk": {"S": pk}, "sk": {"N": "2"}}
    rest = run(dynamodb, statement, NextToken=first["NextToken"])
    assert [item["sk"]["N"] for item in rest["Items"]] == ["3"] and "NextToken" not in rest


def test_next_token_pages_across_the_partitions_of_an_in_list(dynamodb, music):
    # Why: an IN list reads several item collections; Limit and NextToken run across them in order.
    first, second = fresh(), fresh()
    put_rows(dynamodb, music, first, 3)
    put_rows(dynamodb, music, second, 3)
    statement = f"SELECT pk, sk FROM \"{music}\" WHERE pk IN ['{first}', '{second}']"
    seen, token = [], None
    for _ in range(10):
        response = run(dynamodb, statement, Limit=2, **({"NextToken": token} if token else {}))
        seen += [(item["pk"]["S"], int(item["sk"]["N"])) for item in response["Items"]]
        token = response.get("NextToken")
        if token is None:
            break
    assert seen == [(first, 0), (first, 1), (first, 2), (second, 0), (second, 1), (second, 2)]


def test_a_next_token_is_refused_for_another_statement_or_when_forged(dynamodb, music):
    # Why: a NextToken belongs to the request that produced it.
    pk = fresh()
    put_rows(dynamodb, music, pk, 3)
    token = run(dynamodb, f"SELECT * FROM \"{music}\" WHERE pk = '{pk}'", Limit=1)["NextToken"]
    other = f"SELECT * FROM \"{music}\" WHERE pk = '{pk}' AND sk > 0"
    error = refusal(run, client=dynamodb, statement=other, NextToken=token)
    assert error["Error"] == {"Code": "ValidationException", "Message": "NextToken does not match request"}
    forged = base64.urlsafe_b64encode(b"not json").decode()
    error = refusal(run, client=dynamodb, statement=other, NextToken=forged)
    assert error["Error"]["Message"] == "Invalid NextToken"


# ------------------------------------------------------------------------------------------------------- UPDATE


def test_update_set_remove_and_collection_functions(dynamodb, music):
    # Why: SET (values, arithmetic, LIST_APPEND, SET_ADD, SET_DELETE) and REMOVE edit one item named by its key.
    pk = fresh()
    put(
        dynamodb, music, pk, 1, plays={"N": "10"}, years={"L": [{"N": "2018"}]}, tags={"SS": ["a", "b"]}, old={"S": "x"}
    )
    response = run(
        dynamodb,
        f"UPDATE \"{music}\" SET plays = plays + 5, years = list_append(years, [2020]) "
        "SET tags = set_add(tags, <<'c'>>) REMOVE old "
        f"WHERE pk = '{pk}' AND sk = 1",
    )
    assert response["Items"] == []
    item = get(dynamodb, music, pk, 1)
    assert item["plays"] == {"N": "15"}
    assert item["years"] == {"L": [{"N": "2018"}, {"N": "2020"}]}
    assert sorted(item["tags"]["SS"]) == ["a", "b", "c"]
    assert "old" not in item
    run(dynamodb, f"UPDATE \"{music}\" SET tags = set_delete(tags, <<'a', 'c'>>) WHERE pk = '{pk}' AND sk = 1")
    assert get(dynamodb, music, pk, 1)["tags"] == {"SS": ["b"]}


def test_update_nested_paths_and_list_elements(dynamodb, music):
    # Why: SET and REMOVE take document paths; LIST_APPEND prepends with its operands swapped; a set emptied by
    # SET_DELETE removes the attribute, as the item API's DELETE does.
    pk = fresh()
    put(
        dynamodb,
        music,
        pk,
        1,
        detail={"M": {"label": {"S": "Old"}, "years": {"L": [{"N": "1"}, {"N": "2"}, {"N": "3"}]}}},
        tags={"SS": ["x"]},
    )
    run(
        dynamodb,
        f"UPDATE \"{music}\" SET detail.label = 'New', detail.\"first\" = list_append([0], detail.years) "
        f"REMOVE detail.years[1] SET tags = set_delete(tags, <<'x'>>) WHERE pk = '{pk}' AND sk = 1",
    )
    item = get(dynamodb, music, pk, 1)
    assert item["detail"] == {
        "M": {
            "label": {"S": "New"},
            "years": {"L": [{"N": "1"}, {"N": "3"}]},
            "first": {"L": [{"N": "0"}, {"N": "1"}, {"N": "2"}, {"N": "3"}]},
        }
    }
    assert "tags" not in item


def test_update_returning_forms(dynamodb, music):
    # Why: RETURNING ALL OLD / MODIFIED OLD / ALL NEW / MODIFIED NEW answer the item as UpdateItem's ReturnValues do.
    pk = fresh()
    put(dynamodb, music, pk, 1, a={"N": "1"}, b={"S": "b"})
    base = f"UPDATE \"{music}\" SET a = a + 1 WHERE pk = '{pk}' AND sk = 1 RETURNING "
    key = {"pk": {"S": pk}, "sk": {"N": "1"}}
    assert run(dynamodb, base + "ALL OLD *")["Items"] == [{**key, "a": {"N": "1"}, "b": {"S": "b"}}]
    assert run(dynamodb, base + "MODIFIED OLD *")["Items"] == [{"a": {"N": "2"}}]
    assert run(dynamodb, base + "ALL NEW *")["Items"] == [{**key, "a": {"N": "4"}, "b": {"S": "b"}}]
    assert run(dynamodb, base + "MODIFIED NEW *")["Items"] == [{"a": {"N": "5"}}]


def test_update_is_never_an_upsert_and_checks_its_conditions(dynamodb, music):
    # Why: "If the WHERE clause ... does not evaluate to true for any item ... ConditionalCheckFailedException".
    pk = fresh()
    error = refusal(run, client=dynamodb, statement=f"UPDATE \"{music}\" SET a = 1 WHERE pk = '{pk}' AND sk = 1")
    assert error["Error"] == {"Code": "ConditionalCheckFailedException", "Message": CCF_MESSAGE}
    assert get(dynamodb, music, pk, 1) is None
    put(dynamodb, music, pk, 1, a={"N": "1"})
    error = refusal(
        run,
        client=dynamodb,
        statement=f"UPDATE \"{music}\" SET a = 9 WHERE pk = '{pk}' AND sk = 1 AND a = 2",
        ReturnValuesOnConditionCheckFailure="ALL_OLD",
    )
    assert error["Error"]["Code"] == "ConditionalCheckFailedException"
    assert error["Item"] == {"pk": {"S": pk}, "sk": {"N": "1"}, "a": {"N": "1"}}
    run(dynamodb, f"UPDATE \"{music}\" SET a = 9 WHERE pk = '{pk}' AND sk = 1 AND a = 1")
    assert get(dynamodb, music, pk, 1)["a"] == {"N": "9"}


def test_update_needs_the_whole_key_and_cannot_change_it(dynamodb, music):
    # Why: the WHERE clause must pin one item by every key attribute; key attributes cannot be SET.
    pk = fresh()
    put(dynamodb, music, pk, 1)
    error = refusal(run, client=dynamodb, statement=f"UPDATE \"{music}\" SET a = 1 WHERE pk = '{pk}'")
    assert error["Error"] == {"Code": "ValidationException", "Message": INCOMPLETE_KEY}
    error = refusal(run, client=dynamodb, statement=f"UPDATE \"{music}\" SET a = 1 WHERE pk = '{pk}' OR sk = 1")
    assert error["Error"]["Message"] == INCOMPLETE_KEY
    error = refusal(run, client=dynamodb, statement=f"UPDATE \"{music}\" SET sk = 2 WHERE pk = '{pk}' AND sk = 1")
    assert error["Error"]["Message"] == (
        "One or more parameter values were invalid: Cannot update attribute sk. This attribute is part of the key"
    )
    assert get(dynamodb, music, pk, 1) == {"pk": {"S": pk}, "sk": {"N": "1"}}


# ------------------------------------------------------------------------------------------------------- DELETE


def test_delete_returning_all_old_and_its_conditions(dynamodb, music):
    # Why: a missing item deletes nothing and succeeds; a false condition on an existing one is refused.
    pk = fresh()
    put(dynamodb, music, pk, 1, a={"N": "1"})
    table = f'"{music}"'
    assert run(dynamodb, f"DELETE FROM {table} WHERE pk = '{pk}' AND sk = 2 AND a = 5")["Items"] == []
    error = refusal(run, client=dynamodb, statement=f"DELETE FROM {table} WHERE pk = '{pk}' AND sk = 1 AND a = 5")
    assert error["Error"] == {"Code": "ConditionalCheckFailedException", "Message": CCF_MESSAGE}
    assert get(dynamodb, music, pk, 1) is not None
    deleted = run(dynamodb, f"DELETE FROM {table} WHERE pk = '{pk}' AND sk = 1 AND a = 1 RETURNING ALL OLD *")
    assert deleted["Items"] == [{"pk": {"S": pk}, "sk": {"N": "1"}, "a": {"N": "1"}}]
    assert get(dynamodb, music, pk, 1) is None
    error = refusal(run, client=dynamodb, statement=f"DELETE FROM {table} WHERE pk = '{pk}' RETURNING ALL OLD *")
    assert error["Error"]["Message"] == INCOMPLETE_KEY


def test_delete_returning_anything_but_all_old_is_refused(dynamodb, flat):
    # Why: `<returnvalues> ::= ALL OLD *` is DELETE's only form.
    error = refusal(run, client=dynamodb, statement=f"DELETE FROM \"{flat}\" WHERE pk = 'a' RETURNING ALL NEW *")
    assert error["Error"]["Message"] == (
        "Invalid returning clause: RETURNING ALL NEW *. Only RETURNING ALL OLD * is allowed in DELETE statements."
    )


# ------------------------------------------------------------------------------------------------ statement errors


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELEC * FROM \"{t}\"", NOT_WELL_FORMED + "Expected data manipulation"),
        ("SELECT * FROM \"{t}\" WHERE", NOT_WELL_FORMED + "Unexpected end of statement"),
        ("SELECT * FROM \"{t}\" WHERE pk = ?", "Number of parameters in request and statement don't match."),
        ("SELECT a, * FROM \"{t}\"", "Other attributes should not be present in the projection when '*' is used."),
        ("SELECT * FROM \"{t}\" WHERE a = MISSING", "MISSING must be compared using IS operator"),
        ("EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND b = 1)", "EXISTS can only be used in ExecuteTransaction write requests."),
        ("INSERT INTO \"{t}\" VALUE ['a']", 'Unsupported operation: Inserting multiple items in a single statement is not supported, use "INSERT INTO tableName VALUE item" instead'),
        ("INSERT INTO \"{t}\" VALUE {{'pk': 'a', 's': <<>>}}", "Empty bags are not supported"),
        ("UPDATE \"{t}\" ADD a 1 WHERE pk = 'a'", "Only SET and REMOVE are supported in update expressions at this time"),
        ("UPDATE \"{t}\" SET a = set_add(b, <<1>>) WHERE pk = 'a'", "The first argument to SET_ADD must equal the assignment value"),
    ],
)  # fmt: skip
def test_malformed_and_unsupported_statements_are_validation_errors(dynamodb, flat, statement, message):
    # Why: DynamoDB answers a statement it cannot run with ValidationException naming the problem.
    error = refusal(run, client=dynamodb, statement=statement.format(t=flat))
    assert error["Error"] == {"Code": "ValidationException", "Message": message}
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert dynamodb.scan(TableName=flat)["Count"] == 0


def test_unknown_table_and_request_shape_errors(dynamodb, client_factory):
    # Why: a missing table is ResourceNotFoundException; request members are validated as the API model says.
    error = refusal(run, client=dynamodb, statement='SELECT * FROM "no-such-table" WHERE pk = \'a\'')
    assert error["Error"] == {"Code": "ResourceNotFoundException", "Message": "Requested resource not found"}
    unchecked = client_factory(config=Config(parameter_validation=False, retries={"total_max_attempts": 1}))
    error = refusal(run, client=unchecked, statement='SELECT * FROM "no-such-table"', Limit=0)
    assert "Member must have value greater than or equal to 1" in error["Error"]["Message"]


def test_a_write_reports_consumed_capacity(dynamodb, flat):
    # Why: ReturnConsumedCapacity applies to PartiQL as to the item operation it runs.
    pk = fresh()
    response = run(dynamodb, f"INSERT INTO \"{flat}\" VALUE {{'pk': '{pk}'}}", ReturnConsumedCapacity="TOTAL")
    assert response["ConsumedCapacity"] == {"TableName": flat, "CapacityUnits": 1.0}
    run(dynamodb, f"DELETE FROM \"{flat}\" WHERE pk = '{pk}'")


def test_partiql_writes_reach_the_table_stream(dynamodb, client_factory, unique_table_name):
    # Why: PartiQL writes are the item operations' writes, so streams see them with the same event names.
    table = create(dynamodb, unique_table_name("Streamed"), sort=False, stream=True)
    run(dynamodb, f"INSERT INTO \"{table}\" VALUE {{'pk': 'a', 'v': 1}}")
    run(dynamodb, f"UPDATE \"{table}\" SET v = 2 WHERE pk = 'a'")
    run(dynamodb, f"DELETE FROM \"{table}\" WHERE pk = 'a'")
    streams = client_factory("dynamodbstreams")
    arn = dynamodb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")
    records = streams.get_records(ShardIterator=iterator["ShardIterator"])["Records"]
    assert [r["eventName"] for r in records] == ["INSERT", "MODIFY", "REMOVE"]
    assert records[1]["dynamodb"]["NewImage"]["v"] == {"N": "2"}


# ------------------------------------------------------------------------------------------- BatchExecuteStatement


def test_batch_writes_answer_each_statement(dynamodb, music):
    # Why: "A HTTP 200 response does not mean that all statements ... succeeded": errors sit in each Response.
    pk = fresh()
    put(dynamodb, music, pk, 1, a={"N": "1"})
    table = f'"{music}"'
    response = dynamodb.batch_execute_statement(
        Statements=[
            {"Statement": f"INSERT INTO {table} VALUE {{'pk': ?, 'sk': 2}}", "Parameters": [{"S": pk}]},
            {"Statement": f"INSERT INTO {table} VALUE {{'pk': '{pk}', 'sk': 1}}"},
            {"Statement": f"UPDATE {table} SET a = 5 WHERE pk = '{pk}' AND sk = 1 AND a = 3",
             "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
            {"Statement": f"UPDATE {table} SET b = 5 WHERE pk = '{pk}' AND sk = 1"},
            {"Statement": f"DELETE FROM {table} WHERE pk = '{pk}'"},
            {"Statement": "UPDATE \"no-such-table\" SET b = 5 WHERE pk = 'x'"},
        ],
        ReturnConsumedCapacity="TOTAL",
    )  # fmt: skip
    assert response["Responses"] == [
        {"TableName": music},
        {"TableName": music, "Error": {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"}},
        {
            "TableName": music,
            "Error": {
                "Code": "ConditionalCheckFailed",
                "Message": CCF_MESSAGE,
                "Item": {"pk": {"S": pk}, "sk": {"N": "1"}, "a": {"N": "1"}},
            },
        },
        {"TableName": music},
        {"TableName": music, "Error": {"Code": "ValidationError", "Message": INCOMPLETE_KEY}},
        {"Error": {"Code": "ResourceNotFound", "Message": "Requested resource not found"}},
    ]
    assert get(dynamodb, music, pk, 1) == {"pk": {"S": pk}, "sk": {"N": "1"}, "a": {"N": "1"}, "b": {"N": "5"}}
    assert get(dynamodb, music, pk, 2) == {"pk": {"S": pk}, "sk": {"N": "2"}}
    assert response["ConsumedCapacity"] == [{"TableName": music, "CapacityUnits": 2.0}]


def test_batch_reads_name_whole_keys(dynamodb, music):
    # Why: "Each read statement in a BatchExecuteStatement must specify an equality condition on all key attributes".
    pk = fresh()
    put_rows(dynamodb, music, pk, 2, v={"S": "x"})
    table = f'"{music}"'
    response = dynamodb.batch_execute_statement(
        Statements=[
            {"Statement": f"SELECT v FROM {table} WHERE pk = '{pk}' AND sk = 1", "ConsistentRead": True},
            {"Statement": f"SELECT * FROM {table} WHERE pk = '{pk}' AND sk = 9"},
            {"Statement": f"SELECT * FROM {table} WHERE pk = '{pk}'"},
            {"Statement": f"SELECT sk FROM {table} WHERE pk = ? AND sk = 1 AND v = 'x'", "Parameters": [{"S": pk}]},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    # One BatchGetItem of the two distinct keys, consistently (one statement asked): a unit each.
    assert response["ConsumedCapacity"] == [{"TableName": music, "CapacityUnits": 2.0}]
    assert response["Responses"] == [
        {"TableName": music, "Item": {"v": {"S": "x"}}},
        {"TableName": music},
        {
            "TableName": music,
            "Error": {
                "Code": "ValidationError",
                "Message": "Select statements within BatchExecuteStatement must specify the primary key in the "
                "where clause.",
            },
        },
        {"TableName": music, "Item": {"sk": {"N": "1"}}},
    ]


def test_batch_limits_and_mixing_are_refused_whole(dynamodb, flat):
    # Why: a batch holds 1 to 25 statements, and either reads or writes.
    statement = {"Statement": f"SELECT * FROM \"{flat}\" WHERE pk = 'a'"}
    error = refusal(dynamodb.batch_execute_statement, Statements=[statement] * 26)
    assert error["Error"]["Code"] == "ValidationException"
    assert "Member must have length less than or equal to 25" in error["Error"]["Message"]
    insert = {"Statement": f"INSERT INTO \"{flat}\" VALUE {{'pk': 'mixed'}}"}
    error = refusal(dynamodb.batch_execute_statement, Statements=[statement, insert])
    assert error["Error"]["Code"] == "ValidationException"
    assert get(dynamodb, flat, "mixed") is None


# ------------------------------------------------------------------------------------------------ ExecuteTransaction


def test_transaction_writes_and_exists_commit_together(dynamodb, flat):
    # Why: INSERT, UPDATE, DELETE and EXISTS(...) form one TransactWriteItems: all of them or none.
    a, b, c, gate = fresh(), fresh(), fresh(), fresh()
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": b}, "n": {"N": "1"}})
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": c}})
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": gate}, "open": {"BOOL": True}})
    table = f'"{flat}"'
    statements = [
        {"Statement": f"INSERT INTO {table} VALUE {{'pk': '{a}'}}"},
        {"Statement": f"UPDATE {table} SET n = n + 1 WHERE pk = ?", "Parameters": [{"S": b}]},
        {"Statement": f"DELETE FROM {table} WHERE pk = '{c}'"},
        {"Statement": f"EXISTS(SELECT * FROM {table} WHERE pk = '{gate}' AND open = true)"},
    ]
    dynamodb.execute_transaction(TransactStatements=statements)
    assert get(dynamodb, flat, a) is not None and get(dynamodb, flat, c) is None
    assert get(dynamodb, flat, b)["n"] == {"N": "2"}


def test_transaction_cancellation_reasons_and_nothing_changes(dynamodb, flat):
    # Why: TransactionCanceledException lists a reason per statement in order: DuplicateItem for an INSERT.
    a, b, gate = fresh(), fresh(), fresh()
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": a}})
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": gate}, "open": {"BOOL": False}})
    table = f'"{flat}"'
    error = refusal(
        dynamodb.execute_transaction,
        TransactStatements=[
            {"Statement": f"INSERT INTO {table} VALUE {{'pk': '{b}'}}"},
            {"Statement": f"INSERT INTO {table} VALUE {{'pk': '{a}'}}"},
            {"Statement": f"UPDATE {table} SET n = 1 WHERE pk = 'missing-{b}'"},
            {"Statement": f"EXISTS(SELECT * FROM {table} WHERE pk = '{gate}' AND open = true)",
             "ReturnValuesOnConditionCheckFailure": "ALL_OLD"},
        ],
    )  # fmt: skip
    assert error["Error"]["Code"] == "TransactionCanceledException"
    assert error["Error"]["Message"] == (
        "Transaction cancelled, please refer cancellation reasons for specific reasons "
        "[None, DuplicateItem, ConditionalCheckFailed, ConditionalCheckFailed]"
    )
    assert error["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "DuplicateItem", "Message": "Duplicate primary key exists in table"},
        {"Code": "ConditionalCheckFailed", "Message": CCF_MESSAGE},
        {"Code": "ConditionalCheckFailed", "Message": CCF_MESSAGE,
         "Item": {"pk": {"S": gate}, "open": {"BOOL": False}}},
    ]  # fmt: skip
    assert get(dynamodb, flat, b) is None


def test_transaction_client_request_token_is_idempotent(dynamodb, flat):
    # Why: ClientRequestToken makes a retried ExecuteTransaction apply once; reusing it otherwise is refused.
    pk, token = fresh(), uuid.uuid4().hex
    dynamodb.put_item(TableName=flat, Item={"pk": {"S": pk}, "n": {"N": "0"}})
    statements = [{"Statement": f"UPDATE \"{flat}\" SET n = n + 1 WHERE pk = '{pk}'"}]
    dynamodb.execute_transaction(TransactStatements=statements, ClientRequestToken=token)
    dynamodb.execute_transaction(TransactStatements=statements, ClientRequestToken=token)
    assert get(dynamodb, flat, pk)["n"] == {"N": "1"}
    other = [{"Statement": f"UPDATE \"{flat}\" SET n = n + 2 WHERE pk = '{pk}'"}]
    error = refusal(dynamodb.execute_transaction, TransactStatements=other, ClientRequestToken=token)
    assert error["Error"]["Code"] == "IdempotentParameterMismatchException"
    assert get(dynamodb, flat, pk)["n"] == {"N": "1"}


def test_transaction_reads(dynamodb, music):
    # Why: a read transaction is TransactGetItems: one response per SELECT, `{}` for a missing item.
    pk = fresh()
    put_rows(dynamodb, music, pk, 2, v={"S": "x"})
    table = f'"{music}"'
    response = dynamodb.execute_transaction(
        TransactStatements=[
            {"Statement": f"SELECT v FROM {table} WHERE pk = '{pk}' AND sk = 1"},
            {"Statement": f"SELECT * FROM {table} WHERE pk = '{pk}' AND sk = 5"},
        ],
        ReturnConsumedCapacity="TOTAL",
    )
    assert response["Responses"] == [{"Item": {"v": {"S": "x"}}}, {}]
    assert response["ConsumedCapacity"][0]["TableName"] == music
    error = refusal(
        dynamodb.execute_transaction, TransactStatements=[{"Statement": f"SELECT * FROM {table} WHERE pk = '{pk}'"}]
    )
    assert error["Error"]["Message"] == (
        "Select statements within ExecuteTransaction must specify the primary key in the where clause."
    )


def test_transaction_limits_and_mixing_are_refused(dynamodb, flat):
    # Why: 1 to 100 statements, all reads or all writes (EXISTS being a write-side check).
    insert = {"Statement": f"INSERT INTO \"{flat}\" VALUE {{'pk': 'tx-mixed'}}"}
    error = refusal(dynamodb.execute_transaction, TransactStatements=[insert] * 101)
    assert "Member must have length less than or equal to 100" in error["Error"]["Message"]
    read = {"Statement": f"SELECT * FROM \"{flat}\" WHERE pk = 'a'"}
    error = refusal(dynamodb.execute_transaction, TransactStatements=[insert, read])
    assert error["Error"]["Code"] == "ValidationException"
    assert get(dynamodb, flat, "tx-mixed") is None


# ------------------------------------------------------------------------------------------------------- aws CLI


def test_the_aws_cli_runs_the_developer_guides_partiql_examples(region_endpoint, dynamodb, flat, tmp_path):
    # Why: the Developer Guide shows PartiQL through `aws dynamodb execute-statement` and `batch-execute-statement
    # --statements file://partiql.json`; both must work with nothing but an endpoint URL.
    pk = fresh()
    aws_cli(region_endpoint, tmp_path, "execute-statement", "--statement",
            f"INSERT INTO \"{flat}\" VALUE {{'pk': '{pk}', 'Awards': 1}}")  # fmt: skip
    statements = tmp_path / "partiql.json"
    statements.write_text(json.dumps([
        {"Statement": f"UPDATE \"{flat}\" SET AwardDetail={{'Grammys':[2020, 2018]}} WHERE pk=?",
         "Parameters": [{"S": pk}]},
    ]))  # fmt: skip
    batch = aws_cli(region_endpoint, tmp_path, "batch-execute-statement", "--statements", f"file://{statements}")
    assert batch["Responses"] == [{"TableName": flat}]
    selected = aws_cli(region_endpoint, tmp_path, "execute-statement", "--statement",
                       f"SELECT AwardDetail.Grammys[0] FROM \"{flat}\" WHERE pk = '{pk}'")  # fmt: skip
    assert selected["Items"] == [{"Grammys[0]": {"N": "2020"}}]
