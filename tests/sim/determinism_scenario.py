"""A seeded simulation exercising every network feature; prints its message trace (run as a script).

Used by test_determinism.py, which runs it in subprocesses with different PYTHONHASHSEED values and demands
byte-identical output. Usage: python determinism_scenario.py SEED
"""

from __future__ import annotations

import sys

from globaltables.runtime.rng import Rng
from globaltables.runtime.transport import Envelope
from globaltables.sim.clock import SimClock
from globaltables.sim.loop import Scheduler
from globaltables.sim.network import LinkSettings, SimNetwork

REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-1")


def run(seed: int) -> SimNetwork:
    root = Rng(seed)
    scheduler = Scheduler()
    network = SimNetwork(scheduler, root.fork("network"), LinkSettings(latency_ms=40, jitter_ms=5, distribution="normal"))
    network.set_baseline("us-east-1", "ap-southeast-1", LinkSettings(latency_ms=110, jitter_ms=20,
                                                                      distribution="pareto"), bidirectional=True)
    network.set_link("eu-west-1", "us-east-1", LinkSettings(latency_ms=30, jitter_ms=10, distribution="exponential",
                                                            loss=0.1, duplicate=0.1, reorder=0.1, reorder_ms=50))
    clocks = {region: SimClock(scheduler, offset_s=i * 0.25) for i, region in enumerate(REGIONS)}
    clocks["eu-west-1"].set_drift(500)
    clocks["ap-southeast-1"].strobe(0.2, 0.05)
    counters = {region: 0 for region in REGIONS}
    # Region state kept in a set on purpose: the simulator must not depend on its (hash-seeded) order.
    seen: dict[str, set[str]] = {region: set() for region in REGIONS}

    def next_id(region: str) -> int:
        counters[region] += 1
        return counters[region]

    def handler_for(region: str):
        def handle(envelope: Envelope) -> None:
            seen[region].add(f"{envelope.src}:{envelope.msg_id}")
            if envelope.kind == "ping":
                body = {"seen": sorted(seen[region]), "wall": clocks[region].wall_time(), "tags": {"b": 1, "a": 2}}
                network.send(envelope.reply("pong", next_id(region), body))

        return handle

    for region in REGIONS:
        network.register(region, handler_for(region))
    workload = root.fork("workload")

    def send_random() -> None:
        src = workload.choice(REGIONS)
        dest = workload.choice([r for r in REGIONS if r != src])
        network.send(Envelope(src, dest, "ping", next_id(src), body=workload.randbytes(8), lane=workload.randrange(4)))

    for i in range(600):
        scheduler.call_at(workload.random() * 3.0, send_random)
    scheduler.call_at(1.0, network.partition, "us-east-1", "eu-west-1")
    scheduler.call_at(1.5, lambda: network.partition("ap-southeast-1", "us-east-1", one_way=True))
    scheduler.call_at(2.0, network.heal)
    scheduler.run_until_idle(max_events=100_000)
    return network


if __name__ == "__main__":
    network = run(int(sys.argv[1]))
    out = sys.stdout
    network.write_trace(out)
    out.write(f"stats {sorted(network.statistics().items())}\n")
