"""Multi-attribute GSI keys through boto3 (DynamoDB, November 2025): up to 4 HASH and 4 RANGE attributes per GSI key.

The rules are DynamoDB's developer guide (GSI.html#GSI.MultiAttributeKeys, GSI.DesignPattern.MultiAttributeKeys.html)
as the project's conformance notes (section A) spell them out; each test's first line names the rule it checks.
The example is the guide's own: tournament matches indexed by (tournamentId, region) and sorted by
(round, bracket, matchNo).

botocore's model (1.43) sets no maximum on a KeySchema's length, so the client sends up to 8 elements unchanged and
every rule here is the server's. The module talks only boto3, to whatever region the suite's `region_endpoint`
fixture names (and so on whichever store that region keeps its tables); GSI reads poll within a bounded wait, since
a GSI is eventually consistent on DynamoDB itself.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.timeout(300)

INDEX = "byTournament"
HASH = ["tournamentId", "region"]
RANGE = ["round", "bracket", "matchNo"]
TYPES = {"matchId": "S", "tournamentId": "S", "region": "S", "round": "S", "bracket": "S", "matchNo": "N"}
HASH_EQ = "tournamentId = :t AND #region = :r"  # "region" is a reserved word
NAMES = {"#region": "region", "#round": "round"}
DEADLINE_S = 60.0  # bounded waits: generous for a loaded machine (or for DynamoDB's GSI propagation)


# ------------------------------------------------------------------------------------------------------ helpers


def S(value):
    return {"S": value}


def N(value):
    return {"N": str(value)}


def key_schema(hashes, ranges=()):
    return [{"AttributeName": n, "KeyType": "HASH"} for n in hashes] + [
        {"AttributeName": n, "KeyType": "RANGE"} for n in ranges
    ]


def definitions(types):
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def gsi(name, hashes, ranges=(), projection="ALL"):
    return {"IndexName": name, "KeySchema": key_schema(hashes, ranges), "Projection": {"ProjectionType": projection}}


def wait_active(dynamodb, table):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        described = dynamodb.describe_table(TableName=table)["Table"]
        statuses = [described["TableStatus"], *(i["IndexStatus"] for i in described.get("GlobalSecondaryIndexes", []))]
        if all(status == "ACTIVE" for status in statuses):
            return described
        assert time.monotonic() < deadline, f"{table} not ACTIVE: {statuses}"
        time.sleep(0.2)


def create(dynamodb, name, gsis, types=TYPES):
    dynamodb.create_table(TableName=name, AttributeDefinitions=definitions(types), KeySchema=key_schema(["matchId"]),
                          BillingMode="PAY_PER_REQUEST", GlobalSecondaryIndexes=gsis)  # fmt: skip
    return wait_active(dynamodb, name)


def refused(call, pattern):
    with pytest.raises(ClientError) as caught:
        call()
    error = caught.value.response["Error"]
    assert error["Code"] == "ValidationException", error
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert re.search(pattern, error["Message"]), error["Message"]
    return error["Message"]


def settled(read, expected, what="index read"):
    """Poll `read()` until it returns `expected` (a GSI is eventually consistent), within a bounded wait."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        got = read()
        if got == expected:
            return got
        assert time.monotonic() < deadline, f"{what}: {got} != {expected}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def matches(dynamodb, unique_table_name):
    name = unique_table_name("Matches")
    create(dynamodb, name, [gsi(INDEX, HASH, RANGE)])
    return name


@pytest.fixture
def tournament():
    """A tournamentId no other test writes: tests share the table and keep apart by partition."""
    return f"T-{uuid.uuid4().hex[:8]}"


def match(tournament, match_id, round_="SEMIFINALS", bracket="UPPER", no=1, region="NA-EAST", **more):
    item = {"matchId": S(f"{tournament}-{match_id}"), "tournamentId": S(tournament)}
    for name, value in (("region", region), ("round", round_), ("bracket", bracket)):
        if value is not None:
            item[name] = S(value)
    if no is not None:
        item["matchNo"] = N(no)
    item.update(more)
    return item


