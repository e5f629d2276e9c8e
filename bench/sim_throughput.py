"""Simulated-mode throughput: client PutItems of ~200 bytes per wall-clock second on a three-region MREC topology
held in memory, each put counted once all three regions have applied it.

How it drives the simulator (no asyncio, no task per operation): the workload is a sequence of virtual instants,
1 ms apart; at each, `--batch` PutItems (round-robin over the regions, fresh keys) go straight to the engines, each
region's share in one `Engine.handle_many` call (engine/phased.py: every request validated, then each executed and
committed in order, with its own response: the outcome of one `handle` call per request, with the interpreter's
caches kept on one phase at a time; each commit tells the region's replication through the engine's after-commit
listener, and a burst shares one flush), and the scheduler runs to the next instant. At the end the scheduler runs until every link is acknowledged. A put counts when every region holds it:
the final check reads each region's item count, and the rate is (puts applied in all three regions) / (wall time of
the whole run, replication included). The network journal is off (`journal=False`), as for any long run.

Reports: puts/s with the simulator's collector settings (sim/collector.py, what the pytest kit's simulated mode runs
with), the share of time in the client puts vs replication; the same run with one `Engine.handle` call per put, and
with CPython's default collector; and the baseline of a standalone engine on the same store doing the same puts
with no replication (the ratio says what replication costs). The target is checked on the first figure.
Usage: python bench/sim_throughput.py [--puts N] [--batch B]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from globaltables.engine.engine import Engine
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.runtime.clock import ManualClock
from globaltables.sim.cluster import DEFAULT_TABLE, SimCluster
from globaltables.sim.collector import SIMULATION_THRESHOLDS, simulation_collector
from globaltables.sim.network import LinkSettings

REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")
PAYLOAD = "x" * 170  # + key and attribute names: about 200 bytes per item
TARGET = 20_000


def item(index: int) -> dict:
    return {"pk": {"S": f"key-{index:09d}"}, "payload": {"S": PAYLOAD}, "n": {"N": str(index)}}


def count(engine: Engine) -> int:
    """Items in the region's table (paginated COUNT scans: one page stops at 1 MB)."""
    total, request = 0, {"TableName": "Items", "Select": "COUNT"}
    while True:
        answer = engine.handle("Scan", request)
        total += answer["Count"]
        if "LastEvaluatedKey" not in answer:
            return total
        request = {**request, "ExclusiveStartKey": answer["LastEvaluatedKey"]}


def run_cluster(puts: int, batch: int, phased: bool = True) -> tuple[float, int, float]:
    cluster = SimCluster(REGIONS, seed=1, link=LinkSettings(latency_ms=40, jitter_ms=2), journal=False)
    engines = [cluster.engine(region) for region in REGIONS]
    scheduler = cluster.scheduler
    client_s = 0.0
    started = time.perf_counter()
    index = 0
    instant = 0
    while index < puts:
        t0 = time.perf_counter()
        shares: list[list[dict]] = [[], [], []]
        for number in range(index, min(index + batch, puts)):
            shares[number % 3].append({"TableName": "Items", "Item": item(number)})
        index = min(index + batch, puts)
        for engine, requests in zip(engines, shares, strict=True):
            if phased:
                failed = [result for result, _version in engine.handle_many("PutItem", requests) if "__type" in result]
                assert not failed, failed[:1]
            else:
                for request in requests:
                    engine.handle("PutItem", request)
        client_s += time.perf_counter() - t0
        instant += 1000
        scheduler.run_until_us(instant)
    scheduler.run_until_idle()
    elapsed = time.perf_counter() - started
    everywhere = min(count(engine) for engine in engines)
    assert cluster.quiescent()
    return elapsed, everywhere, client_s


def run_standalone(puts: int, batch: int) -> float:
    engine = Engine(MemoryStore(), ManualClock())
    engine.handle("CreateTable", dict(DEFAULT_TABLE))
    started = time.perf_counter()
    for start in range(0, puts, batch):
        requests = [{"TableName": "Items", "Item": item(index)} for index in range(start, min(start + batch, puts))]
        engine.handle_many("PutItem", requests)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puts", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=500, help="client puts per virtual millisecond")
    args = parser.parse_args()
    with simulation_collector():
        elapsed, everywhere, client_s = run_cluster(args.puts, args.batch)
        one_call_elapsed, one_call_everywhere, _ = run_cluster(args.puts, args.batch, phased=False)
        baseline = args.puts / run_standalone(args.puts, args.batch)
    gc.collect()
    default_elapsed, default_everywhere, _ = run_cluster(args.puts, args.batch)
    rate = everywhere / elapsed
    print(f"three-region MREC, in memory: {everywhere} of {args.puts} puts applied in all 3 regions "
          f"in {elapsed:.2f} s wall = {rate:,.0f} puts/s")
    print(f"  client puts (origin commits) {client_s:.2f} s, replication (ship, apply, ack) {elapsed - client_s:.2f} s")
    print(f"  one Engine.handle call per put instead of handle_many: {one_call_everywhere / one_call_elapsed:,.0f} puts/s")
    print(f"  with CPython's default collector thresholds {gc.get_threshold()}: "
          f"{default_everywhere / default_elapsed:,.0f} puts/s (simulation settings: {SIMULATION_THRESHOLDS})")
    print(f"  baseline: one standalone engine, no replication: {baseline:,.0f} puts/s "
          f"(replicated/standalone = {rate / baseline:.2f}; each put is committed 3 times when replicated)")
    print(f"  target {TARGET:,} puts/s: {'met' if rate >= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
