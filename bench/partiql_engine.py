"""What PartiQL costs on top of the item API it runs as: engine-level operations per second, PartiQL against the
equivalent item request, measured in the same run (ratios, not absolute numbers, are the result).

What it does: one in-memory engine (MemoryStore, manual clock), one table keyed (pk S, sk N); for --count items
each: INSERT ... VALUE against PutItem with attribute_not_exists, SELECT by the whole key against Query, UPDATE ...
SET n = n + 1 against UpdateItem with attribute_exists. Every statement uses `?` parameters, as applications do.

Expected: PartiQL at roughly half the item API's rate or better (it parses the statement, then runs the very item
operation, whose expression parse is cached by its placeholder text).

Usage: python bench/partiql_engine.py [--count N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.memory_store import MemoryStore  # noqa: E402
from globaltables.runtime.clock import ManualClock  # noqa: E402

TABLE = "Bench"


def new_engine() -> Engine:
    engine = Engine(MemoryStore(), ManualClock(wall_time=1_700_000_000.0))
    engine.handle(
        "CreateTable",
        {
            "TableName": TABLE,
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
            ],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    return engine


def rate(engine: Engine, requests: list[tuple[str, dict]]) -> float:
    started = time.perf_counter()
    for operation, request in requests:
        engine.handle(operation, request)
    return len(requests) / (time.perf_counter() - started)


def key(i: int) -> dict:
    return {"pk": {"S": f"p{i % 100}"}, "sk": {"N": str(i)}}


def item_api(count: int) -> dict[str, list]:
    return {
        "insert": [
            ("PutItem", {"TableName": TABLE, "Item": {**key(i), "n": {"N": "0"}},
                         "ConditionExpression": "attribute_not_exists(pk)"})
            for i in range(count)
        ],
        "select": [
            ("Query", {"TableName": TABLE, "KeyConditionExpression": "pk = :p AND sk = :s",
                       "ExpressionAttributeValues": {":p": key(i)["pk"], ":s": key(i)["sk"]}})
            for i in range(count)
        ],
        "update": [
            ("UpdateItem", {"TableName": TABLE, "Key": key(i), "UpdateExpression": "SET n = n + :one",
                            "ConditionExpression": "attribute_exists(pk)",
                            "ExpressionAttributeValues": {":one": {"N": "1"}}})
            for i in range(count)
        ],
    }  # fmt: skip


def partiql(count: int) -> dict[str, list]:
    def statement(text: str, i: int) -> tuple[str, dict]:
        return "ExecuteStatement", {"Statement": text, "Parameters": [key(i)["pk"], key(i)["sk"]]}

    return {
        "insert": [statement(f"INSERT INTO {TABLE} VALUE {{'pk': ?, 'sk': ?, 'n': 0}}", i) for i in range(count)],
        "select": [statement(f"SELECT * FROM {TABLE} WHERE pk = ? AND sk = ?", i) for i in range(count)],
        "update": [statement(f"UPDATE {TABLE} SET n = n + 1 WHERE pk = ? AND sk = ?", i) for i in range(count)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    args = parser.parse_args()
    results = {}
    baseline_engine, partiql_engine = new_engine(), new_engine()
    baseline, statements = item_api(args.count), partiql(args.count)
    for phase in ("insert", "select", "update"):  # in this order: each phase reads what the previous one wrote
        item_rate = rate(baseline_engine, baseline[phase])
        partiql_rate = rate(partiql_engine, statements[phase])
        results[phase] = {
            "item_api_per_s": round(item_rate),
            "partiql_per_s": round(partiql_rate),
            "ratio": round(partiql_rate / item_rate, 2),
        }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
