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

Beside it, strong mode (MRSC): an `MrscCluster` (sim/mrsc_cluster.py: two replicas and a witness, each on a
`MemoryStore`, same links) takes `--mrsc-writes` strong PutItems of fresh keys, `--mrsc-batch` per virtual
millisecond alternating between the replicas, then as many strongly consistent GetItems of them; each counts when its
client operation completed ok (a write once a majority committed it, a read once it synced), and each rate is
completed operations per wall second of its phase (the protocol's messages included). The offered load is kept low
(a few per millisecond): every operation in flight is visited by each `next_deadline` of its node, so the rate falls
as more are in flight at once.
Usage: python bench/sim_throughput.py [--puts N] [--batch B] [--mrsc-writes N] [--mrsc-batch B]
       [--baseline-rev REV [--baseline-rounds N]]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

import _baseline

_baseline.use_source_tree()

from globaltables.engine.engine import Engine
from globaltables.engine.storage.memory_store import MemoryStore
from globaltables.runtime.clock import ManualClock
from globaltables.sim.cluster import DEFAULT_TABLE, SimCluster
from globaltables.sim.collector import SIMULATION_THRESHOLDS, simulation_collector
from globaltables.sim.mrsc_cluster import MrscCluster
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


def run_mrsc(operations: int, batch: int) -> tuple[float, int, float, int]:
    """(writes wall s, writes ok, reads wall s, reads ok) of strong PutItems, then strong GetItems, of fresh keys."""
    cluster = MrscCluster(seed=1, link=LinkSettings(latency_ms=40, jitter_ms=2), journal=False)
    replicas = cluster.replicas()
    keys = [{"pk": {"S": f"key-{index:09d}"}} for index in range(operations)]

    def phase(submit) -> float:
        started = time.perf_counter()
        for start in range(0, operations, batch):
            for index in range(start, min(start + batch, operations)):
                submit(replicas[index % 2], index)
            cluster.run_until(cluster.now() + 0.001)
        cluster.run_until_quiescent()
        return time.perf_counter() - started

    write_s = phase(lambda region, i: cluster.write(region, "put", keys[i], {"S": PAYLOAD}, process=i))
    read_s = phase(lambda region, i: cluster.read(region, keys[i], process=operations + i))
    done = [op for op in cluster.history.ops if op.type == "ok"]
    assert cluster.quiescent()
    return write_s, sum(op.f == "put" for op in done), read_s, sum(op.f == "get" for op in done)


def run_standalone(puts: int, batch: int) -> float:
    engine = Engine(MemoryStore(), ManualClock())
    engine.handle("CreateTable", dict(DEFAULT_TABLE))
    started = time.perf_counter()
    for start in range(0, puts, batch):
        requests = [{"TableName": "Items", "Item": item(index)} for index in range(start, min(start + batch, puts))]
        engine.handle_many("PutItem", requests)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puts", type=int, default=60_000)
    parser.add_argument("--batch", type=int, default=500, help="client puts per virtual millisecond")
    parser.add_argument("--mrsc-writes", type=int, default=10_000, help="strong puts (and as many strong reads)")
    parser.add_argument("--mrsc-batch", type=int, default=2, help="strong operations per virtual millisecond")
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    with simulation_collector():
        elapsed, everywhere, client_s = run_cluster(args.puts, args.batch)
        one_call_elapsed, one_call_everywhere, _ = run_cluster(args.puts, args.batch, phased=False)
        baseline = args.puts / run_standalone(args.puts, args.batch)
    gc.collect()
    default_elapsed, default_everywhere, _ = run_cluster(args.puts, args.batch)
    gc.collect()
    # Strong mode last, so the MREC figures are measured in the same order (and heap) as before it was added.
    with simulation_collector():
        write_s, writes_ok, read_s, reads_ok = run_mrsc(args.mrsc_writes, args.mrsc_batch)
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
    print(f"three-member MRSC (2 replicas + witness), in memory: {writes_ok} of {args.mrsc_writes} strong puts ok "
          f"in {write_s:.2f} s wall = {writes_ok / write_s:,.0f} writes/s; {reads_ok} strong reads ok "
          f"in {read_s:.2f} s wall = {reads_ok / read_s:,.0f} reads/s")
    _baseline.report({
        "replicated puts/s": rate,
        "one call per put puts/s": one_call_everywhere / one_call_elapsed,
        "default collector puts/s": default_everywhere / default_elapsed,
        "standalone engine puts/s": baseline,
        "MRSC strong writes/s": writes_ok / write_s,
        "MRSC strong reads/s": reads_ok / read_s,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
