"""Where a region's PutItem, GetItem, Query (a 10-item partition) and UpdateItem (a small expression) spend their
time, in process: through the region's answer function (wire checks, signing, the engine, framing: everything
bench/region_throughput.py measures except the sockets), µs of CPU per request, then a cProfile of one operation.

A profiling aid beside bench/profile_put.py (the engine's PutItem alone). Items are the throughput benchmark's:
about 200 bytes, 10 per partition.

Usage: python bench/profile_ops.py [--db PATH] [--count N] [--profile put|get|query|update]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import orjson  # noqa: E402
from _sigv4 import header_lines  # noqa: E402

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.region.app import DYNAMODB_ANSWER, make_app  # noqa: E402
from globaltables.region.http_front import Headers  # noqa: E402
from globaltables.region.signing import RequestSigning  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402

REGION = "us-east-1"
PAYLOAD = "x" * 150


def headers(operation: str) -> Headers:
    lines = header_lines(REGION, time.time()).decode().strip().split("\r\n")
    out = Headers({name.lower(): value for name, value in (line.split(": ", 1) for line in lines)})
    out["x-amz-target"] = f"DynamoDB_20120810.{operation}"
    out["content-type"] = "application/x-amz-json-1.0"
    out["host"] = "127.0.0.1:8000"
    return out


def bodies(operation: str, count: int, written: int) -> list[bytes]:
    rng = random.Random(7)
    out = []
    for i in range(count):
        n = rng.randrange(written)
        key = {"pk": {"S": f"p{n // 10}"}, "sk": {"S": f"s{n % 10}"}}
        if operation == "PutItem":
            request = {"TableName": "bench", "Item": {**key, "payload": {"S": PAYLOAD}, "n": {"N": str(i)}}}
        elif operation == "GetItem":
            request = {"TableName": "bench", "Key": key}
        elif operation == "Query":
            request = {
                "TableName": "bench",
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": key["pk"]},
            }
        else:
            request = {
                "TableName": "bench", "Key": key, "UpdateExpression": "SET n = n + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }  # fmt: skip
        out.append(orjson.dumps(request))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="SQLite database path (default: in memory)")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--profile", choices=("put", "get", "query", "update"))
    args = parser.parse_args()
    clock = SystemClock()
    engine = Engine(SqliteStore(args.db), clock, region=REGION)
    app = make_app(engine, signing=RequestSigning(REGION, clock))
    answer = app[DYNAMODB_ANSWER]
    engine.handle("CreateTable", {
        "TableName": "bench", "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    })  # fmt: skip
    written = args.count
    media = "application/x-amz-json-1.0"
    operations = {"put": "PutItem", "get": "GetItem", "query": "Query", "update": "UpdateItem"}
    for short, operation in operations.items():
        head = headers(operation)
        requests = bodies(operation, args.count, written)
        if operation == "PutItem":  # every key, in order, so the reads find them
            requests = [
                orjson.dumps({"TableName": "bench", "Item": {"pk": {"S": f"p{i // 10}"}, "sk": {"S": f"s{i % 10}"},
                              "payload": {"S": PAYLOAD}, "n": {"N": str(i)}}})
                for i in range(written)
            ]  # fmt: skip
        started = time.process_time()
        for body in requests:
            status, _answer, _headers = answer(head, body, media)
            assert status == 200, _answer
        print(f"{operation:10} {(time.process_time() - started) / len(requests) * 1e6:7.1f} us of CPU per request")
        if args.profile == short:
            profile = cProfile.Profile()
            profile.enable()
            for body in requests:
                answer(head, body, media)
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
