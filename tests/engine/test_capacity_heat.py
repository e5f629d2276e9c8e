"""Split for heat on virtual time (engine/partitions.py heat_cut, engine/throughput.py Partition; docs/capacity.md,
decision 4): a partition that stays near its limit for HEAT_SPLIT_S seconds splits in two where its observed load
balances, so two hot keys that shared it get a partition each; one hot key, a hot item collection of a table with
a local secondary index, and a collection written with increasing sort keys never gain from a split.

The items are 40 KB (40 write units), so a partition's 1,000 write units a second are 25 writes and a few minutes
of virtual load are a few thousand requests."""

from __future__ import annotations

import random

from capacity_drive import keys_in_partitions, modelled, sized_put, table_request
from engine_calls import call
from globaltables.engine import partitions
from globaltables.engine.storage.records import partition_hash
from globaltables.engine.throttling import ThrottlingException
from globaltables.region.capacity_metrics import capacity_document

ITEM = 40 * 1024
UNITS = 40  # write units of one ITEM
CAP_PUTS = partitions.PARTITION_WRITE_UNITS / UNITS  # 25 writes a second on one partition
OFFERED = 30  # per hot key, a second: above what one partition takes
SPLIT_S = partitions.HEAT_SPLIT_S


def drive_keys(engine, clock, seconds: float, keys: list[str], make) -> dict[str, int]:
    """Offer OFFERED puts a second of each key, in turn, for `seconds` of virtual time; the puts served, per key."""
    served = dict.fromkeys(keys, 0)
    rate = OFFERED * len(keys)
    for n in range(round(seconds * rate)):
        clock.advance(1.0 / rate)
        key = keys[n % len(keys)]
        try:
            engine.handle("PutItem", make(n, key))
            served[key] += 1
        except ThrottlingException:
            pass
    return served


def test_two_hot_keys_sharing_a_partition_get_a_partition_each_after_the_split_delay_and_not_before():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Two"))
    table = engine.tables["Two"]
    first, _, _, _, second = keys_in_partitions(table, 4, 2)[:5]  # both in partition 0 of the four
    resource_of = lambda: engine.throughput.tables["Two"].resources[None]
    make = lambda n, key: sized_put("Two", key, ITEM)
    drive_keys(engine, clock, 2.0, [first, second], make)  # spends the second the partition starts with
    before = drive_keys(engine, clock, SPLIT_S - 10, [first, second], make)
    # Sharing one partition: together they are served its 1,000 units a second, within 2 %, and no split yet.
    assert abs(sum(before.values()) - CAP_PUTS * (SPLIT_S - 10)) <= 0.02 * CAP_PUTS * (SPLIT_S - 10)
    assert min(before.values()) > 0
    assert (resource_of().count, resource_of().heat_splits) == (4, 0)
    drive_keys(engine, clock, 20.0, [first, second], make)  # the split delay passes: the partition splits
    assert (resource_of().count, resource_of().heat_splits) == (5, 1)
    resource = resource_of()
    assert resource.partition(partition_hash(table.key.encode_partition({"S": first}))) is not resource.partition(
        partition_hash(table.key.encode_partition({"S": second}))
    )
    consumed = resource.consumed["write"]
    after = drive_keys(engine, clock, 10.0, [first, second], make)
    # Each key now has a partition of its own and gets the full per-key cap, 1,000 units a second within 2 %.
    for key in (first, second):
        assert abs(after[key] - CAP_PUTS * 10) <= 0.02 * CAP_PUTS * 10, (key, after)
    # The metrics count what was served, as before the split.
    assert resource.consumed["write"] - consumed == sum(after.values()) * UNITS
    document = capacity_document(engine)["tables"]["Two"]
    assert document["ConsumedWriteCapacityUnits"] == resource.consumed["write"]
    assert document["WriteKeyRangeThroughputThrottleEvents"] > 0
    # Placement stays deterministic and contiguous: every hash still has exactly one partition, in range order.
    assert resource.starts == sorted(resource.starts) and resource.starts[0] == 0
    assert len(resource.starts) == len(resource.parts) == resource.count
    description = call(engine, "DescribeTable", {"TableName": "Two"})["Table"]
    assert description["TableStatus"] == "ACTIVE" and description["BillingModeSummary"]["BillingMode"] == (
        "PAY_PER_REQUEST"
    )


def test_one_hot_key_stays_capped_at_1000_write_units_a_second_after_any_time():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("One"))
    make = lambda n, key: sized_put("One", key, ITEM)
    drive_keys(engine, clock, 2.0, ["hot"], make)
    drive_keys(engine, clock, 3 * SPLIT_S, ["hot"], make)  # three split delays of sustained heat
    served = drive_keys(engine, clock, 10.0, ["hot"], make)
    assert abs(served["hot"] - CAP_PUTS * 10) <= 0.02 * CAP_PUTS * 10
    resource = engine.throughput.tables["One"].resources[None]
    assert (resource.count, resource.heat_splits) == (4, 0)  # one key carries the heat: no split


