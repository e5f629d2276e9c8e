"""A seeded MREC workload on SimCluster: random puts, updates and deletes from three regions at random virtual
times, over jittery links, optionally with a partition; run as a script it prints the message trace and the final
states (test_cluster_mrec.py runs it in subprocesses with different PYTHONHASHSEED and demands identical bytes).

Usage: python mrec_scenario.py SEED [WRITES]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import orjson

from globaltables.sim.cluster import SimCluster
from globaltables.sim.network import LinkSettings

REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")
TABLE = "Items"


def key(index: int) -> dict:
    return {"pk": {"S": f"k{index}"}}


def build(
    seed: int,
    *,
    writes: int = 3000,
    keys: int = 80,
    duration: float = 5.0,
    partition: bool = False,
    journal: bool = True,
    port_wrapper: Callable[[str, Any], Any] | None = None,
) -> SimCluster:
    cluster = SimCluster(
        REGIONS,
        seed,
        link=LinkSettings(latency_ms=40, jitter_ms=30, distribution="exponential"),
        journal=journal,
        port_wrapper=port_wrapper,
    )
    # Skewed clocks: the HLC must still make every local write beat what it replaces.
    cluster.clock("eu-west-1").set_offset(-0.2)
    cluster.clock("ap-southeast-1").set_drift(3000)
    workload = cluster.rng.fork("workload")
    for index in range(writes):
        region = workload.choice(REGIONS)
        k = key(workload.randrange(keys))
        draw = workload.random()
        value = {"S": f"w{index}"}
        when = workload.random() * duration
        if draw < 0.5:
            cluster.at(when, cluster.put, region, TABLE, {**k, "value": value, "n": {"N": str(index)}})
        elif draw < 0.8:
            cluster.at(when, cluster.update, region, TABLE, k, value)
        else:
            cluster.at(when, cluster.delete, region, TABLE, k)
    if partition:
        cluster.at(duration * 0.3, cluster.partition, "us-east-1", "ap-southeast-1")
        cluster.at(duration * 0.6, cluster.heal)
    return cluster


def run(seed: int, **options: Any) -> SimCluster:
    cluster = build(seed, **options)
    cluster.run_until_quiescent()
    return cluster


if __name__ == "__main__":
    cluster = run(int(sys.argv[1]), writes=int(sys.argv[2]) if len(sys.argv) > 2 else 600, partition=True)
    out = sys.stdout
    out.write(cluster.trace())
    out.write(orjson.dumps(cluster.final_states(), option=orjson.OPT_SORT_KEYS).decode() + "\n")
    out.write(cluster.history.dumps().decode())
