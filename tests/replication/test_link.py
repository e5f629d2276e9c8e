"""ReplicationLink in isolation: windows, acks, go-back-N rewinds, the retransmit timer, and failing on a trimmed log."""

from __future__ import annotations

import pytest

from globaltables.replication.config import ReplicationConfig
from globaltables.replication.hlc import HybridLogicalClock
from globaltables.replication.link import ReplicationLink
from globaltables.replication.messages import ShipAck, decode
from replication.fake_port import FakePort

LANE = 0


def port_with(records: int, lanes: int = 1) -> FakePort:
    port = FakePort("us-east-1", HybridLogicalClock(lambda: 1_000, 500), ("eu-west-1",), ("T",), lanes)
    for i in range(records):
        port.write("T", {"pk": {"S": f"k{i}"}}, {"pk": {"S": f"k{i}"}, "value": {"S": f"v{i}"}})
    return port


def link_for(port: FakePort, **config) -> ReplicationLink:
    return ReplicationLink("eu-west-1", "T", LANE, port, ReplicationConfig(**config))


def ack(link: ReplicationLink, applied: int, gap: bool = False, epoch: int | None = None) -> ShipAck:
    return ShipAck("T", LANE, link.epoch if epoch is None else epoch, applied, gap)


def test_ships_in_batches_up_to_the_window_and_each_batch_says_where_it_starts():
    port = port_with(10)
    link = link_for(port, batch_records=3, window_records=7)
    ships = link.poll(0.0, port.log_end("T", LANE))
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(0, [1, 2, 3]), (3, [4, 5, 6]), (6, [7])]
    assert link.sent == 7 and link.in_flight == 7
    assert decode(ships[0][1]) == ships[0][0].__class__("T", LANE, 0, 0, tuple(decode(ships[0][1]).records), None)
    assert link.poll(0.1, port.log_end("T", LANE)) == []  # window full
    link.on_ack(ack(link, 3), 0.2)
    assert link.acked == 3 and port.acked_position("eu-west-1", "T", LANE) == 3  # durable
    more = link.poll(0.2, port.log_end("T", LANE))
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in more] == [(7, [8, 9, 10])]


def test_a_gap_ack_of_the_current_epoch_rewinds_to_the_acked_position_and_older_epochs_are_ignored():
    port = port_with(6)
    link = link_for(port, batch_records=2)
    link.poll(0.0, 6)
    link.on_ack(ack(link, 2), 0.1)
    link.on_ack(ack(link, 2, gap=True), 0.1)  # the Ship (2, 4] was lost
    assert (link.sent, link.epoch, link.in_flight) == (2, 1, 0)
    ships = link.poll(0.1, 6)
    assert [(s.epoch, s.prev_pos) for s, _ in ships] == [(1, 2), (1, 4)]
    link.on_ack(ack(link, 2, gap=True, epoch=0), 0.2)  # an answer to a Ship sent before the rewind
    assert (link.sent, link.epoch) == (6, 1)
    link.on_ack(ack(link, 4, epoch=0), 0.2)  # but an old ack still advances the durable position
    assert link.acked == 4


def test_retransmits_after_silence_with_backoff_and_resumes_from_the_acked_position():
    port = port_with(4)
    link = link_for(port, batch_records=10, retransmit_after=1.0, max_backoff=4)
    link.poll(0.0, 4)
    assert link.next_deadline() == 1.0
    assert link.poll(0.5, 4) == []
    again = link.poll(1.0, 4)
    assert [(s.epoch, s.prev_pos, len(s.records)) for s, _ in again] == [(1, 0, 4)]
    assert link.next_deadline() == 3.0  # doubled
    link.poll(3.0, 4)
    assert link.next_deadline() == 3.0 + 4.0  # capped at max_backoff
    link.on_ack(ack(link, 4), 5.0)
    assert link.next_deadline() is None and link.in_flight == 0


