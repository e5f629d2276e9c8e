"""Where an engine PutItem spends its time, in process (no HTTP): µs per put, then a cProfile of 10,000 more.

A profiling aid for the write path (bench/region_throughput.py measures the whole region through the wire).
Items are the throughput benchmark's: about 200 bytes, 10 per partition.

Usage: python bench/profile_put.py [DB_PATH]   (no path: SQLite in memory)
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402

WARM = 10_000
PROFILED = 10_000


def main() -> None:
    engine = Engine(SqliteStore(sys.argv[1] if len(sys.argv) > 1 else None), SystemClock())
    engine.handle(
        "CreateTable",
        {
            "TableName": "Bench",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    requests = [
        {
            "TableName": "Bench",
            "Item": {"pk": {"S": f"p{i // 10}"}, "sk": {"S": f"s{i % 10}"}, "payload": {"S": "x" * 150}, "n": {"N": str(i)}},
        }
        for i in range(WARM + PROFILED)
    ]
    started = time.process_time()
    for request in requests[:WARM]:
        engine.handle("PutItem", request)
    print(f"{(time.process_time() - started) / WARM * 1e6:.1f} us of CPU per PutItem")
    profile = cProfile.Profile()
    profile.enable()
    for request in requests[WARM:]:
        engine.handle("PutItem", request)
    profile.disable()
    pstats.Stats(profile).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
