"""Multi-attribute GSI keys in the engine, on both stores: up to 4 HASH and 4 RANGE attributes per GSI key.

DynamoDB's rules (developer guide, GSI.html#GSI.MultiAttributeKeys and GSI.DesignPattern.MultiAttributeKeys.html;
the project's conformance notes, section A): key-schema validation, the DescribeTable echo, sparse indexing and type
checks on every write path, Query's HASH-equality and RANGE-prefix rules, tuple ordering, paging keys, filter
restrictions, backfill by UpdateTable and deletion. A seeded model test compares every valid key condition with a
brute-force evaluation of the same items.
"""

from __future__ import annotations

import base64
import copy
import random
import re
from decimal import Decimal

import pytest

from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.storage.sqlite_store import SqliteStore
from globaltables.engine.values import encode_key_tuple
from globaltables.replication.messages import Ship, decode, encode
from globaltables.runtime.clock import ManualClock
from global_engines import REGIONS, global_engine
from store_probes import index_entry_count, items_and_index_entries

TABLE = "Matches"
INDEX = "byTournament"
# The developer guide's tournament example: HASH tournamentId, region; RANGE round, bracket, matchNo (a number).
HASH_PARTS = (("tournamentId", "S"), ("region", "S"))
RANGE_PARTS = (("round", "S"), ("bracket", "S"), ("matchNo", "N"))


def S(value):
    return {"S": value}


def N(value):
    return {"N": str(value)}


def B(raw: bytes):
    return {"B": base64.b64encode(raw).decode()}


def elements(hashes, ranges=()):
    return [{"AttributeName": n, "KeyType": "HASH"} for n in hashes] + [
        {"AttributeName": n, "KeyType": "RANGE"} for n in ranges
    ]


def definitions(**types):
    return [{"AttributeName": name, "AttributeType": kind} for name, kind in types.items()]


def gsi(name, hashes, ranges=(), projection="ALL"):
    return {"IndexName": name, "KeySchema": elements(hashes, ranges), "Projection": {"ProjectionType": projection}}


MATCH_TYPES = {"matchId": "S", **dict(HASH_PARTS), **dict(RANGE_PARTS)}
TOURNAMENT_GSI = gsi(INDEX, [n for n, _ in HASH_PARTS], [n for n, _ in RANGE_PARTS])


def table_request(types=None, gsis=(TOURNAMENT_GSI,), key="matchId", name=TABLE):
    """A CreateTable request: on-demand table `name` keyed by HASH `key`, attributes of `types`, the GSIs `gsis`."""
    request = {
        "TableName": name,
        "AttributeDefinitions": definitions(**(types or MATCH_TYPES)),
        "KeySchema": elements([key]),
        "BillingMode": "PAY_PER_REQUEST",
    }
    if gsis:
        request["GlobalSecondaryIndexes"] = list(gsis)
    return request


def create(engine, gsis=(TOURNAMENT_GSI,), types=None, name=TABLE):
    return engine.handle("CreateTable", table_request(types, gsis, name=name))


def match(match_id, tournament="WINTER2024", region="NA-EAST", round_="SEMIFINALS", bracket="UPPER", no=1, **more):
    item = {"matchId": S(match_id)}
    for name, value in (("tournamentId", tournament), ("region", region), ("round", round_), ("bracket", bracket)):
        if value is not None:
            item[name] = S(value)
    if no is not None:
        item["matchNo"] = N(no)
    item.update(more)
    return item


def put(engine, item):
    return engine.handle("PutItem", {"TableName": TABLE, "Item": item})


def query(engine, condition, values, names=None, **extra):
    request = {"TableName": TABLE, "IndexName": INDEX, "KeyConditionExpression": condition,
               "ExpressionAttributeValues": values, **extra}  # fmt: skip
    if names:
        request["ExpressionAttributeNames"] = names
    return engine.handle("Query", request)


def ids(answer):
    return [item["matchId"]["S"] for item in answer["Items"]]


def error(call) -> DynamoError:
    with pytest.raises(DynamoError) as caught:
        call()
    assert caught.value.type_name == "ValidationException", caught.value.to_body()
    return caught.value


def refused(engine, operation, request, pattern):
    """`operation` is a ValidationException matching `pattern` and changes no item nor index entry."""
    before = items_and_index_entries(engine.store)
    failure = error(lambda: engine.handle(operation, copy.deepcopy(request)))
    assert re.search(pattern, failure.message), failure.message
    assert items_and_index_entries(engine.store) == before
    return failure


TN = {":t": S("WINTER2024"), ":r": S("NA-EAST")}
HASH_EQ = "tournamentId = :t AND #region = :r"
REGION = {"#region": "region"}  # "region" is a reserved word


def in_index(engine, **values):
    return ids(query(engine, HASH_EQ, {**TN, **values}, REGION))


@pytest.fixture
def engine(make_store):
    engine = Engine(make_store(), ManualClock())
    yield engine
    engine.store.close()


@pytest.fixture
def matches(engine):
    create(engine)
    return engine


def drain(engine):
    steps = 0
    while engine.background_step():
        steps += 1
        assert steps < 10_000


# ============================================================================================== key schema rules


