"""A seeded MRSC workload on the simulator: processes in both replica regions write and strongly read a few keys
with random think times, over lossy jittery links (optionally reordering: a message held back past later ones), while
one member crashes at a random moment and restarts."""

from __future__ import annotations

from typing import Any

from globaltables.runtime.rng import Rng
from globaltables.sim.mrsc_cluster import MrscCluster
from globaltables.sim.network import LinkSettings


def run(
    seed: int,
    operations: int = 3000,
    keys: int = 6,
    processes: int = 4,
    loss: float = 0.03,
    reorder: float = 0.0,
    reorder_ms: float = 0.0,
    **cluster_options: Any,
) -> MrscCluster:
    """`cluster_options` go to `MrscCluster` (a journal, members' stores)."""
    rng = Rng(seed).fork("workload")
    cluster = MrscCluster(seed=seed, link=LinkSettings(latency_ms=30, jitter_ms=8), **cluster_options)
    for a in cluster.member_names:
        for b in cluster.member_names:
            if a != b:
                cluster.network.update_link(a, b, loss=loss, reorder=reorder, reorder_ms=reorder_ms)
    replicas = cluster.replicas()
    key_list = [{"pk": {"S": f"k{i}"}} for i in range(keys)]
    state = {"issued": 0, "written": 0}

    def issue(process: str, region: str) -> None:
        if state["issued"] >= operations:
            return
        state["issued"] += 1
        key = rng.choice(key_list)
        roll = rng.random()
        if roll < 0.45:
            cluster.read(region, key, process=process)
        else:
            state["written"] += 1
            value = {"S": f"w{state['written']}"}
            if roll < 0.7:
                cluster.write(region, "put", key, value, process=process)
            elif roll < 0.85:
                cluster.write(region, "update", key, value, process=process)
            elif roll < 0.93:
                cluster.write(
                    region, "put", key, value, process=process, ConditionExpression="attribute_not_exists(pk)"
                )
            else:
                cluster.write(region, "delete", key, process=process)

    def next_op(process: str, region: str) -> None:
        cluster.scheduler.call_later(rng.uniform(0.0, 0.05), issue, process, region)

    cluster.on_complete = next_op
    for region in replicas:
        for i in range(processes):
            next_op(f"{region}/{i}", region)
    # One member (replica or witness) crashes at a random moment of the run and comes back later.
    victim = rng.choice(list(cluster.member_names))
    crash_at = rng.uniform(0.5, 8.0)
    cluster.scheduler.call_at(crash_at, cluster.crash, victim)
    cluster.scheduler.call_at(crash_at + rng.uniform(0.2, 3.0), cluster.restart, victim)
    cluster.crash_plan = (victim, crash_at)  # type: ignore[attr-defined]
    cluster.run_until_quiescent()
    # Final strong reads of every key from both replica regions: a lost acknowledged write shows up here.
    cluster.network.heal()
    cluster.on_complete = None
    for n, key in enumerate(key_list):
        for region in replicas:
            cluster.read(region, key, process=f"final/{region}/{n}")
    cluster.run_until_quiescent()
    return cluster