def query(dynamodb, table, tournament, condition="", values=None, names=None, **extra):
    text = HASH_EQ + (f" AND {condition}" if condition else "")
    used = {k: v for k, v in {**NAMES, **(names or {})}.items() if k in text or k in extra.get("FilterExpression", "")}
    return dynamodb.query(TableName=table, IndexName=INDEX, KeyConditionExpression=text,
                          ExpressionAttributeValues={":t": S(tournament), ":r": S("NA-EAST"), **(values or {})},
                          ExpressionAttributeNames=used, **extra)  # fmt: skip


def ids(answer, tournament):
    return [item["matchId"]["S"].removeprefix(f"{tournament}-") for item in answer["Items"]]


def indexed(dynamodb, table, tournament, **extra):
    return lambda: ids(query(dynamodb, table, tournament, **extra), tournament)


# ========================================================================================= CreateTable, UpdateTable


def test_four_hash_and_four_range_attributes_are_described_as_declared(dynamodb, unique_table_name):
    # Why: a GSI key takes up to 4 HASH then 4 RANGE attributes of mixed types; DescribeTable echoes them in order.
    name = unique_table_name("Wide")
    types = {"matchId": "S", "h1": "S", "h2": "N", "h3": "B", "h4": "S", "r1": "N", "r2": "S", "r3": "B", "r4": "N"}
    index = gsi("wide", ["h1", "h2", "h3", "h4"], ["r1", "r2", "r3", "r4"], projection="KEYS_ONLY")
    described = create(dynamodb, name, [index], types)
    assert described["GlobalSecondaryIndexes"][0]["KeySchema"] == index["KeySchema"]
    assert described["GlobalSecondaryIndexes"][0]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert {(d["AttributeName"], d["AttributeType"]) for d in described["AttributeDefinitions"]} == set(types.items())
    item = {"matchId": S("a"), "h1": S("x"), "h2": N(2), "h3": {"B": b"\x00\xff"}, "h4": S("y"), "r1": N(-1),
            "r2": S("z"), "r3": {"B": b"\x00"}, "r4": N(7), "note": S("not projected")}  # fmt: skip
    dynamodb.put_item(TableName=name, Item=item)
    values = {":a": S("x"), ":b": N(2), ":c": {"B": b"\x00\xff"}, ":d": S("y"), ":e": N(-1), ":f": S("z"),
              ":g": {"B": b"\x00"}, ":h": N(7)}  # fmt: skip
    condition = "h1 = :a AND h2 = :b AND h3 = :c AND h4 = :d AND r1 = :e AND r2 = :f AND r3 = :g AND r4 = :h"
    found = settled(lambda: dynamodb.query(TableName=name, IndexName="wide", KeyConditionExpression=condition,
                                           ExpressionAttributeValues=values)["Items"],
                    [{k: v for k, v in item.items() if k != "note"}])  # fmt: skip
    assert "note" not in found[0]  # KEYS_ONLY: the table key and every index key attribute


@pytest.mark.parametrize(
    "hashes, ranges, pattern",
    [(["a", "b", "c", "d", "e"], [], "HASH"), (["a"], ["b", "c", "d", "e", "f"], "RANGE")],
    ids=["five-hash", "five-range"],
)
def test_more_than_four_attributes_on_one_side_is_refused(dynamodb, unique_table_name, hashes, ranges, pattern):
    # Why: each side of a GSI key holds at most 4 attributes; the message names the side that has too many.
    types = {"matchId": "S", **{n: "S" for n in (*hashes, *ranges)}}
    refused(lambda: dynamodb.create_table(
        TableName=unique_table_name("Five"), AttributeDefinitions=definitions(types), KeySchema=key_schema(["matchId"]),
        BillingMode="PAY_PER_REQUEST", GlobalSecondaryIndexes=[gsi(INDEX, hashes, ranges)]), pattern)  # fmt: skip


