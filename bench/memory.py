"""Resident memory of one region's engine holding N items of about 200 bytes, per store, measured (not extrapolated).

What it does: for each store (`memory`: the simulator's MemoryStore; `sqlite-memory`: SQLite in memory, what a
region process without --data-dir runs; `sqlite-disk`: SQLite in WAL mode on a temporary data dir, what a region
process with --data-dir runs), a fresh child process builds an Engine on it, creates a table (pk S, sk S), loads
N items through `Engine.execute("BatchWriteItem")`, 25 a call (the engine in-process: no HTTP, so a million items
load in seconds rather than minutes), collects garbage and reports its VmRSS from /proc, the growth per item, and
for the disk store the size of its files. Each store gets its own process, so no store's memory counts for another.

The region process's own RSS at a million items, loaded over HTTP, is measured by
`bench/region_throughput.py --memory-only` (the same stores behind the wire protocol).

Limits (issue #20): under 1 GiB in memory and 256 MiB on disk, for 1,000,000 items.

Usage: python bench/memory.py [--quick] [--items N] [--stores memory,sqlite-memory,sqlite-disk]
                              [--baseline-rev REV [--baseline-rounds N]]
       (--quick: 50,000 items, a CI-sized check; figures at that size say nothing about a million)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _baseline

HERE = Path(__file__).resolve().parent
TABLE = "bench"
PAYLOAD = "x" * 150  # with the keys and a number, an item of about 200 bytes (DynamoDB's size rules)
LIMITS = {"memory": 1 << 30, "sqlite-memory": 1 << 30, "sqlite-disk": 256 << 20}


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def child(store_kind: str, items: int) -> dict:
    """Load `items` items into a fresh engine on `store_kind`; the figures, as a dict."""
    from globaltables.engine.engine import Engine
    from globaltables.engine.storage.memory_store import MemoryStore
    from globaltables.engine.storage.sqlite_store import SqliteStore
    from globaltables.runtime.clock import SystemClock

    workdir = Path(tempfile.mkdtemp(prefix="gt-memory-"))
    if store_kind == "memory":
        store = MemoryStore()
    elif store_kind == "sqlite-memory":
        store = SqliteStore(None)
    else:
        store = SqliteStore(workdir / "region.db")
    engine = Engine(store, SystemClock(), capacity="unlimited")
    engine.handle(
        "CreateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    for first in range(0, items, 25):
        batch = [
            {"PutRequest": {"Item": {"pk": {"S": f"pk{i // 10:08d}"}, "sk": {"S": f"sk{i % 10}"},
                                     "n": {"N": str(i)}, "payload": {"S": PAYLOAD}}}}
            for i in range(first, min(items, first + 25))
        ]  # fmt: skip
        answer = engine.handle("BatchWriteItem", {"RequestItems": {TABLE: batch}})
        if answer.get("UnprocessedItems"):
            raise RuntimeError("BatchWriteItem left unprocessed items")
    seconds = time.perf_counter() - started
    count, stored = store.table_stats(TABLE)
    assert count == items, f"{count} items stored, {items} written"
    gc.collect()
    after = rss_bytes()
    disk = sum(p.stat().st_size for p in workdir.glob("*"))
    return {"store": store_kind, "items": items, "seconds": seconds, "rss_before": before, "rss_after": after,
            "disk_bytes": disk, "item_bytes": stored}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50,000 items (a CI-sized check)")
    parser.add_argument("--items", type=int, help="items loaded (default 1,000,000; --quick 50,000)")
    parser.add_argument("--stores", default="memory,sqlite-memory,sqlite-disk")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    items = args.items if args.items is not None else (50_000 if args.quick else 1_000_000)
    if args.child:
        print(json.dumps(child(args.child, items)))
        return 0
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    env = dict(os.environ)
    env["PYTHONPATH"] = _baseline.child_pythonpath(env.get("PYTHONPATH"))
    print(f"Resident memory of an engine holding {items:,} items of about 200 bytes (engine in-process, one child "
          f"process per store)")  # fmt: skip
    figures: dict[str, float] = {}
    met = True
    for kind in [k.strip() for k in args.stores.split(",") if k.strip()]:
        out = subprocess.run(
            [sys.executable, __file__, "--child", kind, "--items", str(items)],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
        r = json.loads(out.stdout.strip().splitlines()[-1])
        per_item = (r["rss_after"] - r["rss_before"]) / items
        line = (f"  {kind:<14} RSS {r['rss_after'] / 2**20:8.1f} MiB (empty {r['rss_before'] / 2**20:.1f} MiB, "
                f"{per_item:.0f} B/item; item data {r['item_bytes'] / 2**20:.0f} MiB), loaded in {r['seconds']:.1f} s")
        if r["disk_bytes"]:
            line += f", files on disk {r['disk_bytes'] / 2**20:.1f} MiB"
        print(line, flush=True)
        if items == 1_000_000:
            ok = r["rss_after"] < LIMITS[kind]
            met = met and ok
            print(f"  {'':<14} [{'met' if ok else 'NOT MET':>7}] RSS < {LIMITS[kind] / 2**20:,.0f} MiB (measured)")
        figures[f"{kind} rss MiB"] = r["rss_after"] / 2**20
        figures[f"{kind} rss bytes/item"] = per_item
    if items != 1_000_000:
        print("  (not a million items: the limits are checked only by the full run)")
    _baseline.report(figures)
    return 0 if met else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    _baseline.use_source_tree()
    sys.exit(main())
