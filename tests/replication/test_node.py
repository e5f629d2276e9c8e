"""RegionNode on the simulated network, over fake ports: go-back-N under loss, duplication and reordering, resuming
after partitions and restarts from the acknowledged position, and failing loudly on a trimmed log."""

from __future__ import annotations

from globaltables.chaos.history import key_id
from globaltables.replication.config import ReplicationConfig
from globaltables.replication.hlc import HybridLogicalClock
from globaltables.replication.hosted import MrecRegion
from globaltables.replication.messages import decode
from globaltables.replication.node import RegionNode
from globaltables.replication.receiver import Receiver
from globaltables.runtime.rng import Rng
from globaltables.runtime.transport import Envelope
from globaltables.sim.clock import SimClock
from globaltables.sim.cluster import NodeDriver
from globaltables.sim.loop import Scheduler
from globaltables.sim.network import LinkSettings, SimNetwork
from replication.fake_port import FakePort

REGIONS = ("ap-southeast-1", "eu-west-1", "us-east-1")
LOSSY = LinkSettings(
    latency_ms=30, jitter_ms=20, distribution="exponential", loss=0.1, duplicate=0.1, reorder=0.1, reorder_ms=60
)


class Harness:
    def __init__(self, seed: int, link: LinkSettings = LOSSY, **config) -> None:
        self.rng = Rng(seed)
        self.scheduler = Scheduler()
        self.network = SimNetwork(self.scheduler, self.rng.fork("network"), link)
        self.config = ReplicationConfig(**{"retransmit_after": 0.5, "batch_records": 20, **config})
        self.clocks = {r: SimClock(self.scheduler, offset_s=0.01 * i) for i, r in enumerate(REGIONS)}
        self.ports = {
            r: FakePort(r, HybridLogicalClock(self.clocks[r], 500), REGIONS, lanes=self.config.lanes) for r in REGIONS
        }
        self.drivers = {r: self.start(r) for r in REGIONS}
        self.written: list[tuple[str, str, str, dict | None]] = []  # (region, key, version, image)

    def start(self, region: str) -> NodeDriver:
        peers = [r for r in REGIONS if r != region]
        node = RegionNode(region, peers, self.ports[region], self.config, hlc=self.ports[region].hlc)
        # Local commits reach the node as in a region: through the port's after-commit listener.
        return NodeDriver(MrecRegion(None, node, commits=self.ports[region]), self.scheduler, self.network)

    def node(self, region: str) -> RegionNode:
        return self.drivers[region].node.node

    def write(self, region: str, key: str, value: str | None) -> None:
        image = None if value is None else {"pk": {"S": key}, "value": {"S": value}}
        version = self.ports[region].write("T", {"pk": {"S": key}}, image)
        self.written.append((region, key, version, image))

    def random_writes(self, count: int, keys: int, until: float) -> None:
        workload = self.rng.fork("workload")
        for i in range(count):
            region = workload.choice(REGIONS)
            key = f"k{workload.randrange(keys)}"
            value = None if workload.random() < 0.2 else f"v{i}"
            self.scheduler.call_at(workload.random() * until, self.write, region, key, value)

    def expected(self) -> dict[str, dict]:
        """The LWW maximum of every write, per key (deletes leave no item)."""
        best: dict[str, tuple[str, dict | None]] = {}
        for _, key, version, image in self.written:
            kid = key_id({"pk": {"S": key}})
            if kid not in best or version > best[kid][0]:
                best[kid] = (version, image)
        return {kid: image for kid, (_, image) in sorted(best.items()) if image is not None}

    def status(self, region: str) -> dict:
        return self.node(region).status()


def assert_converged(h: Harness) -> None:
    expected = h.expected()
    for region in REGIONS:
        assert h.ports[region].state("T") == expected, region
        # Nothing skipped, nothing pending: every peer applied every lane of every origin up to its end.
        for origin in REGIONS:
            if origin != region:
                for lane in range(h.config.lanes):
                    assert h.ports[region].applied_position(origin, "T", lane) == h.ports[origin].log_end("T", lane)
        assert h.node(region).idle()