def test_four_hash_and_four_range_attributes_are_accepted_and_described_as_declared(engine):
    # Why: a GSI key may have up to 4 HASH then up to 4 RANGE attributes; DescribeTable echoes every element in order.
    types = {"id": "S", "h1": "S", "h2": "N", "h3": "B", "h4": "S", "r1": "N", "r2": "S", "r3": "B", "r4": "N"}
    index = gsi("wide", ["h1", "h2", "h3", "h4"], ["r1", "r2", "r3", "r4"], projection="KEYS_ONLY")
    engine.handle("CreateTable", table_request(types, [index], key="id", name="Wide"))
    described = engine.handle("DescribeTable", {"TableName": "Wide"})["Table"]
    assert described["GlobalSecondaryIndexes"][0]["KeySchema"] == index["KeySchema"]
    assert described["GlobalSecondaryIndexes"][0]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert sorted(map(tuple, (d.values() for d in described["AttributeDefinitions"]))) == sorted(types.items())
    item = {"id": S("a"), "h1": S("x"), "h2": N(2), "h3": B(b"\x00\xff"), "h4": S("y"),
            "r1": N(-1), "r2": S("z"), "r3": B(b"\x00"), "r4": N(7), "other": S("not projected")}  # fmt: skip
    engine.handle("PutItem", {"TableName": "Wide", "Item": item})
    found = engine.handle("Query", {
        "TableName": "Wide", "IndexName": "wide",
        "KeyConditionExpression": "h1 = :a AND h2 = :b AND h3 = :c AND h4 = :d AND r1 = :e AND r2 = :f AND r3 = :g "
                                  "AND r4 = :h",
        "ExpressionAttributeValues": {":a": S("x"), ":b": N(2), ":c": B(b"\x00\xff"), ":d": S("y"), ":e": N(-1),
                                      ":f": S("z"), ":g": B(b"\x00"), ":h": N(7)},
    })  # fmt: skip
    # KEYS_ONLY: the table's key plus every index key attribute.
    assert found["Items"] == [{name: value for name, value in item.items() if name != "other"}]


@pytest.mark.parametrize(
    "hashes, ranges, pattern",
    [
        (["a", "b", "c", "d", "e"], [], "HASH"),
        (["a"], ["b", "c", "d", "e", "f"], "RANGE"),
        (["a", "b", "c", "d", "e"], ["f"], "HASH"),
    ],
)
def test_more_than_four_attributes_on_a_side_is_refused(engine, hashes, ranges, pattern):
    # Why: each side of a multi-attribute GSI key has at most 4 attributes; the message names the side.
    types = {"id": "S", **{name: "S" for name in (*hashes, *ranges)}}
    refused(engine, "CreateTable", table_request(types, [gsi(INDEX, hashes, ranges)], key="id"), pattern)
    assert engine.handle("ListTables", {})["TableNames"] == []


INTERLEAVED = [
    {"AttributeName": "a", "KeyType": "HASH"},
    {"AttributeName": "b", "KeyType": "RANGE"},
    {"AttributeName": "c", "KeyType": "HASH"},
]


@pytest.mark.parametrize("key_schema", [elements(["b"], ["a"])[::-1], [*elements(["a"], ["b"]), *elements(["c"])]],
                         ids=["range-then-hash", "hash-range-hash"])
def test_a_hash_element_after_a_range_element_is_refused(engine, key_schema):
    # Why: every HASH element of a GSI key comes before every RANGE element, however few there are.
    index = {"IndexName": INDEX, "KeySchema": key_schema, "Projection": {"ProjectionType": "ALL"}}
    refused(engine, "CreateTable", table_request({"matchId": "S", "a": "S", "b": "S", "c": "S"}, [index]),
            "HASH.*precede.*RANGE")  # fmt: skip


def test_hash_elements_must_precede_range_elements_in_create_table_and_update_table(engine):
    # Why: every HASH element comes before every RANGE element, in CreateTable and UpdateTable Create alike.
    types = {"matchId": "S", "a": "S", "b": "S", "c": "S"}
    index = {"IndexName": INDEX, "KeySchema": INTERLEAVED, "Projection": {"ProjectionType": "ALL"}}
    refused(engine, "CreateTable", table_request(types, [index]), "HASH.*precede.*RANGE")
    create(engine, gsis=(), types={"matchId": "S"})
    refused(engine, "UpdateTable", {"TableName": TABLE, "AttributeDefinitions": definitions(**types),
                                    "GlobalSecondaryIndexUpdates": [{"Create": index}]}, "HASH.*precede.*RANGE")
    assert "GlobalSecondaryIndexes" not in engine.handle("DescribeTable", {"TableName": TABLE})["Table"]


@pytest.mark.parametrize(
    "key_schema",
    [
        elements(["a", "a"]),
        elements(["a"], ["a"]),
        elements(["a", "b"], ["c", "a"]),
        elements(["a"], ["b", "c", "b"]),
    ],
    ids=["hash-hash", "hash-range", "hash-and-later-range", "range-range"],
)
def test_an_attribute_appears_once_in_one_index_key(engine, key_schema):
    # Why: an attribute may be used once per index KeySchema, as HASH+HASH or HASH+RANGE alike ("same name").
    index = {"IndexName": INDEX, "KeySchema": key_schema, "Projection": {"ProjectionType": "ALL"}}
    refused(engine, "CreateTable", table_request({"id": "S", "a": "S", "b": "S", "c": "S"}, [index], key="id"),
            "same name")  # fmt: skip