INTERLEAVED = [{"AttributeName": "a", "KeyType": "HASH"}, {"AttributeName": "b", "KeyType": "RANGE"},
               {"AttributeName": "c", "KeyType": "HASH"}]  # fmt: skip


@pytest.mark.parametrize("elements", [INTERLEAVED, INTERLEAVED[1:]], ids=["hash-range-hash", "range-hash"])
def test_hash_elements_precede_range_elements_in_create_table_and_update_table(dynamodb, unique_table_name, elements):
    # Why: every HASH element must come before every RANGE element, in CreateTable and UpdateTable Create alike.
    types = definitions({"matchId": "S", "a": "S", "b": "S", "c": "S"})
    index = {"IndexName": INDEX, "KeySchema": elements, "Projection": {"ProjectionType": "ALL"}}
    refused(lambda: dynamodb.create_table(
        TableName=unique_table_name("Interleaved"), AttributeDefinitions=types, KeySchema=key_schema(["matchId"]),
        BillingMode="PAY_PER_REQUEST", GlobalSecondaryIndexes=[index]), "HASH.*precede.*RANGE")  # fmt: skip
    name = unique_table_name("Plain")
    dynamodb.create_table(TableName=name, AttributeDefinitions=definitions({"matchId": "S"}),
                          KeySchema=key_schema(["matchId"]), BillingMode="PAY_PER_REQUEST")  # fmt: skip
    wait_active(dynamodb, name)
    refused(lambda: dynamodb.update_table(TableName=name, AttributeDefinitions=types,
                                          GlobalSecondaryIndexUpdates=[{"Create": index}]), "HASH.*precede.*RANGE")
    assert "GlobalSecondaryIndexes" not in dynamodb.describe_table(TableName=name)["Table"]


@pytest.mark.parametrize(
    "elements",
    [key_schema(["a", "a"]), key_schema(["a"], ["a"]), key_schema(["a", "b"], ["c", "b"])],
    ids=["hash-hash", "hash-range", "hash-and-later-range"],
)
def test_an_attribute_is_used_once_in_one_index_key(dynamodb, unique_table_name, elements):
    # Why: an attribute may appear only once in one index's KeySchema, as HASH+HASH or HASH+RANGE.
    refused(lambda: dynamodb.create_table(
        TableName=unique_table_name("Twice"), AttributeDefinitions=definitions({"matchId": "S", "a": "S", "b": "S",
                                                                                "c": "S"}),
        KeySchema=key_schema(["matchId"]), BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[{"IndexName": INDEX, "KeySchema": elements, "Projection": {"ProjectionType": "ALL"}}],
    ), "same name")  # fmt: skip


def test_every_component_is_declared_in_attribute_definitions(dynamodb, unique_table_name):
    # Why: each component of a GSI key needs its AttributeDefinition (its scalar type).
    refused(lambda: dynamodb.create_table(
        TableName=unique_table_name("Undeclared"), AttributeDefinitions=definitions({"matchId": "S", "a": "S"}),
        KeySchema=key_schema(["matchId"]), BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[gsi(INDEX, ["a", "b"])]), "AttributeDefinitions")  # fmt: skip


