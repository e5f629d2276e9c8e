"""The receiving region's cost of applying a replicated backlog, in process: items per CPU-second of the apply alone.

What it does: an origin engine (SQLite in WAL mode on a temporary data dir, capacity unlimited) takes N items of
about 200 bytes through BatchWriteItem, 25 a call, on a global table of four lanes; its change log is cut into Ships
of 500 records per lane (as replication/link.py ships a backlog) and encoded once. Then, `--rounds` times, a fresh
receiving engine (its own data dir, `--capacity` as given) applies them as a region process does: the Ships of the
lanes interleaved, about 1 MB of them a loop turn (replication_host.py INBOX_TURN_BYTES), each turn one
`RegionNode.on_messages` inside a group commit opened as the region's committer opens the inbox's
(region/group_commit.py), apply decisions logged (region/apply_decisions.py). Records deferred for lack of write
capacity are shipped again after 0.1 s, as a sender does. Reported: the best round's CPU seconds (process time, so
time the shared machine gives to others does not count), as items per CPU-second and microseconds per record.

What it leaves out, on purpose: the network (the WebSocket frames, their compression, the event loop), which
bench/replication.py measures with the rest, between real region processes.

Usage: python bench/replicated_apply.py [--items N] [--rounds R] [--capacity modelled|unlimited]
                                        [--baseline-rev REV [--baseline-rounds N]]
"""

from __future__ import annotations

import argparse
import gc
import inspect
import sys
import tempfile
import time
from pathlib import Path

import _baseline

_baseline.use_source_tree()

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.region.apply_decisions import ApplyDecisions  # noqa: E402
from globaltables.replication.hlc import HybridLogicalClock  # noqa: E402
from globaltables.replication.messages import Ship, encode  # noqa: E402
from globaltables.replication.node import RegionNode  # noqa: E402
from globaltables.replication.versions import HlcVersionSource  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402
from globaltables.runtime.transport import Envelope  # noqa: E402

ORIGIN, RECEIVER = "us-east-1", "eu-west-1"
TABLE = "bench"
PAYLOAD = "x" * 150
SHIP_RECORDS = 500
TURN_BYTES = 1_000_000
DEFER_RETRY_S = 0.1
GC_YOUNG_THRESHOLD = 50_000  # the region process's (region/main.py)


def engine_in(folder: Path, region: str, capacity: str) -> Engine:
    clock = SystemClock()
    hlc = HybridLogicalClock(clock, max_offset_ms=500)
    store = SqliteStore(folder / f"{region}.db")
    engine = Engine(store, clock, region=region, versions=HlcVersionSource(hlc, region), capacity=capacity)
    engine.handle(
        "CreateTable",
        {
            "TableName": TABLE,
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    engine.replica.make_global(TABLE, [ORIGIN, RECEIVER])
    return engine


def ships(origin: Engine, lane: int, after: int) -> list[bytes]:
    records = origin.replica.local_records(TABLE, lane, after, 10**9)
    out, prev = [], after
    for start in range(0, len(records), SHIP_RECORDS):
        chunk = records[start : start + SHIP_RECORDS]
        out.append(encode(Ship(TABLE, lane, 0, prev, tuple(chunk))))
        prev = chunk[-1].pos
    return out


def turns_of(bodies: list[tuple[int, bytes]]) -> list[list[Envelope]]:
    turns: list[list[Envelope]] = [[]]
    size = 0
    for msg_id, (lane, body) in enumerate(bodies, 1):
        if size >= TURN_BYTES:
            turns.append([])
            size = 0
        turns[-1].append(Envelope(ORIGIN, RECEIVER, "ship", msg_id, None, body, f"{TABLE}/{lane}"))
        size += len(body)
    return turns


def begin_inbox_group(engine: Engine) -> None:
    """The group the region's committer opens for the inbox: without savepoints where the package under test has
    them (a --baseline-rev from before opens its ordinary group)."""
    if "savepoints" in inspect.signature(engine.begin_group).parameters:
        engine.begin_group(savepoints=False)
    else:
        engine.begin_group()


def apply_backlog(origin: Engine, receiver: Engine, node: RegionNode, turns: list[list[Envelope]]) -> None:
    lanes = origin.replica.lanes(TABLE)
    while turns:
        for turn in turns:
            begin_inbox_group(receiver)
            node.on_messages(turn, time.monotonic())
            receiver.commit_group()
        applied = {lane: receiver.replica.applied_position(ORIGIN, TABLE, lane) for lane in range(lanes)}
        if all(applied[lane] >= origin.replica.log_end(TABLE, lane) for lane in range(lanes)):
            return
        time.sleep(DEFER_RETRY_S)  # deferred for lack of capacity: the sender ships the rest again
        turns = [turns_of([(lane, body)])[0] for lane in range(lanes) for body in ships(origin, lane, applied[lane])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=5, help="fresh receivers applying the backlog (best counts)")
    parser.add_argument("--capacity", choices=("modelled", "unlimited"), default="unlimited")
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    with tempfile.TemporaryDirectory(prefix="bench-replicated-apply-") as workdir:
        folder = Path(workdir)
        origin = engine_in(folder, ORIGIN, "unlimited")
        for start in range(0, args.items, 25):
            requests = [
                {"PutRequest": {"Item": {"pk": {"S": f"b{i}"}, "payload": {"S": PAYLOAD}}}}
                for i in range(start, min(args.items, start + 25))
            ]
            origin.handle("BatchWriteItem", {"RequestItems": {TABLE: requests}})
        per_lane = [ships(origin, lane, 0) for lane in range(origin.replica.lanes(TABLE))]
        interleaved = [(lane, body[i]) for i in range(max(map(len, per_lane))) for lane, body in enumerate(per_lane)
                       if i < len(body)]  # fmt: skip
        seconds = []
        for round_number in range(args.rounds):
            receiver_dir = folder / f"receiver-{round_number}"
            receiver_dir.mkdir()
            receiver = engine_in(receiver_dir, RECEIVER, args.capacity)
            receiver.replica.on_decision = ApplyDecisions().record
            node = RegionNode(RECEIVER, [ORIGIN], receiver.replica)
            turns = turns_of(interleaved)
            gc.collect()
            started = time.process_time()
            apply_backlog(origin, receiver, node, turns)
            seconds.append(time.process_time() - started)
            count, _bytes = receiver.store.table_stats(TABLE)
            if count != args.items:
                raise RuntimeError(f"the receiver holds {count} items, not {args.items}")
            receiver.store.close()
    best = min(seconds)
    print(f"replicated apply of {args.items:,} items (capacity {args.capacity}), best of {args.rounds}: "
          f"{best:.3f} CPU s, {args.items / best:,.0f} items per CPU-second, {1e6 * best / args.items:.1f} us a record "
          f"(rounds: {', '.join(f'{1e6 * s / args.items:.1f}' for s in seconds)} us)")  # fmt: skip
    _baseline.report({"apply items/cpu-s": args.items / best, "apply us/record": 1e6 * best / args.items})
    return 0


if __name__ == "__main__":
    sys.exit(main())