def test_a_timed_out_link_probes_with_one_ship_until_the_peer_answers():
    port = port_with(10)
    link = link_for(port, batch_records=2, retransmit_after=1.0)
    assert len(link.poll(0.0, 10)) == 5  # the whole window
    probe = link.poll(1.0, 10)  # silence: rewind, then one Ship only (a partitioned peer costs a trickle)
    assert [(s.epoch, s.prev_pos, len(s.records)) for s, _ in probe] == [(1, 0, 2)]
    assert link.poll(1.5, 10) == []
    link.on_ack(ack(link, 2), 1.6)  # the peer hears us again: the window opens
    assert [s.prev_pos for s, _ in link.poll(1.6, 10)] == [2, 4, 6, 8]


def test_hearing_from_the_peer_ends_the_backoff_at_most_once_per_retransmit_interval():
    port = port_with(4)
    link = link_for(port, retransmit_after=1.0, max_backoff=8)
    link.poll(0.0, 4)
    link.poll(1.0, 4)
    link.poll(3.0, 4)
    assert link.backing_off and link.next_deadline() == 3.0 + 4.0
    link.peer_heard(3.5)  # too soon after the last retry: nothing changes
    assert link.next_deadline() == 7.0
    link.peer_heard(4.2)
    assert link.next_deadline() == 4.2
    assert [(s.epoch, s.prev_pos) for s, _ in link.poll(4.2, 4)] == [(3, 0)]
    assert link.next_deadline() == 4.2 + 2.0


def test_an_ack_beyond_what_we_sent_moves_sent_forward():
    # After a sender restart, acked (durable) may lag what the peer really applied.
    port = port_with(5)
    link = link_for(port)
    link.on_ack(ack(link, 3), 0.0)
    assert (link.acked, link.sent) == (3, 3)
    ships = link.poll(0.0, 5)
    assert [r.pos for r in ships[0][0].records] == [4, 5]


def test_the_link_fails_loudly_when_the_log_was_trimmed_past_the_peer(caplog):
    port = port_with(6)
    link = link_for(port, batch_records=2)
    link.poll(0.0, 6)
    link.on_ack(ack(link, 2), 0.1)
    port.trim("T", LANE, 4)  # records 3 and 4 gone although the peer never acknowledged them
    link.on_ack(ack(link, 2, gap=True), 0.2)
    assert link.poll(0.2, 6) == []
    assert link.state == "failed" and "trimmed past position 2" in link.error
    assert "failed" in caplog.text
    assert link.next_deadline() is None and link.poll(9.0, 6) == []


def test_a_link_resumes_from_its_durable_acked_position_when_recreated():
    port = port_with(5)
    link = link_for(port)
    link.poll(0.0, 5)
    link.on_ack(ack(link, 3), 0.1)
    fresh = link_for(port)  # a restart: only the durable position survives
    assert (fresh.acked, fresh.sent) == (3, 3)
    assert [r.pos for r in fresh.poll(0.0, 5)[0][0].records] == [4, 5]


def test_a_batch_larger_than_batch_bytes_is_split():
    port = port_with(0)
    for i in range(4):
        port.write("T", {"pk": {"S": f"k{i}"}}, {"pk": {"S": f"k{i}"}, "blob": {"S": "x" * 380}})
    link = link_for(port, batch_bytes=1000)
    ships = link.poll(0.0, 4)
    assert [len(s.records) for s, _ in ships] == [2, 2]
    assert all(len(data) <= 1000 for _, data in ships)


@pytest.mark.parametrize("size", [1])
def test_a_single_record_larger_than_batch_bytes_still_ships(size):
    port = port_with(0)
    port.write("T", {"pk": {"S": "big"}}, {"pk": {"S": "big"}, "blob": {"S": "x" * 2000}})
    ships = link_for(port, batch_bytes=1000).poll(0.0, 1)
    assert len(ships) == size and len(ships[0][1]) > 1000


# ------------------------------------------------------------------------------------ Nagle without a timer


def write(port: FakePort, i: int) -> None:
    port.write("T", {"pk": {"S": f"n{i}"}}, {"pk": {"S": f"n{i}"}, "value": {"S": f"w{i}"}})