def test_roles_are_per_index_and_base_key_attributes_may_be_range_components(dynamodb, unique_table_name):
    # Why: one attribute may be HASH in one GSI and RANGE in another, beside single-attribute GSIs; a table key
    # attribute may be a RANGE component.
    name = unique_table_name("Roles")
    types = {"matchId": "S", "player": "S", "matchDate": "S", "round": "S"}
    create(dynamodb, name, [gsi("byPlayer", ["player"], ["matchDate", "round"]),
                            gsi("byRound", ["round", "matchDate"], ["player", "matchId"]), gsi("byDate", ["matchDate"])],
           types)  # fmt: skip
    dynamodb.put_item(TableName=name, Item={"matchId": S("m1"), "player": S("p1"), "matchDate": S("2024-01-02"),
                                            "round": S("FINAL")})  # fmt: skip
    by_round = lambda: dynamodb.query(  # noqa: E731
        TableName=name, IndexName="byRound", KeyConditionExpression="#o = :o AND matchDate = :d AND player = :p AND "
                                                                    "matchId = :m",
        ExpressionAttributeNames={"#o": "round"},
        ExpressionAttributeValues={":o": S("FINAL"), ":d": S("2024-01-02"), ":p": S("p1"), ":m": S("m1")})["Count"]
    settled(by_round, 1)  # fmt: skip
    by_player = lambda: dynamodb.query(  # noqa: E731
        TableName=name, IndexName="byPlayer", KeyConditionExpression="player = :p AND matchDate > :d",
        ExpressionAttributeValues={":p": S("p1"), ":d": S("2024")})["Count"]
    settled(by_player, 1)  # fmt: skip


# ============================================================================================================ writes


def test_an_item_is_indexed_only_when_every_component_is_present(dynamodb, matches, tournament):
    # Why: sparse index: an item lacking any HASH or RANGE component is in the table only (PutItem, BatchWriteItem,
    # UpdateItem alike).
    dynamodb.put_item(TableName=matches, Item=match(tournament, "full"))
    dynamodb.put_item(TableName=matches, Item=match(tournament, "no-region", region=None))
    dynamodb.batch_write_item(RequestItems={matches: [{"PutRequest": {"Item": match(tournament, "no-bracket",
                                                                                    bracket=None)}}]})  # fmt: skip
    dynamodb.update_item(TableName=matches, Key={"matchId": S(f"{tournament}-no-no")},
                         UpdateExpression="SET tournamentId = :t, #region = :r, #round = :o, bracket = :b",
                         ExpressionAttributeNames={"#region": "region", "#round": "round"},
                         ExpressionAttributeValues={":t": S(tournament), ":r": S("NA-EAST"), ":o": S("F"),
                                                    ":b": S("U")})  # fmt: skip
    settled(indexed(dynamodb, matches, tournament), ["full"])
    scanned = dynamodb.scan(TableName=matches, FilterExpression="tournamentId = :t",
                            ExpressionAttributeValues={":t": S(tournament)}, ConsistentRead=True)  # fmt: skip
    assert scanned["Count"] == 4


def test_a_component_of_the_wrong_type_is_refused_and_nothing_is_written(dynamodb, matches, tournament):
    # Why: a component present with the wrong type is a ValidationException on every write path; one bad item
    # rejects a whole BatchWriteItem, and a transaction is cancelled.
    dynamodb.put_item(TableName=matches, Item=match(tournament, "kept"))
    bad = match(tournament, "bad", matchNo=S("seven"))
    refused(lambda: dynamodb.put_item(TableName=matches, Item=bad), "[Tt]ype")
    refused(lambda: dynamodb.put_item(TableName=matches, Item={"matchId": S(f"{tournament}-alone"),
                                                               "region": N(1)}), "[Tt]ype")  # fmt: skip
    refused(lambda: dynamodb.update_item(TableName=matches, Key={"matchId": S(f"{tournament}-kept")},
                                         UpdateExpression="SET bracket = :b", ExpressionAttributeValues={":b": N(1)}),
            "[Tt]ype")  # fmt: skip
    refused(lambda: dynamodb.batch_write_item(RequestItems={matches: [
        {"PutRequest": {"Item": match(tournament, "good-1")}}, {"PutRequest": {"Item": bad}},
        {"PutRequest": {"Item": match(tournament, "good-2")}}]}), "[Tt]ype")  # fmt: skip
    with pytest.raises(ClientError) as caught:
        dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": matches, "Item": match(tournament, "good-3")}},
                                                     {"Put": {"TableName": matches, "Item": bad}}])  # fmt: skip
    assert caught.value.response["Error"]["Code"] in ("ValidationException", "TransactionCanceledException")
    table = dynamodb.scan(TableName=matches, FilterExpression="tournamentId = :t",
                          ExpressionAttributeValues={":t": S(tournament)}, ConsistentRead=True)  # fmt: skip
    assert [item["matchId"]["S"] for item in table["Items"]] == [f"{tournament}-kept"]
    assert table["Items"][0]["bracket"] == S("UPPER")


