"""Driving an engine with modelled capacity on virtual time: tables, keys placed in chosen partitions, and open-loop
load at a given rate (the clock advances between requests, so rates are exact and nothing depends on the machine).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from globaltables.engine import partitions
from globaltables.engine.engine import Engine
from globaltables.engine.errors import DynamoError
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.engine.storage.records import partition_hash
from globaltables.runtime.clock import ManualClock

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/"


def modelled(store=None, clock: ManualClock | None = None, capacity="modelled") -> tuple[Engine, ManualClock]:
    clock = clock or ManualClock()
    return Engine(store if store is not None else MemoryStore(), clock, capacity=capacity), clock


def table_request(name: str, provisioned: tuple[int, int] | None = None, **extra) -> dict:
    """CreateTable of `name` keyed by string `pk`: on demand, or provisioned (read, write) units."""
    request = {
        "TableName": name,
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    }
    if provisioned is None:
        request["BillingMode"] = "PAY_PER_REQUEST"
    else:
        request["ProvisionedThroughput"] = {"ReadCapacityUnits": provisioned[0], "WriteCapacityUnits": provisioned[1]}
    request.update(extra)
    return request


def keys_in_partitions(table, count: int, per_partition: int, prefix: str = "k") -> list[str]:
    """Partition-key strings of `table` (a TableDefinition), `per_partition` in each of `count` partitions (by the
    engine's own encoding and placement), interleaved: partition 0, 1, ..., count-1, 0, 1, ..."""
    found: dict[int, list[str]] = {p: [] for p in range(count)}
    n = 0
    while any(len(keys) < per_partition for keys in found.values()):
        key = f"{prefix}{n}"
        n += 1
        place = partitions.partition_of(partition_hash(table.key.encode_partition({"S": key})), count)
        if len(found[place]) < per_partition:
            found[place].append(key)
    return [found[p][i] for i in range(per_partition) for p in range(count)]


def put(name: str, key: str, **attributes) -> dict:
    item = {"pk": {"S": key}, **{a: ({"S": v} if isinstance(v, str) else {"N": str(v)}) for a, v in attributes.items()}}
    return {"TableName": name, "Item": item}


def sized_put(name: str, key: str, size: int) -> dict:
    """A PutItem of an item of exactly `size` bytes (attribute names and string values, as DynamoDB counts)."""
    blob = "x" * (size - len("pk") - len(key.encode()) - len("b"))
    return {"TableName": name, "Item": {"pk": {"S": key}, "b": {"S": blob}}}


def drive(
    engine: Engine,
    clock: ManualClock,
    seconds: float,
    rate: float,
    request: Callable[[int], tuple[str, dict]],
) -> tuple[int, list[DynamoError]]:
    """Offer `rate` requests per virtual second for `seconds`, evenly spaced; (served, the throttling errors)."""
    served = 0
    refused: list[DynamoError] = []
    for n in range(round(seconds * rate)):
        clock.advance(1.0 / rate)
        operation, body = request(n)
        try:
            engine.handle(operation, copy.deepcopy(body))
            served += 1
        except DynamoError as error:
            refused.append(error)
    return served, refused


def levels(engine: Engine, table: str) -> dict:
    """Bucket levels of a table now: per resource (None: the table, else a GSI name), its provisioned buckets and
    its OnDemandThroughput maxima by kind, and its partitions' levels."""
    state = engine.throughput.tables[table]
    now = engine.clock.monotonic()

    def level(bucket) -> float:
        bucket.refill(now)
        return bucket.level

    return {
        name: {
            "provisioned": {kind: level(b) for kind, b in r.provisioned.items()},
            "caps": {kind: level(b) for kind, b in r.caps.items()},
            "parts": [level(b) for b in r.parts],
        }
        for name, r in state.resources.items()
    }


def stream_keys(engine: Engine, table: str) -> list[str]:
    """The partition keys of every record of the table's stream, in order."""
    arn = engine.handle("DescribeTable", {"TableName": table})["Table"]["LatestStreamArn"]
    shard = engine.handle_streams("DescribeStream", {"StreamArn": arn})["StreamDescription"]["Shards"][0]
    request = {"StreamArn": arn, "ShardId": shard["ShardId"], "ShardIteratorType": "TRIM_HORIZON"}
    shard_iterator = engine.handle_streams("GetShardIterator", request)["ShardIterator"]
    keys: list[str] = []
    while shard_iterator is not None:
        page = engine.handle_streams("GetRecords", {"ShardIterator": shard_iterator})
        keys.extend(record["dynamodb"]["Keys"]["pk"]["S"] for record in page["Records"])
        shard_iterator = page.get("NextShardIterator")
        if not page["Records"]:
            break
    return keys
