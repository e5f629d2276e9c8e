"""Back-pressure on a replication lane (docs/capacity.md, decision 16): a receiver that applied only a prefix of a
Ship acks `deferred`; the link keeps what was applied, goes back to it, ships nothing for `defer_retry`, then one
Ship at a time until an ack that is not deferred opens the window again. The ack's codec carries the flag."""

from __future__ import annotations

from globaltables.replication.hlc import HybridLogicalClock
from globaltables.replication.messages import Ship, ShipAck, decode, encode
from globaltables.replication.receiver import Receiver
from replication.fake_port import FakePort
from replication.test_link import LANE, link_for, port_with


def test_a_deferred_ack_keeps_the_applied_prefix_waits_and_then_probes_with_one_ship():
    port = port_with(10)
    link = link_for(port, batch_records=3, defer_retry=0.5)
    ships = link.poll(0.0, 10)
    assert [s.last_pos for s, _ in ships] == [3, 6, 9, 10]
    link.on_ack(ShipAck("T", LANE, link.epoch, 2, False, None, True), 0.1)  # applied 1..2, deferred 3 on
    assert (link.acked, link.sent, link.deferring, link.deferrals) == (2, 2, True, 1)
    assert link.next_deadline() == 0.6 and not link.wants_to_ship(10)
    assert link.poll(0.3, 10) == []  # the receiver asked for time
    link.on_ack(ShipAck("T", LANE, 0, 2, True, None), 0.35)  # a later Ship of the old window: ignored
    assert link.poll(0.59, 10) == []
    probe = link.poll(0.6, 10)
    assert [(s.prev_pos, s.last_pos) for s, _ in probe] == [(2, 5)]  # one Ship, from what was applied
    assert link.poll(0.7, 10) == []  # the probe is out
    link.on_ack(ShipAck("T", LANE, link.epoch, 5, False, None), 0.8)  # kept up: the window opens
    assert [s.last_pos for s, _ in link.poll(0.8, 10)] == [8, 10]
    assert link.status(10)["deferrals"] == 1


def test_the_receiver_acks_deferred_when_the_port_applied_only_a_prefix():
    sender = port_with(4)
    records = sender.local_records("T", LANE, 0, 10)
    receiving = FakePort("eu-west-1", HybridLogicalClock(lambda: 1_000, 500), ("us-east-1",), ("T",), 1)
    applied = receiving.apply_replicated

    def short_of_capacity(origin, table, lane, batch):  # applies the first two records only
        return applied(origin, table, lane, list(batch)[:2])

    receiving.apply_replicated = short_of_capacity
    receiver = Receiver(receiving)
    ack = receiver.on_ship("us-east-1", Ship("T", LANE, 0, 0, tuple(records)))
    assert (ack.applied_pos, ack.deferred, ack.gap, receiver.deferred) == (records[1].pos, True, False, 1)
    ack = receiver.on_ship("us-east-1", Ship("T", LANE, 0, records[1].pos, tuple(records[2:])))
    assert ack.deferred is False and ack.applied_pos == records[-1].pos


def test_the_ack_codec_carries_deferred_and_reads_acks_without_it():
    ack = ShipAck("T", 1, 2, 30, False, None, True)
    assert decode(encode(ack)) == ack
    assert decode(b'["ack","T",1,2,30,false,null]') == ShipAck("T", 1, 2, 30, False, None, False)