def test_an_empty_string_component_is_refused(dynamodb, matches, tournament):
    # Why: no component of an index key may be an empty string.
    refused(lambda: dynamodb.put_item(TableName=matches, Item=match(tournament, "e", bracket="")), "empty")
    assert "Item" not in dynamodb.get_item(TableName=matches, Key={"matchId": S(f"{tournament}-e")}, ConsistentRead=True)


def test_updates_remove_restore_and_move_the_index_entry(dynamodb, matches, tournament):
    # Why: REMOVE of any components takes the item out, SET puts it back, a changed tuple moves the entry with no
    # stale entry left; DeleteItem and BatchWriteItem deletes remove it.
    key = {"matchId": S(f"{tournament}-m1")}
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m1", no=1))
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m2", no=2))
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m3", no=3))
    settled(indexed(dynamodb, matches, tournament), ["m1", "m2", "m3"])
    dynamodb.update_item(TableName=matches, Key=key, UpdateExpression="REMOVE bracket, matchNo")
    settled(indexed(dynamodb, matches, tournament), ["m2", "m3"])
    dynamodb.update_item(TableName=matches, Key=key, UpdateExpression="SET bracket = :b, matchNo = :n",
                         ExpressionAttributeValues={":b": S("UPPER"), ":n": N(9)})  # fmt: skip
    settled(indexed(dynamodb, matches, tournament), ["m2", "m3", "m1"])
    dynamodb.update_item(TableName=matches, Key=key, UpdateExpression="SET bracket = :b",
                         ExpressionAttributeValues={":b": S("LOWER")})  # fmt: skip
    lower = indexed(dynamodb, matches, tournament, condition="#round = :o AND bracket = :b",
                    values={":o": S("SEMIFINALS"), ":b": S("LOWER")})  # fmt: skip
    settled(lower, ["m1"])
    settled(indexed(dynamodb, matches, tournament, condition="#round = :o AND bracket = :b",
                    values={":o": S("SEMIFINALS"), ":b": S("UPPER")}), ["m2", "m3"])  # fmt: skip
    dynamodb.delete_item(TableName=matches, Key=key)
    dynamodb.batch_write_item(RequestItems={matches: [{"DeleteRequest": {"Key": {"matchId": S(f"{tournament}-m2")}}}]})
    settled(indexed(dynamodb, matches, tournament), ["m3"])


# ======================================================================================================== Query


BAD_CONDITIONS = [
    ("tournamentId = :t", {":t": S("T")}, "HASH.*equality"),
    ("tournamentId = :t AND #region > :r", {":t": S("T"), ":r": S("NA")}, "HASH.*equality"),
    ("tournamentId = :t AND #region BETWEEN :r AND :s", {":t": S("T"), ":r": S("A"), ":s": S("B")}, "HASH.*equality"),
    ("tournamentId = :t AND begins_with(#region, :r)", {":t": S("T"), ":r": S("NA")}, "HASH.*equality"),
    (f"{HASH_EQ} AND bracket = :b", {":t": S("T"), ":r": S("NA"), ":b": S("U")}, "RANGE.*equality"),
    (f"{HASH_EQ} AND #round = :o AND matchNo = :n", {":t": S("T"), ":r": S("NA"), ":o": S("F"), ":n": N(1)},
     "RANGE.*equality"),
    (f"{HASH_EQ} AND #round > :o AND bracket < :b", {":t": S("T"), ":r": S("NA"), ":o": S("F"), ":b": S("U")},
     "RANGE.*equality"),
    (f"{HASH_EQ} AND begins_with(#round, :o) AND bracket = :b", {":t": S("T"), ":r": S("NA"), ":o": S("F"),
                                                                 ":b": S("U")}, "RANGE.*equality"),
    ("tournamentId = :t AND #region = :r", {":t": N(1), ":r": S("NA")}, "type"),
    (f"{HASH_EQ} AND #round = :o AND bracket = :b AND begins_with(matchNo, :n)",
     {":t": S("T"), ":r": S("NA"), ":o": S("F"), ":b": S("U"), ":n": N(1)}, "type"),
]  # fmt: skip