def test_random_writes_converge_under_loss_duplication_and_reordering():
    h = Harness(seed=3)
    h.random_writes(1500, keys=60, until=3.0)
    h.scheduler.run_until_idle(max_events=500_000)
    assert_converged(h)
    stats = h.network.statistics()
    assert stats["dropped"]["loss"] > 50 and stats["duplicated"] > 50  # the faults really happened
    rewinds = sum(link["rewinds"] for r in REGIONS for link in h.status(r)["links"])
    gaps = sum(h.status(r)["received"]["gaps"] for r in REGIONS)
    duplicates = sum(h.status(r)["received"]["duplicates"] for r in REGIONS)
    assert rewinds > 0 and gaps > 0 and duplicates > 0
    # Exactly-once effect: each record applied at most once per receiving region (the fake port's applied count).
    for region in REGIONS:
        remote = sum(1 for origin, *_ in h.written if origin != region)
        assert h.status(region)["received"]["applied_records"] == remote


def test_a_partition_holds_writes_back_and_healing_resumes_from_the_acked_position():
    h = Harness(seed=5, link=LinkSettings(latency_ms=40, jitter_ms=5))
    for i in range(10):
        h.write("us-east-1", f"k{i}", f"before{i}")
    h.scheduler.run_until(1.0)
    acked_before = {
        link["lane"]: link["acked"] for link in h.status("us-east-1")["links"] if link["peer"] == "eu-west-1"
    }
    h.network.partition("us-east-1", "eu-west-1")
    for i in range(10, 30):
        h.scheduler.call_at(1.0 + i * 0.01, h.write, "us-east-1", f"k{i}", f"during{i}")
    h.scheduler.run_until(6.0)
    assert h.ports["eu-west-1"].state("T") != h.ports["ap-southeast-1"].state("T")  # eu is behind, ap is not
    links = {link["lane"]: link for link in h.status("us-east-1")["links"] if link["peer"] == "eu-west-1"}
    assert {lane: link["acked"] for lane, link in links.items()} == acked_before
    assert sum(link["pending"] for link in links.values()) == 20
    applied_before = h.status("eu-west-1")["received"]["applied_records"]
    first_ship_after_heal = []

    class Spy(Receiver):
        __slots__ = ()

        def on_ship(self, origin, ship, stamp=None):
            if origin == "us-east-1":
                first_ship_after_heal.append((ship.lane, ship.prev_pos))
            return super().on_ship(origin, ship, stamp)

    node = h.node("eu-west-1")
    node.receiver = Spy(h.ports["eu-west-1"])
    node.receiver.applied_records = applied_before
    h.network.heal()
    h.scheduler.run_until_idle(max_events=100_000)
    assert_converged(h)
    # Every lane resumed exactly where the peer had acknowledged: no full resync, nothing skipped.
    resumed = {}
    for lane, prev_pos in first_ship_after_heal:
        resumed.setdefault(lane, prev_pos)
    assert resumed == {lane: acked for lane, acked in acked_before.items() if lane in resumed}
    assert h.status("eu-west-1")["received"]["applied_records"] - applied_before == 20


def test_a_restarted_node_resumes_from_durable_positions():
    h = Harness(seed=9, link=LinkSettings(latency_ms=40, jitter_ms=5))
    for i in range(50):
        h.scheduler.call_at(i * 0.01, h.write, "eu-west-1", f"k{i % 17}", f"v{i}")
    h.scheduler.run_until(0.3)
    h.drivers["eu-west-1"].stop()  # a crash: links, epochs, windows and timers are gone; the port is durable
    h.drivers["eu-west-1"] = None
    h.scheduler.run_until(1.0)
    h.drivers["eu-west-1"] = h.start("eu-west-1")
    for i in range(50, 60):
        h.write("eu-west-1", f"k{i % 17}", f"v{i}")
    h.scheduler.run_until_idle(max_events=100_000)
    assert_converged(h)