def test_every_component_needs_an_attribute_definition(engine):
    # Why: every key attribute must be declared in AttributeDefinitions.
    request = table_request({"id": "S", "a": "S", "b": "S"}, [gsi(INDEX, ["a", "b"], ["c"])], key="id")
    refused(engine, "CreateTable", request, "AttributeDefinitions")


def test_tables_and_lsis_keep_one_hash_and_one_range_attribute(engine):
    # Why: multi-attribute keys are for GSIs only; a base table or LSI key stays 1 HASH plus an optional RANGE.
    base = {"TableName": TABLE, "AttributeDefinitions": definitions(id="S", a="S", b="S"), "BillingMode": "PAY_PER_REQUEST"}
    refused(engine, "CreateTable", {**base, "KeySchema": elements(["id", "a"])}, "RANGE")
    refused(engine, "CreateTable", {**base, "KeySchema": elements(["id"], ["a", "b"])}, "length less than or equal to 2")
    refused(engine, "CreateTable", {
        **base, "KeySchema": elements(["id"], ["a"]),
        "LocalSecondaryIndexes": [{"IndexName": "local", "KeySchema": elements(["id"], ["a", "b"]),
                                   "Projection": {"ProjectionType": "ALL"}}],
    }, "length less than or equal to 2")  # fmt: skip


def test_attributes_are_shared_between_indexes_with_different_roles(engine):
    # Why: roles are per index: one attribute may be HASH in one GSI and RANGE in another, beside single-attribute
    # GSIs, and base-table key attributes may be RANGE components.
    types = {"matchId": "S", "player": "S", "date": "S", "round": "S"}
    create(engine, gsis=(
        gsi("byPlayer", ["player"], ["date", "round"]),
        gsi("byRound", ["round", "date"], ["player", "matchId"]),
        gsi("byDate", ["date"]),
    ), types=types)  # fmt: skip
    engine.handle("PutItem", {"TableName": TABLE, "Item": {"matchId": S("m1"), "player": S("p1"), "date": S("2024-01-02"),
                                                           "round": S("FINAL")}})  # fmt: skip
    by_round = engine.handle("Query", {
        "TableName": TABLE, "IndexName": "byRound",
        "KeyConditionExpression": "#r = :r AND #d = :d AND player = :p AND matchId = :i",
        "ExpressionAttributeNames": {"#r": "round", "#d": "date"},
        "ExpressionAttributeValues": {":r": S("FINAL"), ":d": S("2024-01-02"), ":p": S("p1"), ":i": S("m1")},
    })  # fmt: skip
    assert ids(by_round) == ["m1"]
    keys = {i["IndexName"]: i["KeySchema"] for i in engine.handle("DescribeTable", {"TableName": TABLE})["Table"]["GlobalSecondaryIndexes"]}
    assert keys["byRound"] == elements(["round", "date"], ["player", "matchId"])


# ======================================================================================================= writes


def test_an_item_is_indexed_only_when_every_component_is_present(matches):
    # Why: sparse index: an item missing any HASH or RANGE component stays in the base table only.
    put(matches, match("full"))
    for missing in ("tournament", "region", "round_", "bracket", "no"):
        put(matches, match(f"no-{missing}", **{missing: None}))
    assert in_index(matches) == ["full"]
    assert matches.handle("Scan", {"TableName": TABLE, "IndexName": INDEX})["Count"] == 1
    assert matches.handle("Scan", {"TableName": TABLE})["Count"] == 6


@pytest.mark.parametrize("name", ["tournamentId", "round", "matchNo"])
def test_a_component_of_the_wrong_type_is_refused_on_every_write_path(matches, name):
    # Why: a present component of the wrong type is a ValidationException and nothing is written, on PutItem,
    # UpdateItem, BatchWriteItem (the whole batch) and TransactWriteItems.
    put(matches, match("kept"))
    wrong = N(5) if name != "matchNo" else S("five")
    refused(matches, "PutItem", {"TableName": TABLE, "Item": match("bad", **{name: wrong})}, "[Tt]ype")
    refused(matches, "PutItem", {"TableName": TABLE, "Item": {"matchId": S("sparse"), name: wrong}}, "[Tt]ype")
    refused(matches, "UpdateItem", {
        "TableName": TABLE, "Key": {"matchId": S("kept")}, "UpdateExpression": "SET #c = :v",
        "ExpressionAttributeNames": {"#c": name}, "ExpressionAttributeValues": {":v": wrong},
    }, "[Tt]ype")  # fmt: skip
    refused(matches, "BatchWriteItem", {"RequestItems": {TABLE: [
        {"PutRequest": {"Item": match("good-1")}},
        {"PutRequest": {"Item": match("bad", **{name: wrong})}},
        {"PutRequest": {"Item": match("good-2")}},
    ]}}, "[Tt]ype")  # fmt: skip
    with pytest.raises(DynamoError) as caught:
        matches.handle("TransactWriteItems", {"TransactItems": [
            {"Put": {"TableName": TABLE, "Item": match("good-3")}},
            {"Put": {"TableName": TABLE, "Item": match("bad", **{name: wrong})}},
        ]})  # fmt: skip
    assert "ype" in str(caught.value.to_body())
    assert sorted(ids(matches.handle("Scan", {"TableName": TABLE}))) == ["kept"]


def test_an_empty_string_component_is_refused(matches):
    # Why: a key attribute of an index cannot be an empty string, in any component.
    for name in ("region", "bracket"):
        refused(matches, "PutItem", {"TableName": TABLE, "Item": match("e", **{name: ""})}, "empty")
    assert matches.handle("Scan", {"TableName": TABLE})["Count"] == 0