@pytest.mark.parametrize("condition, values, pattern", BAD_CONDITIONS)
def test_key_conditions_outside_the_rules_are_refused(dynamodb, matches, condition, values, pattern):
    # Why: every HASH attribute needs an equality; RANGE conditions form a left prefix in key-schema order, only the
    # last may be a range or begins_with; values must have the component's type.
    names = {k: v for k, v in NAMES.items() if k in condition}
    aliases = {"ExpressionAttributeNames": names} if names else {}
    refused(lambda: dynamodb.query(TableName=matches, IndexName=INDEX, KeyConditionExpression=condition,
                                   ExpressionAttributeValues=values, **aliases), pattern)


def test_consistent_reads_are_refused(dynamodb, matches, tournament):
    # Why: a GSI never takes ConsistentRead=true, whatever its key.
    refused(lambda: query(dynamodb, matches, tournament, ConsistentRead=True), "[Cc]onsistent")


def test_clause_order_does_not_matter_and_aliases_are_resolved(dynamodb, matches, tournament):
    # Why: only component positions matter, never clause order; #aliases are resolved first; an inequality on the
    # first RANGE component alone is valid.
    for n, (round_, bracket, no) in enumerate([("FINAL", "UPPER", 1), ("SEMIFINALS", "LOWER", 2),
                                               ("SEMIFINALS", "UPPER", 3), ("SEMIFINALS", "UPPER", 4)]):  # fmt: skip
        dynamodb.put_item(TableName=matches, Item=match(tournament, f"m{n}", round_, bracket, no))
    shuffled = lambda: ids(dynamodb.query(  # noqa: E731
        TableName=matches, IndexName=INDEX,
        KeyConditionExpression="#n > :n AND bracket = :b AND #x = :r AND #o = :o AND #t = :t",
        ExpressionAttributeNames={"#n": "matchNo", "#x": "region", "#o": "round", "#t": "tournamentId"},
        ExpressionAttributeValues={":t": S(tournament), ":r": S("NA-EAST"), ":o": S("SEMIFINALS"), ":b": S("UPPER"),
                                   ":n": N(3)}), tournament)  # fmt: skip
    settled(shuffled, ["m3"])
    settled(indexed(dynamodb, matches, tournament, condition="#round >= :o", values={":o": S("G")}),
            ["m1", "m2", "m3"])  # fmt: skip


def test_results_are_ordered_by_the_range_tuple(dynamodb, matches, tournament):
    # Why: results sort by the RANGE tuple one component at a time, each in its own type's order (N numerically);
    # ScanIndexForward=false reverses it; a condition on an earlier component excludes other values there.
    rows = [("QUARTER", "UPPER", 10), ("FINAL", "UPPER", 2), ("QUARTER", "LOWER", 9), ("QUARTER", "UPPER", -3),
            ("QUARTERS", "A", 1), ("QUARTER", "UPPER", 2.5)]  # fmt: skip
    for n, (round_, bracket, no) in enumerate(rows):
        dynamodb.put_item(TableName=matches, Item=match(tournament, f"m{n}", round_, bracket, no))
    expected = [f"m{n}" for n, _row in sorted(enumerate(rows), key=lambda pair: pair[1])]
    settled(indexed(dynamodb, matches, tournament), expected)
    assert indexed(dynamodb, matches, tournament, ScanIndexForward=False)() == expected[::-1]
    assert indexed(dynamodb, matches, tournament, condition="#round = :o AND bracket = :b",
                   values={":o": S("QUARTER"), ":b": S("UPPER")})() == ["m3", "m5", "m0"]  # fmt: skip
    assert indexed(dynamodb, matches, tournament, condition="#round = :o AND bracket = :b AND matchNo BETWEEN :a AND :z",
                   values={":o": S("QUARTER"), ":b": S("UPPER"), ":a": N(0), ":z": N(10)})() == ["m5", "m0"]  # fmt: skip
    assert indexed(dynamodb, matches, tournament, condition="begins_with(#round, :o)",
                   values={":o": S("QUARTER")})() == ["m2", "m3", "m5", "m0", "m4"]  # fmt: skip


