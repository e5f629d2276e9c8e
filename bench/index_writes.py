"""The price of a GSI on the engine's write and read paths, single-attribute against multi-attribute keys, in process.

What it does: for each of three tables on SQLite in memory (no GSI; a GSI keyed a / b; a multi-attribute GSI keyed
a+b / c+sk, DynamoDB's up to 4+4 attributes), --count PutItems of about 200-byte items, several rounds, then Queries
of one index partition (a prefix condition on the multi-attribute key). Reports CPU microseconds per operation
(process time: this machine is shared, wall time is noise) as the best of the rounds, and the ratios against the
no-GSI table measured in the same run.

Expected: a GSI costs a put about 1.5 times no GSI (one more index row in the same transaction). A multi-attribute
key costs a put a little more than a single-attribute one (four attributes checked and joined instead of two, measured
1.2-1.4x), and a Query up to twice as much (three conditions parsed and checked against the key rules instead of two,
and six-attribute LastEvaluatedKeys); the storage work per row is the same.

Usage: python bench/index_writes.py [--count N] [--rounds R]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402


def S(value: str) -> dict:
    return {"S": value}


def item(i: int) -> dict:
    return {"pk": S(f"p{i // 10:07d}"), "sk": S(f"s{i % 10}"), "a": S(f"a{i % 7}"), "b": S(f"b{i % 3}"),
            "c": {"N": str(i % 7)}, "payload": S("x" * 120)}  # fmt: skip


def key(*pairs: tuple[str, str]) -> list[dict]:
    return [{"AttributeName": name, "KeyType": kind} for name, kind in pairs]


TABLES = {
    "no GSI": ({"pk": "S", "sk": "S"}, None, None),
    "GSI a / b": (
        {"pk": "S", "sk": "S", "a": "S", "b": "S"},
        key(("a", "HASH"), ("b", "RANGE")),
        ("a = :a AND b = :b", {":a": S("a5"), ":b": S("b2")}),
    ),
    "GSI a+b / c+sk": (
        {"pk": "S", "sk": "S", "a": "S", "b": "S", "c": "N"},
        key(("a", "HASH"), ("b", "HASH"), ("c", "RANGE"), ("sk", "RANGE")),
        ("a = :a AND b = :b AND c >= :c", {":a": S("a5"), ":b": S("b2"), ":c": {"N": "0"}}),
    ),
}


def measure(name: str, count: int, rounds: int) -> tuple[float, float | None]:
    types, index_key, condition = TABLES[name]
    engine = Engine(SqliteStore(None), SystemClock())
    request = {"TableName": "Bench", "BillingMode": "PAY_PER_REQUEST",
               "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in types.items()],
               "KeySchema": key(("pk", "HASH"), ("sk", "RANGE"))}  # fmt: skip
    if index_key is not None:
        request["GlobalSecondaryIndexes"] = [{"IndexName": "byAB", "KeySchema": index_key,
                                              "Projection": {"ProjectionType": "ALL"}}]  # fmt: skip
    engine.handle("CreateTable", request)
    written = 0
    put_best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for i in range(written, written + count):
            engine.handle("PutItem", {"TableName": "Bench", "Item": item(i)})
        put_best = min(put_best, (time.process_time() - started) / count * 1e6)
        written += count
    if condition is None:
        return put_best, None
    text, values = condition
    query = {"TableName": "Bench", "IndexName": "byAB", "KeyConditionExpression": text,
             "ExpressionAttributeValues": values, "Limit": 10}  # fmt: skip
    query_best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(count // 10):
            assert engine.handle("Query", query)["Count"] == 10
        query_best = min(query_best, (time.process_time() - started) / (count // 10) * 1e6)
    engine.store.close()
    return put_best, query_best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)  # at least 210: each queried partition holds 1 in 21 items
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {name: measure(name, args.count, args.rounds) for name in TABLES}
    baseline = results["no GSI"][0]
    single_put, single_query = results["GSI a / b"]
    print(f"{'table':18s} {'put us':>8s} {'x no GSI':>9s} {'query us':>9s}")
    for name, (put, query) in results.items():
        print(f"{name:18s} {put:8.1f} {put / baseline:9.2f} {'' if query is None else f'{query:9.1f}'}")
    multi_put, multi_query = results["GSI a+b / c+sk"]
    ratios = f"put {multi_put / single_put:.2f}, query {multi_query / single_query:.2f}"
    print(f"multi-attribute / single-attribute GSI: {ratios}")


if __name__ == "__main__":
    main()