def test_key_size_limits_apply_to_a_sides_components_together(matches):
    # Why (a project decision where DynamoDB's documents are silent): the 2048-byte partition key and 1024-byte
    # sort key limits hold for the components of one side together.
    put(matches, match("fits", round_="r" * 500, bracket="b" * 524))
    refused(matches, "PutItem", {"TableName": TABLE, "Item": match("long", round_="r" * 500, bracket="b" * 525)},
            "range keys has exceeded the size limit of 1024 bytes")
    put(matches, match("fits-2", tournament="t" * 1024, region="r" * 1024))
    refused(matches, "PutItem", {"TableName": TABLE, "Item": match("long", tournament="t" * 1024, region="r" * 1025)},
            "hashkey has exceeded the maximum size limit")
    assert sorted(ids(matches.handle("Scan", {"TableName": TABLE, "IndexName": INDEX}))) == ["fits", "fits-2"]


def test_updates_take_items_out_put_them_back_and_move_them(matches):
    # Why: removing any component takes the item out of the index, setting it again puts it back, and changing the
    # tuple moves the entry without leaving a stale one under the old tuple.
    put(matches, match("m1", no=1))
    before = index_entry_count(matches.store)

    def update(expression, values=None):
        request = {"TableName": TABLE, "Key": {"matchId": S("m1")}, "UpdateExpression": expression,
                   "ExpressionAttributeNames": {"#x": "region"} if "#x" in expression else None}  # fmt: skip
        request = {k: v for k, v in request.items() if v is not None}
        if values:
            request["ExpressionAttributeValues"] = values
        matches.handle("UpdateItem", request)

    update("REMOVE bracket")
    assert in_index(matches) == [] and index_entry_count(matches.store) == before - 1
    update("SET bracket = :b", {":b": S("LOWER")})
    assert in_index(matches) == ["m1"]
    update("REMOVE #x, matchNo")
    assert in_index(matches) == []
    update("SET #x = :r, matchNo = :n", {":r": S("NA-EAST"), ":n": N(9)})
    update("SET #x = :r", {":r": S("EU-WEST")})
    assert in_index(matches) == [] and index_entry_count(matches.store) == before
    moved = ids(query(matches, HASH_EQ, {":t": S("WINTER2024"), ":r": S("EU-WEST")}, REGION))
    assert moved == ["m1"]


def test_index_writes_are_charged_by_what_the_index_sees(matches):
    # Why: a GSI write costs capacity only when the index entry changes: a sparse item costs nothing, a new entry
    # one write, a moved tuple a delete plus a put.
    def units(item):
        answer = matches.handle("PutItem", {"TableName": TABLE, "Item": item, "ReturnConsumedCapacity": "INDEXES"})
        return answer["ConsumedCapacity"].get("GlobalSecondaryIndexes", {}).get(INDEX, {}).get("CapacityUnits", 0.0)

    assert units(match("m1", bracket=None)) == 0.0
    assert units(match("m1")) == 1.0
    assert units(match("m1")) == 0.0  # the same entry
    assert units(match("m1", no=2)) == 2.0  # moved: the old tuple's entry deleted, the new one put


def test_deletes_remove_the_index_entry(matches):
    # Why: DeleteItem and BatchWriteItem delete requests remove the item's index entry.
    for n in range(3):
        put(matches, match(f"m{n}", no=n))
    matches.handle("DeleteItem", {"TableName": TABLE, "Key": {"matchId": S("m0")}})
    matches.handle("BatchWriteItem", {"RequestItems": {TABLE: [{"DeleteRequest": {"Key": {"matchId": S("m1")}}}]}})
    assert in_index(matches) == ["m2"]
    assert index_entry_count(matches.store) == 1


# ========================================================================================= key condition rules


BAD_CONDITIONS = [
    ("tournamentId = :t", {":t": S("W")}, "HASH.*equality"),
    ("#region = :r", {":r": S("NA")}, "HASH.*equality"),
    ("tournamentId = :t AND #region > :r", {":t": S("W"), ":r": S("NA")}, "HASH.*equality"),
    ("tournamentId = :t AND #region BETWEEN :a AND :b", {":t": S("W"), ":a": S("A"), ":b": S("B")}, "HASH.*equality"),
    ("tournamentId = :t AND begins_with(#region, :r)", {":t": S("W"), ":r": S("NA")}, "HASH.*equality"),
    (f"{HASH_EQ} AND bracket = :b", {**TN, ":b": S("U")}, "RANGE.*equality"),
    (f"{HASH_EQ} AND #round = :o AND matchNo = :n", {**TN, ":o": S("F"), ":n": N(1)}, "RANGE.*equality"),
    (f"{HASH_EQ} AND #round > :o AND bracket < :b", {**TN, ":o": S("F"), ":b": S("U")}, "RANGE.*equality"),
    (f"{HASH_EQ} AND #round < :o AND bracket = :b", {**TN, ":o": S("F"), ":b": S("U")}, "RANGE.*equality"),
    (f"{HASH_EQ} AND begins_with(#round, :o) AND bracket = :b", {**TN, ":o": S("F"), ":b": S("U")},
     "RANGE.*equality"),
    (f"{HASH_EQ} AND tournamentId = :t", TN, "one condition per key"),
    ("tournamentId = :t AND #region = :r", {":t": N(1), ":r": S("NA")}, "type"),
    (f"{HASH_EQ} AND #round = :o AND bracket = :b AND matchNo = :n", {**TN, ":o": S("F"), ":b": S("U"), ":n": S("1")},
     "type"),
    (f"{HASH_EQ} AND #round = :o AND bracket = :b AND begins_with(matchNo, :n)",
     {**TN, ":o": S("F"), ":b": S("U"), ":n": N(1)}, "type"),
]  # fmt: skip