def test_a_filter_may_not_reference_the_index_key(dynamodb, matches, tournament):
    # Why: a Query's FilterExpression may not use any HASH or RANGE component of the index, even through an alias;
    # non-key attributes and table key attributes that are no component are allowed.
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m1", score=N(5)))
    for expression, names in (("bracket = :v", {}), ("#b = :v", {"#b": "bracket"}), ("#region = :v", {}),
                              ("matchNo = :v", {})):  # fmt: skip
        refused(lambda e=expression, n=names: query(dynamodb, matches, tournament, values={":v": S("x")}, names=n,
                                                    FilterExpression=e), "[fF]ilter.*[kK]ey")  # fmt: skip
    kept = indexed(dynamodb, matches, tournament, values={":v": N(5), ":i": S(f"{tournament}-m1")},
                   FilterExpression="score = :v AND matchId = :i")  # fmt: skip
    settled(kept, ["m1"])


def test_legacy_key_conditions_follow_the_same_rules(dynamodb, matches, tournament):
    # Why: legacy KeyConditions are accepted on a multi-attribute GSI, under the rules of KeyConditionExpression.
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m1", no=1))
    dynamodb.put_item(TableName=matches, Item=match(tournament, "m2", no=2))

    def eq(value):
        return {"ComparisonOperator": "EQ", "AttributeValueList": [value]}

    full = {"tournamentId": eq(S(tournament)), "region": eq(S("NA-EAST")), "round": eq(S("SEMIFINALS")),
            "bracket": eq(S("UPPER")), "matchNo": {"ComparisonOperator": "GT", "AttributeValueList": [N(1)]}}  # fmt: skip
    settled(lambda: ids(dynamodb.query(TableName=matches, IndexName=INDEX, KeyConditions=full), tournament), ["m2"])
    refused(lambda: dynamodb.query(TableName=matches, IndexName=INDEX,
                                   KeyConditions={k: v for k, v in full.items() if k != "region"}), "HASH.*equality")
    refused(lambda: dynamodb.query(TableName=matches, IndexName=INDEX,
                                   KeyConditions={k: v for k, v in full.items() if k != "bracket"}), "RANGE.*equality")


# ======================================================================================================== paging


def test_paging_keys_hold_every_component_and_cover_the_result_once(dynamodb, matches, tournament):
    # Why: LastEvaluatedKey holds every component plus the table key; ExclusiveStartKey must be exactly that set;
    # paging a Query at any Limit returns every item once, in order.
    for n in range(7):
        dynamodb.put_item(TableName=matches, Item=match(tournament, f"m{n}", bracket=("UPPER", "LOWER")[n % 2], no=n % 3))
    everything = settled(lambda: sorted(indexed(dynamodb, matches, tournament)()), sorted(f"m{n}" for n in range(7)))
    ordered = indexed(dynamodb, matches, tournament)()
    assert sorted(ordered) == everything
    first = query(dynamodb, matches, tournament, Limit=2)
    start = first["LastEvaluatedKey"]
    assert set(start) == {"matchId", "tournamentId", "region", "round", "bracket", "matchNo"}
    for broken in ({k: v for k, v in start.items() if k != "bracket"}, {**start, "score": N(1)}):
        refused(lambda b=broken: query(dynamodb, matches, tournament, ExclusiveStartKey=b), "start.*key")
    for limit in (1, 2, 3, 6, 7, 8):
        for forward in (True, False):
            seen, start = [], {}
            while True:
                page = query(dynamodb, matches, tournament, Limit=limit, ScanIndexForward=forward, **start)
                seen += ids(page, tournament)
                if "LastEvaluatedKey" not in page:
                    break
                start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
            assert seen == (ordered if forward else ordered[::-1]), (limit, forward)


