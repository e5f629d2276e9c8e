"""Receiver: gaps apply nothing, duplicates are harmless, records apply once and LWW decides."""

from __future__ import annotations

from globaltables.engine.mutation import Mutation
from globaltables.replication.hlc import HybridLogicalClock
from globaltables.replication.messages import Ship, decode, encode
from globaltables.replication.receiver import Receiver
from replication.fake_port import FakePort


def record(pos: int, key: str, version: str, value: str | None) -> Mutation:
    image = None if value is None else {"pk": {"S": key}, "value": {"S": value}}
    return Mutation(pos, {"pk": {"S": key}}, version, image, 0)


V1 = "M1700000000000.A0/us-east-1"
V2 = "M1700000000001.A0/us-east-1"
V0_OTHER = "M1699999999999.A0/eu-west-1"


def receiver() -> tuple[Receiver, FakePort]:
    port = FakePort("eu-west-1", HybridLogicalClock(lambda: 1_700_000_000_000, 500), ("us-east-1",))
    return Receiver(port), port


def test_applies_in_order_and_acks_the_new_position():
    rx, port = receiver()
    ack = rx.on_ship("us-east-1", Ship("T", 1, 0, 0, (record(3, "a", V1, "x"), record(7, "b", V1, "y"))))
    assert (ack.applied_pos, ack.gap, ack.lane, ack.epoch) == (7, False, 1, 0)
    assert port.applied_position("us-east-1", "T", 1) == 7
    assert port.state("T") == {'{"pk":{"S":"a"}}': record(3, "a", V1, "x").image,
                               '{"pk":{"S":"b"}}': record(7, "b", V1, "y").image}  # fmt: skip


def test_a_ship_that_does_not_connect_is_a_gap_and_applies_nothing():
    rx, port = receiver()
    ack = rx.on_ship("us-east-1", Ship("T", 0, 4, 5, (record(6, "a", V1, "x"),)))
    assert (ack.applied_pos, ack.gap, ack.epoch) == (0, True, 4)
    assert port.state("T") == {} and rx.gaps == 1


def test_duplicates_and_overlaps_apply_only_what_is_new():
    rx, port = receiver()
    rx.on_ship("us-east-1", Ship("T", 0, 0, 0, (record(1, "a", V1, "x"),)))
    assert rx.on_ship("us-east-1", Ship("T", 0, 0, 0, (record(1, "a", V1, "x"),))).applied_pos == 1
    assert rx.duplicates == 1
    # An overlapping retransmission: only record 2 is new.
    ack = rx.on_ship("us-east-1", Ship("T", 0, 1, 0, (record(1, "a", V1, "x"), record(2, "a", V2, "z"))))
    assert ack.applied_pos == 2 and port.state("T")['{"pk":{"S":"a"}}']["value"] == {"S": "z"}
    assert rx.applied_records == 2


def test_an_older_version_loses_and_a_newer_delete_leaves_a_tombstone():
    rx, port = receiver()
    port.write("T", {"pk": {"S": "a"}}, {"pk": {"S": "a"}, "value": {"S": "local"}})  # stamped 1700000000000/eu
    rx.on_ship("us-east-1", Ship("T", 0, 0, 0, (record(1, "a", V0_OTHER.replace("eu-west-1", "us-east-1"), "old"),)))
    assert port.state("T")['{"pk":{"S":"a"}}']["value"] == {"S": "local"} and rx.won == 0
    rx.on_ship("us-east-1", Ship("T", 0, 0, 1, (record(2, "a", V2, None),)))
    assert port.state("T") == {} and rx.won == 1
    rx.on_ship("us-east-1", Ship("T", 0, 0, 2, (record(3, "a", V1, "resurrect?"),)))
    assert port.state("T") == {}


def test_codec_round_trip_and_refuses_garbage():
    ship = Ship("T", 2, 3, 4, (record(5, "a", V1, "x"), record(9, "b", V2, None)), "M1.A0")
    assert decode(encode(ship)) == ship
    import pytest

    from globaltables.replication.messages import MessageError

    for bad in (b"{}", b"[]", b'["ship","T",0,0,5,null,[[5,{"pk":{"S":"a"}},"v",null,0]]]', b'["ack","T",0,0,1,1,null]',
                b'["nope"]', b"not json", b'["ship","T",-1,0,0,null,[]]'):  # fmt: skip
        with pytest.raises(MessageError):
            decode(bad)


def test_records_carry_the_origins_item_size_and_older_peers_may_leave_it_out():
    import pytest

    from globaltables.replication.messages import MessageError

    sized = Mutation(5, {"pk": {"S": "a"}}, V1, {"pk": {"S": "a"}, "v": {"S": "x"}}, 0, False, 3)
    assert decode(encode(Ship("T", 0, 0, 4, (sized,)))).records == (sized,)
    # A six-element record (a peer of an earlier release) decodes with no size: the receiver counts it.
    legacy = b'["ship","T",0,0,4,null,[[5,{"pk":{"S":"a"}},"' + V1.encode() + b'",{"pk":{"S":"a"}},0,false]]]'
    assert decode(legacy).records[0].size is None
    for size in (b"-1", b"true", b'"3"', b"1.5"):
        bad = b'["ship","T",0,0,4,null,[[5,{"pk":{"S":"a"}},"v",{"pk":{"S":"a"}},0,false,' + size + b"]]]"
        with pytest.raises(MessageError):
            decode(bad)
    with pytest.raises(MessageError):  # a delete has no image, so no size either
        decode(b'["ship","T",0,0,4,null,[[5,{"pk":{"S":"a"}},"v",null,0,false,3]]]')