@pytest.mark.parametrize("condition, values, pattern", BAD_CONDITIONS)
def test_key_conditions_outside_the_rules_are_refused(matches, condition, values, pattern):
    # Why: every HASH attribute needs `=`; RANGE conditions form a left prefix with only the last one a range; values
    # must have the component's type.
    names = {name: value for name, value in {"#region": "region", "#round": "round"}.items() if name in condition}
    failure = error(lambda: query(matches, condition, values, names or None))
    assert re.search(pattern, failure.message), failure.message


def test_consistent_reads_are_refused_on_a_multi_attribute_gsi(matches):
    # Why: a GSI is eventually consistent, whatever its key.
    failure = error(lambda: query(matches, HASH_EQ, TN, REGION, ConsistentRead=True))
    assert "onsistent" in failure.message


def test_valid_conditions_in_any_clause_order_and_through_aliases(matches):
    # Why: only component positions matter, not clause order; #name aliases are resolved before the rules apply; an
    # inequality on the first RANGE attribute with the later ones unmentioned is valid.
    put(matches, match("a", round_="FINAL", bracket="UPPER", no=1))
    put(matches, match("b", round_="SEMIFINALS", bracket="LOWER", no=2))
    put(matches, match("c", round_="SEMIFINALS", bracket="UPPER", no=3))
    put(matches, match("d", round_="SEMIFINALS", bracket="UPPER", no=4))
    reordered = query(matches, "#n > :n AND bracket = :b AND #x = :r AND #o = :o AND #t = :t",
                      {**TN, ":o": S("SEMIFINALS"), ":b": S("UPPER"), ":n": N(3)},
                      {"#n": "matchNo", "#x": "region", "#o": "round", "#t": "tournamentId"})  # fmt: skip
    assert ids(reordered) == ["d"]
    assert ids(query(matches, f"{HASH_EQ} AND #o >= :o", {**TN, ":o": S("G")}, {**REGION, "#o": "round"})) == \
        ["b", "c", "d"]  # fmt: skip


def test_results_follow_the_range_tuple_in_each_components_own_order(matches):
    # Why: results sort by the RANGE tuple, one component at a time (N numerically), reversed by
    # ScanIndexForward=false; an earlier component's condition excludes other values there.
    rows = [("QUARTER", "UPPER", 10), ("FINAL", "UPPER", 2), ("QUARTER", "LOWER", 9), ("QUARTER", "UPPER", -3),
            ("QUARTERS", "A", 1), ("QUARTER", "UPPER", 2.5)]  # fmt: skip
    for n, (round_, bracket, no) in enumerate(rows):
        put(matches, match(f"m{n}", round_=round_, bracket=bracket, no=no))
    expected = [f"m{n}" for n, row in sorted(enumerate(rows), key=lambda pair: pair[1])]
    assert in_index(matches) == expected
    assert ids(query(matches, HASH_EQ, TN, REGION, ScanIndexForward=False)) == expected[::-1]
    upper = ids(query(matches, f"{HASH_EQ} AND #o = :o AND bracket = :b", {**TN, ":o": S("QUARTER"), ":b": S("UPPER")},
                      {**REGION, "#o": "round"}))  # fmt: skip
    assert upper == ["m3", "m5", "m0"]  # -3 < 2.5 < 10; FINAL, LOWER and QUARTERS excluded
    prefix = ids(query(matches, f"{HASH_EQ} AND begins_with(#o, :o)", {**TN, ":o": S("QUARTER")}, {**REGION, "#o": "round"}))
    assert prefix == ["m2", "m3", "m5", "m0", "m4"]


def test_a_filter_may_not_use_the_index_key_attributes(matches):
    # Why: a Query's FilterExpression may not reference any HASH or RANGE attribute of the queried index, even
    # through an alias; non-key attributes and table key attributes that are no component are allowed.
    put(matches, match("m1", score=N(5)))
    for expression, names in (("bracket = :v", None), ("#b = :v", {"#b": "bracket"}), ("#x = :v", {"#x": "region"}),
                              ("matchNo = :v", None)):  # fmt: skip
        failure = error(lambda e=expression, n=names: query(
            matches, HASH_EQ, {**TN, ":v": S("x")}, {**REGION, **(n or {})}, FilterExpression=e))  # fmt: skip
        assert re.search("[fF]ilter.*[kK]ey", failure.message), failure.message
    kept = query(matches, HASH_EQ, {**TN, ":v": N(5), ":i": S("m1")}, REGION,
                 FilterExpression="score = :v AND matchId = :i")  # fmt: skip
    assert ids(kept) == ["m1"]
    legacy = {"TableName": TABLE, "IndexName": INDEX, "KeyConditions": {
        "tournamentId": {"ComparisonOperator": "EQ", "AttributeValueList": [S("WINTER2024")]},
        "region": {"ComparisonOperator": "EQ", "AttributeValueList": [S("NA-EAST")]}}}  # fmt: skip
    on_key = {"QueryFilter": {"matchNo": {"ComparisonOperator": "GT", "AttributeValueList": [N(0)]}}}
    failure = error(lambda: matches.handle("Query", {**legacy, **on_key}))
    assert re.search("[fF]ilter.*[kK]ey", failure.message), failure.message
    off_key = {"QueryFilter": {"score": {"ComparisonOperator": "GT", "AttributeValueList": [N(0)]}}}
    assert ids(matches.handle("Query", {**legacy, **off_key})) == ["m1"]