# ============================================================================== UpdateTable Create/Delete, Scan


def test_update_table_backfills_scan_reads_and_delete_lifts_the_constraints(dynamodb, unique_table_name):
    # Why: UpdateTable Create of a multi-attribute GSI backfills existing items under the sparse rules and indexes
    # later writes; Scan on it returns every indexed item and pages; Delete removes it, names it in later Query
    # errors, leaves base items untouched and lifts its components' type constraints.
    name = unique_table_name("Backfill")
    dynamodb.create_table(TableName=name, AttributeDefinitions=definitions({"matchId": "S"}),
                          KeySchema=key_schema(["matchId"]), BillingMode="PAY_PER_REQUEST")  # fmt: skip
    wait_active(dynamodb, name)
    t = "T-backfill"
    for n in range(5):
        dynamodb.put_item(TableName=name, Item=match(t, f"m{n}", no=n, note=S(f"n{n}")))
    dynamodb.put_item(TableName=name, Item=match(t, "sparse", bracket=None))
    dynamodb.update_table(TableName=name, AttributeDefinitions=definitions(TYPES),
                          GlobalSecondaryIndexUpdates=[{"Create": gsi(INDEX, HASH, RANGE)}])  # fmt: skip
    described = wait_active(dynamodb, name)
    assert described["GlobalSecondaryIndexes"][0]["KeySchema"] == key_schema(HASH, RANGE)
    dynamodb.put_item(TableName=name, Item=match(t, "later", no=9))
    settled(indexed(dynamodb, name, t), ["m0", "m1", "m2", "m3", "m4", "later"])
    scanned, start = [], {}
    while True:
        page = dynamodb.scan(TableName=name, IndexName=INDEX, Limit=2, FilterExpression="note <> :x",
                             ExpressionAttributeValues={":x": S("n0")}, **start)  # fmt: skip
        scanned += ids(page, t)
        if "LastEvaluatedKey" not in page:
            break
        assert set(page["LastEvaluatedKey"]) == {"matchId", *HASH, *RANGE}
        start = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    assert sorted(scanned) == ["later", "m1", "m2", "m3", "m4"]
    dynamodb.update_table(TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": INDEX}}])
    deadline = time.monotonic() + DEADLINE_S
    while dynamodb.describe_table(TableName=name)["Table"].get("GlobalSecondaryIndexes"):
        assert time.monotonic() < deadline, "the index was not deleted"
        time.sleep(0.2)
    assert INDEX in refused(lambda: query(dynamodb, name, t), "index")
    dynamodb.put_item(TableName=name, Item=match(t, "free", matchNo=S("text"), no=None))  # no constraint left
    assert dynamodb.scan(TableName=name, Select="COUNT", ConsistentRead=True)["Count"] == 8


def test_a_recreated_table_starts_with_an_empty_index(dynamodb, unique_table_name):
    # Why: DeleteTable, then CreateTable under the same name and schema, starts with an empty index.
    name = unique_table_name("Recreated")
    create(dynamodb, name, [gsi(INDEX, HASH, RANGE)])
    dynamodb.put_item(TableName=name, Item=match("T-re", "m1"))
    settled(indexed(dynamodb, name, "T-re"), ["m1"])
    dynamodb.delete_table(TableName=name)
    dynamodb.get_waiter("table_not_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    create(dynamodb, name, [gsi(INDEX, HASH, RANGE)])
    assert indexed(dynamodb, name, "T-re")() == []
    assert dynamodb.scan(TableName=name, IndexName=INDEX)["Count"] == 0