def collection_table(name: str, lsi: bool) -> dict:
    request = table_request(
        name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "at", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    if lsi:
        request["LocalSecondaryIndexes"] = [
            {
                "IndexName": "byAt",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ]
    else:
        request["AttributeDefinitions"] = request["AttributeDefinitions"][:2]
    return request


def collection_put(table: str, pk: str, sk: str, size: int = ITEM) -> dict:
    body = sized_put(table, pk, size - len("sk") - len(sk) - len("at") - len(sk))
    body["Item"]["sk"] = {"S": sk}
    body["Item"]["at"] = {"S": sk}
    return body


def test_a_hot_item_collection_of_a_table_with_a_local_secondary_index_never_splits():
    engine, clock = modelled()
    call(engine, "CreateTable", collection_table("Lsi", lsi=True))
    table = engine.tables["Lsi"]
    order = random.Random(7)
    # Two hot collections sharing partition 0, each written at random sort keys: the partition may split between
    # them (collections are what a split distributes), never inside one.
    first, _, _, _, second = keys_in_partitions(table, 4, 2)[:5]
    make = lambda n, key: collection_put("Lsi", key, f"{order.randrange(64):02d}")
    drive_keys(engine, clock, 2.0, [first], make)
    drive_keys(engine, clock, 3 * SPLIT_S, [first], make)
    resource = engine.throughput.tables["Lsi"].resources[None]
    assert (resource.count, resource.heat_splits) == (4, 0)
    consumed = resource.consumed["write"]
    drive_keys(engine, clock, 10.0, [first], make)
    # One collection is capped at one partition: 1,000 units a second (table and LSI), within 2 %.
    assert abs(resource.consumed["write"] - consumed - 10_000) <= 200
    drive_keys(engine, clock, SPLIT_S + 10, [first, second], make)
    assert (resource.count, resource.heat_splits) == (5, 1)  # two collections: the cut falls between them
    assert resource.partition(partition_hash(table.key.encode_partition({"S": first}))) is not resource.partition(
        partition_hash(table.key.encode_partition({"S": second}))
    )


def test_a_collection_written_with_increasing_sort_keys_gains_nothing_from_a_split():
    engine, clock = modelled()
    call(engine, "CreateTable", collection_table("Sequential", lsi=False))
    make = lambda n, key: collection_put("Sequential", key, f"{n:012d}")  # each write's sort key above the last
    drive_keys(engine, clock, 2.0, ["log"], make)
    drive_keys(engine, clock, 3 * SPLIT_S, ["log"], make)
    resource = engine.throughput.tables["Sequential"].resources[None]
    consumed = resource.consumed["write"]
    served = drive_keys(engine, clock, 10.0, ["log"], make)
    assert abs(served["log"] - CAP_PUTS * 10) <= 0.02 * CAP_PUTS * 10
    assert abs(resource.consumed["write"] - consumed - 10_000) <= 200
    assert (resource.count, resource.heat_splits) == (4, 0)


def test_a_partition_below_its_limit_never_splits():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Warm"))
    keys = keys_in_partitions(engine.tables["Warm"], 4, 2)
    make = lambda n, key: sized_put("Warm", key, ITEM)
    # 8 keys at 2 puts a second each: 160 units a second on each partition, far below its 1,000.
    rate = 16
    for n in range(round(2 * SPLIT_S * rate)):
        clock.advance(1.0 / rate)
        engine.handle("PutItem", make(n, keys[n % len(keys)]))
    resource = engine.throughput.tables["Warm"].resources[None]
    assert (resource.count, resource.heat_splits) == (4, 0)


def test_the_split_point_balances_the_observed_load_and_never_cuts_one_hash():
    assert partitions.heat_cut({}) is None
    assert partitions.heat_cut({100: 5.0}) is None  # one key carries the heat
    cut = partitions.heat_cut({100: 1.0, 200: 1.0})
    assert 100 < cut <= 200
    # A dominant key is isolated from the rest (it may get a partition of its own; it stays capped there).
    cut = partitions.heat_cut({10: 0.1, 20: 0.1, 500: 5.0})
    assert 20 < cut <= 500
    cut = partitions.heat_cut({10: 1.0, 20: 1.0, 30: 1.0, 40: 1.0})
    assert 20 < cut <= 30
    assert partitions.uniform_starts(4) == [0, 2**30, 2**31, 3 * 2**30]
    for h in (0, 2**30 - 1, 2**30, 2**32 - 1):
        assert partitions.place(h, 4, None) == partitions.place(h, 4, partitions.uniform_starts(4))