def test_legacy_key_conditions_follow_the_same_rules(matches):
    # Why: legacy KeyConditions are accepted on a multi-attribute GSI, under the same rules.
    put(matches, match("m1", no=1))
    put(matches, match("m2", no=2))

    def legacy(conditions):
        return matches.handle("Query", {"TableName": TABLE, "IndexName": INDEX, "KeyConditions": conditions})

    eq = lambda value: {"ComparisonOperator": "EQ", "AttributeValueList": [value]}  # noqa: E731
    full = {"tournamentId": eq(S("WINTER2024")), "region": eq(S("NA-EAST")), "round": eq(S("SEMIFINALS")),
            "bracket": eq(S("UPPER")), "matchNo": {"ComparisonOperator": "GT", "AttributeValueList": [N(1)]}}  # fmt: skip
    assert ids(legacy(full)) == ["m2"]
    without_region = {k: v for k, v in full.items() if k != "region"}
    assert re.search("HASH.*equality", error(lambda: legacy(without_region)).message)
    gap = {k: v for k, v in full.items() if k != "bracket"}
    assert re.search("RANGE.*equality", error(lambda: legacy(gap)).message)


# ============================================================================================== paging keys


def test_paging_keys_hold_every_component_and_the_table_key(matches):
    # Why: LastEvaluatedKey of an index holds every component plus the table key; ExclusiveStartKey must be exactly
    # that set; paging at any Limit returns every item once, in Query and Scan.
    for n in range(7):
        put(matches, match(f"m{n}", bracket=("UPPER", "LOWER")[n % 2], no=n % 3))
    everything = in_index(matches)
    first = query(matches, HASH_EQ, TN, REGION, Limit=2)
    assert set(first["LastEvaluatedKey"]) == {"matchId", "tournamentId", "region", "round", "bracket", "matchNo"}
    start = first["LastEvaluatedKey"]
    for broken in ({k: v for k, v in start.items() if k != "bracket"}, {**start, "score": N(1)}):
        failure = error(lambda b=broken: query(matches, HASH_EQ, TN, REGION, ExclusiveStartKey=b))
        assert re.search("start.*key", failure.message), failure.message
    for limit in range(1, 9):
        for forward in (True, False):
            seen, start = [], None
            while True:
                extra = {"ExclusiveStartKey": start} if start else {}
                page = query(matches, HASH_EQ, TN, REGION, Limit=limit, ScanIndexForward=forward, **extra)
                seen += ids(page)
                start = page.get("LastEvaluatedKey")
                if start is None:
                    break
            assert seen == (everything if forward else everything[::-1])
        scanned, start = [], None
        while True:
            extra = {"ExclusiveStartKey": start} if start else {}
            page = matches.handle("Scan", {"TableName": TABLE, "IndexName": INDEX, "Limit": limit, **extra})
            scanned += ids(page)
            start = page.get("LastEvaluatedKey")
            if start is None:
                break
        assert sorted(scanned) == sorted(everything)


# ================================================================================== UpdateTable and DeleteTable


def test_update_table_backfills_a_multi_attribute_gsi_and_deletes_it(engine):
    # Why: UpdateTable Create backfills existing items (sparse rules apply) and indexes later writes; Delete removes
    # the index, leaves base items alone and lifts its components' type constraints.
    create(engine, gsis=(), types={"matchId": "S"})
    put(engine, match("old"))
    put(engine, match("sparse", bracket=None))
    put(engine, match("odd", no=None, matchNo=S("not a number")))  # a violation: skipped by the backfill
    engine.handle("UpdateTable", {
        "TableName": TABLE, "AttributeDefinitions": definitions(**MATCH_TYPES),
        "GlobalSecondaryIndexUpdates": [{"Create": TOURNAMENT_GSI}],
    })  # fmt: skip
    drain(engine)
    status = engine.handle("DescribeTable", {"TableName": TABLE})["Table"]["GlobalSecondaryIndexes"][0]
    assert status["IndexStatus"] == "ACTIVE" and status["KeySchema"] == TOURNAMENT_GSI["KeySchema"]
    put(engine, match("new", no=2))
    assert in_index(engine) == ["old", "new"]
    engine.handle("UpdateTable", {"TableName": TABLE, "GlobalSecondaryIndexUpdates": [{"Delete": {"IndexName": INDEX}}]})
    drain(engine)
    assert INDEX in error(lambda: in_index(engine)).message
    put(engine, match("free", no=None, matchNo=S("text")))  # no type constraint left
    assert engine.handle("Scan", {"TableName": TABLE})["Count"] == 5
    assert index_entry_count(engine.store) == 0