def test_a_link_fails_loudly_when_the_log_was_trimmed_past_the_peer(caplog):
    h = Harness(seed=2, link=LinkSettings(latency_ms=40), lanes=1)
    h.network.partition("us-east-1", "eu-west-1")
    for i in range(5):
        h.write("us-east-1", f"k{i}", f"v{i}")
    h.scheduler.run_until(0.5)
    h.ports["us-east-1"].trim("T", 0, 3)  # a broken retention: eu-west-1 never acknowledged these
    h.network.heal()
    h.scheduler.run_until_idle(max_events=100_000)
    links = {link["peer"]: link for link in h.status("us-east-1")["links"]}
    assert links["eu-west-1"]["state"] == "failed" and "trimmed past position 0" in links["eu-west-1"]["error"]
    assert links["ap-southeast-1"]["state"] == "active" and links["ap-southeast-1"]["acked"] == 5
    assert "replication link to eu-west-1 failed" in caplog.text
    assert h.ports["eu-west-1"].state("T") == {}  # nothing skipped silently either


def test_status_reports_links_and_applied_positions():
    h = Harness(seed=1, link=LinkSettings(latency_ms=10), lanes=2)
    h.write("us-east-1", "a", "1")
    h.scheduler.run_until_idle()
    status = h.status("us-east-1")
    assert [(link["peer"], link["lane"]) for link in status["links"]] == [
        ("ap-southeast-1", 0), ("eu-west-1", 0), ("ap-southeast-1", 1), ("eu-west-1", 1),
    ]  # fmt: skip
    assert {key: status["links"][0][key] for key in ("state", "pending", "in_flight")} == {
        "state": "active", "pending": 0, "in_flight": 0,
    }  # fmt: skip
    lane = h.ports["us-east-1"].lane_of("T", key_id({"pk": {"S": "a"}}).encode())
    eu = h.status("eu-west-1")["applied"]
    assert {"origin": "us-east-1", "table": "T", "lane": lane, "applied": 1} in eu


def test_messages_from_strangers_or_garbage_are_dropped():
    h = Harness(seed=1, link=LinkSettings(latency_ms=10))
    node = h.node("us-east-1")
    assert node.on_message(Envelope("mallory", "us-east-1", "ship", 1, body=b"[]"), 0.0) == []
    assert node.on_message(Envelope("eu-west-1", "us-east-1", "ship", 1, body=b"garbage"), 0.0) == []
    assert (
        node.on_message(Envelope("eu-west-1", "us-east-1", "ship", 1, body=b'["ship","Nope",0,0,0,null,[]]'), 0) == []
    )
    assert node.dropped_messages == 3


STEADY = LinkSettings(latency_ms=40, jitter_ms=0)


def test_an_idle_link_ships_a_commit_at_once_so_it_is_visible_one_link_latency_later():
    h = Harness(seed=11, link=STEADY)
    h.scheduler.run_until(1.0)
    h.scheduler.call_at(1.0, h.write, "us-east-1", "k", "now")
    h.scheduler.run_until(1.0399)
    assert h.ports["eu-west-1"].state("T") == {}  # not before the link's latency
    h.scheduler.run_until(1.040)
    assert h.ports["eu-west-1"].state("T") == {key_id({"pk": {"S": "k"}}): {"pk": {"S": "k"}, "value": {"S": "now"}}}
    assert h.ports["ap-southeast-1"].state("T") == h.ports["eu-west-1"].state("T")  # no flush timer on any link


def test_a_local_commit_makes_a_poll_due_at_its_own_time():
    port = FakePort("us-east-1", HybridLogicalClock(lambda: 1_000, 500), REGIONS)
    node = RegionNode("us-east-1", [r for r in REGIONS if r != "us-east-1"], port)
    assert node.poll(5.0) == [] and node.next_deadline() is None
    port.write("T", {"pk": {"S": "a"}}, {"pk": {"S": "a"}, "value": {"S": "x"}})
    assert node.on_local_commit(7.0) is True
    assert node.next_deadline() == 7.0
    assert sorted(envelope.dest for envelope in node.poll(7.0)) == ["ap-southeast-1", "eu-west-1"]


