"""Partitions on virtual time (engine/partitions.py, engine/throughput.py): how many, where a key lives, and the
per-partition limit of 1,000 write / 3,000 read units a second shared as r/3000 + w/1000 <= 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from capacity_drive import drive, keys_in_partitions, modelled, sized_put, table_request
from engine_calls import call
from globaltables.engine import partitions
from globaltables.engine.storage.records import partition_hash
from globaltables.engine.throttling import ThrottlingException

SRC = Path(__file__).resolve().parents[2] / "src"


def warm(engine, clock, request, rate: float) -> None:
    """One virtual second of the load: spends the second of throughput every bucket starts with."""
    drive(engine, clock, 1.0, rate, request)


def test_one_key_is_capped_at_1000_write_units_a_second():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Hot"))
    request = lambda n: ("PutItem", sized_put("Hot", "the-key", 4096))
    warm(engine, clock, request, 500)
    served, refused = drive(engine, clock, 10.0, 500, request)  # 2,000 units a second offered
    assert abs(served * 4 - 10_000) <= 200  # 1,000 units a second, within 2 %
    assert {type(e) for e in refused} == {ThrottlingException}
    assert refused[0].to_body()["throttlingReasons"] == [
        {
            "reason": "TableWriteKeyRangeThroughputExceeded",
            "resource": "arn:aws:dynamodb:us-east-1:000000000000:table/Hot",
        }
    ]


def test_a_new_on_demand_table_takes_4000_write_units_a_second_over_its_four_partitions():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Wide"))
    keys = keys_in_partitions(engine.tables["Wide"], 4, 25)  # uniform: as many keys, and writes, in each
    request = lambda n: ("PutItem", sized_put("Wide", keys[n % len(keys)], 4096))
    served, refused = drive(engine, clock, 10.0, 1000, request)
    assert (served, refused) == (10_000, [])  # 4,000 units a second, 1,000 in each partition: all served
    warm(engine, clock, request, 2000)  # twice that for a second spends what the partitions had left
    served, refused = drive(engine, clock, 10.0, 1100, request)
    assert abs(served * 4 - 40_000) <= 800 and refused  # 10 % more than four partitions take: the excess throttled


def test_a_10_kb_item_costs_10_write_units_and_caps_its_key_at_100_writes_a_second():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Big"))
    answer = call(engine, "PutItem", {**sized_put("Big", "k", 10 * 1024), "ReturnConsumedCapacity": "TOTAL"})
    assert answer["ConsumedCapacity"] == {"TableName": "Big", "CapacityUnits": 10.0}
    request = lambda n: ("PutItem", sized_put("Big", "k", 10 * 1024))
    warm(engine, clock, request, 200)
    served, _ = drive(engine, clock, 10.0, 200, request)
    assert abs(served - 1000) <= 20


def test_reads_and_writes_share_a_partition_as_a_linear_combination():
    engine, clock = modelled()
    call(engine, "CreateTable", table_request("Mixed"))
    call(engine, "PutItem", sized_put("Mixed", "k", 8192))  # 8 units to write, 2 to read strongly
    write = ("PutItem", sized_put("Mixed", "k", 8192))
    read = ("GetItem", {"TableName": "Mixed", "Key": {"pk": {"S": "k"}}, "ConsistentRead": True})
    served = {"PutItem": 0, "GetItem": 0}

    def write_or_read(n):
        operation, body = write if n % 7 == 0 else read
        served[operation] += 1
        return operation, body

    # Offered: 125 writes (1,000 units) and 750 reads (1,500 units) a second, 1.5 partitions' worth.
    drive(engine, clock, 1.0, 1750, write_or_read)  # spends the second the partition starts with
    served.update(PutItem=0, GetItem=0)
    _, refused = drive(engine, clock, 10.0, 875, write_or_read)
    for error in refused:
        served["PutItem" if "Write" in error.to_body()["throttlingReasons"][0]["reason"] else "GetItem"] -= 1
    # Both were served, and together they used one partition: w/1000 + r/3000 = 1 a second, within 2 %. (Two
    # buckets, 1,000 write and 3,000 read units apart, would have served every request.)
    used = served["PutItem"] * 8 / 1000 + served["GetItem"] * 2 / 3000
    assert served["PutItem"] > 0 and served["GetItem"] > 0
    assert abs(used - 10.0) <= 0.2


def test_partition_counts():
    assert partitions.provisioned_count(0, 0, 0) == 1
    assert partitions.provisioned_count(3000, 1000, 0) == 2  # ceil(3000/3000 + 1000/1000)
    assert partitions.provisioned_count(5, 5, 25 * 1024**3) == 3  # 25 GB: three partitions of at most 10 GB
    assert partitions.on_demand_count(6000, 2000, 0) == 4  # a new on-demand table (previous peak 6,000 / 2,000)
    assert partitions.partition_of(0, 4) == 0 and partitions.partition_of(2**32 - 1, 4) == 3
    # Contiguous hash ranges: doubling the count splits every partition in two.
    assert all(partitions.partition_of(h, 8) // 2 == partitions.partition_of(h, 4) for h in range(0, 2**32, 2**20))


def test_partitions_are_split_never_merged():
    engine, _clock = modelled()
    call(engine, "CreateTable", table_request("Shrinks", provisioned=(3000, 3000)))
    call(engine, "GetItem", {"TableName": "Shrinks", "Key": {"pk": {"S": "a"}}})  # the model sees the table
    table = engine.throughput.tables["Shrinks"].resources[None]
    assert table.count == 4  # ceil(3000/3000 + 3000/1000)
    call(
        engine,
        "UpdateTable",
        {"TableName": "Shrinks", "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}},
    )
    call(engine, "GetItem", {"TableName": "Shrinks", "Key": {"pk": {"S": "a"}}})
    assert table.count == 4
    call(engine, "UpdateTable", {"TableName": "Shrinks", "BillingMode": "PAY_PER_REQUEST"})
    call(engine, "GetItem", {"TableName": "Shrinks", "Key": {"pk": {"S": "a"}}})
    # Switched to on demand: the highest provisioned writes (3,000) are the previous peak, so 6 partitions.
    assert engine.throughput.tables["Shrinks"].resources[None].count == 6


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_placement_is_the_same_in_every_process(seed):
    # Python's own hash() of bytes changes with PYTHONHASHSEED; the placement must not.
    probe = (
        "from globaltables.engine.partitions import partition_of\n"
        "from globaltables.engine.storage.records import partition_hash\n"
        "print([partition_of(partition_hash(f'key-{n}'.encode()), 7) for n in range(50)])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONHASHSEED": seed}
    answer = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    here = [partitions.partition_of(partition_hash(f"key-{n}".encode()), 7) for n in range(50)]
    assert answer.stdout.strip() == str(here)
    assert len(set(here)) == 7  # and the keys spread over every partition