def test_update_table_create_needs_definitions_for_every_component(engine):
    # Why: UpdateTable Create of a multi-attribute GSI needs an AttributeDefinition for each of its components.
    create(engine, gsis=(), types={"matchId": "S"})
    partial = {name: MATCH_TYPES[name] for name in ("matchId", "tournamentId", "region", "round")}
    refused(engine, "UpdateTable", {"TableName": TABLE, "AttributeDefinitions": definitions(**partial),
                                    "GlobalSecondaryIndexUpdates": [{"Create": TOURNAMENT_GSI}]}, "AttributeDefinitions")
    assert "GlobalSecondaryIndexes" not in engine.handle("DescribeTable", {"TableName": TABLE})["Table"]


def test_a_recreated_table_starts_with_an_empty_index(matches):
    # Why: DeleteTable then CreateTable under the same name and schema starts with an empty index.
    put(matches, match("m1"))
    matches.handle("DeleteTable", {"TableName": TABLE})
    drain(matches)
    create(matches)
    assert in_index(matches) == []


def test_a_multi_attribute_gsi_survives_a_restart(tmp_path):
    # Why: a table definition persists; a reopened region reads its multi-attribute keys the same way.
    path = tmp_path / "region.db"
    engine = Engine(SqliteStore(path), ManualClock())
    create(engine)
    put(engine, match("m1", no=2))
    put(engine, match("m2", no=1))
    engine.store.close()
    reopened = Engine(SqliteStore(path), ManualClock())
    try:
        assert in_index(reopened) == ["m2", "m1"]
        put(reopened, match("m3", no=0))
        assert in_index(reopened) == ["m3", "m2", "m1"]
        error(lambda: put(reopened, match("bad", no=None, matchNo=S("x"))))
    finally:
        reopened.store.close()


# ================================================================================================= replication


def _ship(source, dest, table):
    """Every pending record from source to dest, through the replication codec as a link ships them."""
    for lane in range(source.replica.lanes(table)):
        after = dest.replica.applied_position(source.region, table, lane)
        records = source.replica.local_records(table, lane, after, 10_000)
        if records:
            shipped = decode(encode(Ship(table, lane, 0, after, tuple(records)))).records
            dest.replica.apply_replicated(source.region, table, lane, list(shipped))


def test_replicated_applies_maintain_the_index_and_a_losing_version_leaves_no_entry(make_store):
    # Why: a global table's replicas each index what they hold: replicated puts, updates and deletes move index
    # entries as local writes do, and the version that loses a conflict leaves no entry under its tuple.
    regions = []
    for offset, name in enumerate(REGIONS):
        engine, _clock = global_engine(name, offset_s=offset * 0.001, store=make_store())
        create(engine)
        engine.replica.make_global(TABLE, REGIONS)
        regions.append(engine)
    a, b = regions
    put(a, match("shared", no=1))
    _ship(a, b, TABLE)
    put(a, match("raced", round_="FINAL", no=1))
    put(b, match("raced", round_="QUARTER", no=7))  # concurrent: one of the two tuples wins everywhere
    b.handle("UpdateItem", {"TableName": TABLE, "Key": {"matchId": S("shared")}, "UpdateExpression": "SET matchNo = :n",
                            "ExpressionAttributeValues": {":n": N(5)}})  # fmt: skip
    put(b, match("only-b", bracket="LOWER"))
    put(a, match("gone", no=3))
    _ship(a, b, TABLE)
    a.handle("DeleteItem", {"TableName": TABLE, "Key": {"matchId": S("gone")}})
    for _ in range(2):
        _ship(a, b, TABLE)
        _ship(b, a, TABLE)
    winner = a.handle("GetItem", {"TableName": TABLE, "Key": {"matchId": S("raced")}})["Item"]
    assert b.handle("GetItem", {"TableName": TABLE, "Key": {"matchId": S("raced")}})["Item"] == winner
    tuples = {"shared": ("SEMIFINALS", "UPPER", 5), "only-b": ("SEMIFINALS", "LOWER", 1),
              "raced": (winner["round"]["S"], "UPPER", int(winner["matchNo"]["N"]))}  # fmt: skip
    expected = sorted(tuples, key=tuples.get)
    for engine in regions:
        answer = query(engine, HASH_EQ, TN, REGION)
        assert ids(answer) == expected
        assert next(item for item in answer["Items"] if item["matchId"]["S"] == "raced") == winner
        assert next(item for item in answer["Items"] if item["matchId"]["S"] == "shared")["matchNo"] == N(5)
        assert index_entry_count(engine.store) == 3  # no entry under the losing tuple, none for the deleted item
    assert query(a, HASH_EQ, TN, REGION)["Items"] == query(b, HASH_EQ, TN, REGION)["Items"]


# ===================================================================================== model-based comparison


def _ordered(value: dict):
    kind, inner = next(iter(value.items()))
    if kind == "N":
        return Decimal(inner)
    if kind == "S":
        return inner.encode("utf-8")
    return base64.b64decode(inner)


def _random_value(rng: random.Random, kind: str) -> dict:
    if kind == "N":
        return N(rng.choice(["-10", "-1.5", "0", "0.25", "1", "2", "10", "1E+3"]))
    if kind == "S":
        return S(rng.choice(["a", "ab", "a\x00", "b", "\u00e9", "a b"]))
    return B(rng.choice([b"\x00", b"\x00\x00", b"\x01", b"\xff", b"\x00\xff", b"ab"]))


