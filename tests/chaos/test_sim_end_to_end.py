"""The pieces together: a toy LWW replica set on the simulated network, recorded in a History, then checked.

The replicas here are deliberately minimal (a dict per region, whole-item versions, no retries, so no lossy
faults; tests/sim/test_cluster_mrec.py runs the real replication core). What this proves is the plumbing itself:
seeded workload and network, skewed region clocks, duplication and reordering, history recording, and both
checkers — passing on a correct run and naming the key when one replicated write is dropped on purpose.
"""

from __future__ import annotations

from globaltables.chaos.checkers.convergence import check_convergence
from globaltables.chaos.checkers.lww import check_lww
from globaltables.chaos.history import History
from globaltables.runtime.rng import Rng
from globaltables.runtime.transport import Envelope
from globaltables.sim.clock import SimClock
from globaltables.sim.loop import Scheduler
from globaltables.sim.network import LinkSettings, SimNetwork

REGIONS = ("ap-southeast-1", "eu-west-1", "us-east-1")


def header(version: tuple) -> str:
    (physical, logical), region = version
    return f"{physical:016d}.{logical:06d}/{region}"


def run(seed: int, writes: int = 3000, drop: tuple[str, str, str] | None = None):
    """`drop` = (region, key, version header): the replicated write that region silently ignores."""
    root = Rng(seed)
    scheduler = Scheduler()
    network = SimNetwork(
        scheduler,
        root.fork("network"),
        LinkSettings(
            latency_ms=40, jitter_ms=30, distribution="exponential", duplicate=0.05, reorder=0.05, reorder_ms=80
        ),
        journal=False,
    )
    clocks = {region: SimClock(scheduler, offset_s=0.05 * i) for i, region in enumerate(REGIONS)}
    clocks["us-east-1"].set_drift(2000)
    stores: dict[str, dict[str, tuple]] = {region: {} for region in REGIONS}  # key -> (version, value | None)
    last_stamp = {region: (0, 0) for region in REGIONS}
    history = History(clocks["us-east-1"])

    def stamp(region: str, at_least: tuple = (0, 0)) -> tuple:
        # An HLC in miniature: never behind the wall clock, the last stamp, or the version being replaced.
        physical = int(clocks[region].wall_time() * 1000)
        floor = max(last_stamp[region], at_least)
        last_stamp[region] = (physical, 0) if physical > floor[0] else (floor[0], floor[1] + 1)
        return last_stamp[region]

    def receive_for(region: str):
        def receive(envelope: Envelope) -> None:
            key, version, value = envelope.body["key"], envelope.body["version"], envelope.body["value"]
            version = (tuple(version[0]), version[1])
            if drop == (region, key, header(version)):
                return  # the planted bug: one replicated write silently ignored
            current = stores[region].get(key)
            if current is None or version > current[0]:
                stores[region][key] = (version, value)
            last_stamp[region] = max(last_stamp[region], version[0])

        return receive

    for region in REGIONS:
        network.register(region, receive_for(region))
    workload = root.fork("workload")

    def client_write(process: int) -> None:
        region = REGIONS[process % 3]
        key = f"k{workload.randrange(40)}"
        delete = workload.random() < 0.15
        value = None if delete else f"w{process}-{scheduler.now_us}"
        op = history.invoke(process, region, "delete" if delete else "put", "T", key, value)
        current = stores[region].get(key)
        version = (stamp(region, current[0][0] if current else (0, 0)), region)
        stores[region][key] = (version, value)
        history.ok(op, version=header(version))
        for peer in REGIONS:
            if peer != region:
                lane = sum(key.encode()) % 4
                network.send(
                    Envelope(
                        region, peer, "replicate", process, None, {"key": key, "version": version, "value": value}, lane
                    )
                )

    for process in range(writes):
        scheduler.call_at(workload.random() * 5.0, client_write, process)
    scheduler.run_until_idle(max_events=200_000)

    final = {
        region: {
            "T": {
                key: None if value is None else {"pk": {"S": key}, "value": {"S": value}}
                for key, (_, value) in stores[region].items()
            }
        }
        for region in REGIONS
    }
    return history, final


def test_thousands_of_concurrent_writes_converge_and_satisfy_lww():
    history, final = run(seed=11)
    assert sum(1 for op in history if op.type == "ok") == 3000
    convergence = check_convergence(final, history=history)
    assert convergence.passed, str(convergence)
    lww = check_lww(history, final)
    assert lww.passed, str(lww)


def test_a_replica_that_drops_one_replicated_write_fails_both_checkers_naming_the_key():
    # The bug must hit the write that wins k7 (a dropped write that was overwritten later is harmless).
    history, _ = run(seed=11)
    winner = max((op for op in history if op.type == "ok" and op.key == "k7"), key=lambda op: op.version)
    victim = next(region for region in REGIONS if region != winner.region)
    history, final = run(seed=11, drop=(victim, "k7", winner.version))
    convergence = check_convergence(final, history=history)
    lww = check_lww(history, final)
    assert not convergence.passed and not lww.passed
    assert convergence.offending_keys() == [("T", "k7")]
    assert lww.offending_keys() == [("T", "k7")]
    assert lww.offending[0].regions == [victim]
    assert winner.version in lww.offending[0].detail