def test_a_busy_link_batches_while_a_ship_is_out_and_keeps_order_and_exactly_once_apply():
    h = Harness(seed=13, link=STEADY, lanes=1, batch_records=500, eager_ships=1)
    h.scheduler.run_until(1.0)
    for i in range(40):  # a commit every 5 ms: eight per 80 ms round trip
        h.scheduler.call_at(1.0 + 0.005 * i, h.write, "us-east-1", f"k{i % 7}", f"v{i}")
    h.scheduler.run_until_idle(max_events=100_000)
    assert_converged(h)
    ships = {link["peer"]: link["ships"] for link in h.status("us-east-1")["links"]}
    # The first commit ships alone; each later Ship carries what committed during the previous round trip.
    assert ships == {"ap-southeast-1": 4, "eu-west-1": 4}
    for region in ("ap-southeast-1", "eu-west-1"):
        received = h.status(region)["received"]
        assert received["applied_records"] == 40 and received["duplicates"] == 0 and received["gaps"] == 0


def pair(**config) -> tuple[FakePort, RegionNode, FakePort, RegionNode, list]:
    """us-east-1 -> eu-west-1 over fake ports, driven by hand; `applies` records every apply_replicated call."""
    regions = ("eu-west-1", "us-east-1")
    config = ReplicationConfig(**{"lanes": 1, **config})
    ports = {r: FakePort(r, HybridLogicalClock(lambda: 1_000, 500), regions, lanes=1) for r in regions}
    nodes = {r: RegionNode(r, [p for p in regions if p != r], ports[r], config, hlc=ports[r].hlc) for r in regions}
    applies: list[list[int]] = []
    apply = ports["eu-west-1"].apply_replicated

    def counting(origin, table, lane, records):
        applies.append([record.pos for record in records])
        return apply(origin, table, lane, records)

    ports["eu-west-1"].apply_replicated = counting
    return ports["us-east-1"], nodes["us-east-1"], ports["eu-west-1"], nodes["eu-west-1"], applies


def test_ships_of_a_lane_that_arrive_together_apply_in_one_transaction_with_one_ack():
    source, sender, target, receiver, applies = pair(batch_records=10)
    for i in range(30):
        source.write("T", {"pk": {"S": f"k{i}"}}, {"pk": {"S": f"k{i}"}, "value": {"S": f"v{i}"}})
    ships = sender.poll(0.0)
    assert len(ships) == 3
    acks = receiver.on_messages(ships, 0.04)
    assert applies == [list(range(1, 31))]  # one apply, in log order
    assert len(acks) == 1 and acks[0].in_reply_to == ships[-1].msg_id
    assert target.applied_position("us-east-1", "T", 0) == 30
    assert sender.on_messages(acks, 0.08) == [] and sender.links[("eu-west-1", "T", 0)].in_flight == 0
    assert sender.idle() and target.state("T") == source.state("T")


def test_grouped_ships_keep_exactly_once_and_gap_rules():
    source, sender, target, receiver, applies = pair(batch_records=10, apply_records=20)
    for i in range(40):
        source.write("T", {"pk": {"S": f"k{i}"}}, {"pk": {"S": f"k{i}"}, "value": {"S": f"v{i}"}})
    s1, s2, s3, s4 = sender.poll(0.0)
    # s1 twice (a duplicate) and s2 make one group; the cap (20 records) starts another at s3. Every record
    # applies once, in order, and each group is answered once.
    acks = receiver.on_messages([s1, s1, s2, s3, s4], 0.04)
    assert applies == [list(range(1, 21)), list(range(21, 41))]
    assert receiver.receiver.applied_records == 40 and receiver.receiver.duplicates == 1
    assert [decode(ack.body).applied_pos for ack in acks] == [20, 40]
    # A Ship that does not connect (the one before it was lost) is not grouped: it is answered with a gap ack.
    for i in range(40, 60):
        source.write("T", {"pk": {"S": f"k{i}"}}, {"pk": {"S": f"k{i}"}, "value": {"S": f"v{i}"}})
    t1, t2 = sender.on_messages(acks, 0.08)  # the acks free the window: the new records ship at once
    acks = receiver.on_messages([t2], 0.12)
    gap = decode(acks[0].body)
    assert gap.gap and gap.applied_pos == 40 and len(applies) == 2
    assert target.state("T") != source.state("T")
    receiver.on_messages([t1, t2], 0.13)
    assert applies[-1] == list(range(41, 61)) and target.state("T") == source.state("T")