def _model_query(items, hash_values, conditions, forward):
    """Brute force: items having every component, HASH equal, RANGE conditions met, sorted by the RANGE tuple."""
    kept = []
    for item in items:
        if any(name not in item for name, _ in (*MODEL_HASH, *MODEL_RANGE)):
            continue
        if any(item[name] != value for (name, _), value in zip(MODEL_HASH, hash_values)):
            continue
        ok = True
        for (name, kind), (op, values) in zip(MODEL_RANGE, conditions):
            have, want = _ordered(item[name]), [_ordered(v) for v in values]
            if op == "=":
                ok &= have == want[0]
            elif op == "<":
                ok &= have < want[0]
            elif op == "<=":
                ok &= have <= want[0]
            elif op == ">":
                ok &= have > want[0]
            elif op == ">=":
                ok &= have >= want[0]
            elif op == "BETWEEN":
                ok &= want[0] <= have <= want[1]
            else:
                ok &= have.startswith(want[0])
        if ok:
            kept.append(item)
    kept.sort(key=lambda item: tuple(_ordered(item[name]) for name, _ in MODEL_RANGE), reverse=not forward)
    return [tuple(_ordered(item[name]) for name, _ in MODEL_RANGE) for item in kept], sorted(i["id"]["S"] for i in kept)


MODEL_HASH = (("h1", "S"), ("h2", "N"))
MODEL_RANGE = (("r1", "N"), ("r2", "S"), ("r3", "B"))


@pytest.mark.parametrize("seed", range(4))
def test_every_valid_key_condition_matches_a_brute_force_model(engine, seed):
    # Why: tuple order is component by component in each type's order (including NUL bytes and numbers), and every
    # valid HASH-equality/RANGE-prefix condition returns exactly the matching items, in order, at any page size.
    rng = random.Random(seed)
    types = {"id": "S", **dict(MODEL_HASH), **dict(MODEL_RANGE)}
    index = gsi("model", [n for n, _ in MODEL_HASH], [n for n, _ in MODEL_RANGE])
    engine.handle("CreateTable", table_request(types, [index], key="id", name="Model"))
    hashes = [(S("p"), N(1)), (S("p"), N(2)), (S("q"), N(1))]
    items = []
    for n in range(120):
        item = {"id": S(f"i{n:03d}")}
        item.update(dict(zip([name for name, _ in MODEL_HASH], rng.choice(hashes))))
        for name, kind in MODEL_RANGE:
            if rng.random() < 0.95:
                item[name] = _random_value(rng, kind)
        items.append(item)
        engine.handle("PutItem", {"TableName": "Model", "Item": item})
    for _ in range(60):
        hash_values = rng.choice(hashes)
        depth = rng.randint(0, len(MODEL_RANGE))
        conditions = [("=", [_random_value(rng, kind)]) for _, kind in MODEL_RANGE[: max(depth - 1, 0)]]
        if depth:
            kind = MODEL_RANGE[depth - 1][1]
            ops = ["=", "<", "<=", ">", ">=", "BETWEEN"] + (["BEGINS_WITH"] if kind != "N" else [])
            op = rng.choice(ops)
            values = [_random_value(rng, kind)] + ([_random_value(rng, kind)] if op == "BETWEEN" else [])
            if op == "BETWEEN":
                values.sort(key=_ordered)
            conditions.append((op, values))
        clauses, bound = ["h1 = :h1", "h2 = :h2"], {":h1": hash_values[0], ":h2": hash_values[1]}
        for position, ((name, _), (op, values)) in enumerate(zip(MODEL_RANGE, conditions)):
            keys = [f":v{position}_{k}" for k in range(len(values))]
            bound.update(zip(keys, values))
            clauses.append(
                f"{name} BETWEEN {keys[0]} AND {keys[1]}" if op == "BETWEEN"
                else f"begins_with({name}, {keys[0]})" if op == "BEGINS_WITH" else f"{name} {op} {keys[0]}"
            )  # fmt: skip
        rng.shuffle(clauses)
        forward = rng.random() < 0.5
        expected_order, expected_ids = _model_query(items, hash_values, conditions, forward)
        limit = rng.choice([None, 1, 3, 7])
        seen, start = [], None
        while True:
            call = {"TableName": "Model", "IndexName": "model", "KeyConditionExpression": " AND ".join(clauses),
                    "ExpressionAttributeValues": bound, "ScanIndexForward": forward}  # fmt: skip
            if limit:
                call["Limit"] = limit
            if start:
                call["ExclusiveStartKey"] = start
            page = engine.handle("Query", call)
            seen += page["Items"]
            start = page.get("LastEvaluatedKey")
            if start is None:
                break
        assert [tuple(_ordered(i[name]) for name, _ in MODEL_RANGE) for i in seen] == expected_order, clauses
        assert sorted(i["id"]["S"] for i in seen) == expected_ids


def test_the_tuple_encoding_orders_like_the_tuples():
    # Why: the storage orders multi-attribute keys by their encoded bytes, so byte order must be tuple order, with
    # NUL bytes inside values and a shorter component before a longer one it starts.
    rng = random.Random(7)
    kinds = ("S", "N", "B")
    for _ in range(3000):
        width = rng.randint(1, 4)
        shape = [rng.choice(kinds) for _ in range(width)]
        a = [_random_value(rng, kind) for kind in shape]
        b = [_random_value(rng, kind) for kind in shape]
        left, right = tuple(map(_ordered, a)), tuple(map(_ordered, b))
        assert (encode_key_tuple(a) < encode_key_tuple(b)) == (left < right), (a, b)
        assert (encode_key_tuple(a) == encode_key_tuple(b)) == (left == right), (a, b)