def test_an_idle_link_ships_a_single_record_at_once():
    port = port_with(1)
    link = link_for(port, batch_records=100, eager_ships=1)
    ships = link.poll(0.0, port.log_end("T", LANE))
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(0, [1])]


def test_a_busy_link_batches_what_commits_while_its_ship_is_unacknowledged():
    port = port_with(1)
    link = link_for(port, batch_records=100, eager_ships=1)
    assert len(link.poll(0.0, port.log_end("T", LANE))) == 1
    for i in range(5):  # committed while the first Ship is out: held back, however often the link is polled
        write(port, i)
        assert link.poll(0.001 * (i + 1), port.log_end("T", LANE)) == []
    assert (link.sent, link.in_flight) == (1, 1)
    link.on_ack(ack(link, 1), 0.08)
    ships = link.poll(0.08, port.log_end("T", LANE))
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(1, [2, 3, 4, 5, 6])]  # one Ship


def test_eager_ships_partial_ships_may_be_out_before_records_wait():
    port = port_with(0)
    link = link_for(port, batch_records=100, eager_ships=3)
    shipped = []
    for i in range(5):
        write(port, i)
        shipped.append(len(link.poll(0.001 * i, port.log_end("T", LANE))))
    assert shipped == [1, 1, 1, 0, 0] and link.in_flight == 3
    link.on_ack(ack(link, 1), 0.08)  # one Ship answered: one more may go, carrying both waiting records
    ships = link.poll(0.08, port.log_end("T", LANE))
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(3, [4, 5])]


def test_a_busy_link_still_ships_full_batches_at_once():
    port = port_with(1)
    link = link_for(port, batch_records=4, window_records=100, eager_ships=1)
    link.poll(0.0, port.log_end("T", LANE))
    for i in range(9):
        write(port, i)
    ships = link.poll(0.01, port.log_end("T", LANE))
    # Two full Ships go while the first is out (the window allows them); the one record left waits for an ack.
    assert [(s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(1, [2, 3, 4, 5]), (5, [6, 7, 8, 9])]
    assert link.sent == 9 and port.log_end("T", LANE) == 10


def test_a_ship_full_by_bytes_goes_while_the_link_is_busy():
    port = port_with(1)
    link = link_for(port, batch_records=100, batch_bytes=700, eager_ships=1)
    link.poll(0.0, port.log_end("T", LANE))
    for i in range(20):
        write(port, i)
    ships = link.poll(0.01, port.log_end("T", LANE))
    assert ships and all(len(data) <= 700 for _, data in ships)
    assert link.sent < port.log_end("T", LANE)  # the remainder, not a full Ship, waits


def test_a_held_back_link_does_not_read_the_log_again_until_a_ship_could_be_full():
    port = port_with(1)
    link = link_for(port, batch_records=10, eager_ships=1)
    link.poll(0.0, port.log_end("T", LANE))
    reads = []
    local_records = port.local_records
    port.local_records = lambda *args: reads.append(args) or local_records(*args)
    for i in range(12):
        write(port, i)
        link.poll(0.001 * i, port.log_end("T", LANE))
    # Read when the first record waited, then again only once ten more positions could fill a Ship, which went.
    assert len(reads) == 3 and link.sent == 11
    link.on_ack(ack(link, 11), 0.1)
    assert [[r.pos for r in s.records] for s, _ in link.poll(0.1, port.log_end("T", LANE))] == [[12, 13]]


def test_a_rewind_ships_again_at_once_whatever_was_held_back():
    port = port_with(1)
    link = link_for(port, batch_records=100, eager_ships=1, retransmit_after=1.0)
    link.poll(0.0, port.log_end("T", LANE))
    write(port, 0)
    assert link.poll(0.5, port.log_end("T", LANE)) == []
    link.on_ack(ack(link, 0, gap=True), 0.6)  # the first Ship was lost
    ships = link.poll(0.6, port.log_end("T", LANE))
    assert [(s.epoch, s.prev_pos, [r.pos for r in s.records]) for s, _ in ships] == [(1, 0, [1, 2])]
