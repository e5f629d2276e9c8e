"""`RegionNode`: one region's replication core — its links to every peer, and its receiver — with no I/O.

Theory of operation: a host (the region process over aiohttp, or the simulator) owns the clock and the transport
and drives the node with four calls, passing the current time in seconds (its monotonic clock):
  - `on_local_commit(now)` after a client write committed: a poll is due at once (no flush timer); each link
    ships it now if it is idle, or with whatever else accumulated when an ack frees it (replication/link.py,
    Nagle without a timer);
  - `poll(now)` when `next_deadline()` has come: ships what the windows allow, retransmits what timed out;
  - `on_message(envelope, now)` for every envelope that arrives; answers Ships with acks, and refills the window
    of a link whose ack made room;
  - `next_deadline()`: when to call `poll` next (None: nothing to do until a commit or a message).
Every call returns the envelopes to send. Envelopes carry the encoded message (bytes) and travel on the channel
`"<table>/<lane>"`, which the transport keeps in order (FIFO per (src, dest, channel)); acks answer on the same
channel. The node only ships writes that originated here (the port's `local_records`), never relays.

Replication of a table can be held towards some peers (`hold`, the chaos action `pause-replication`, named after
AWS FIS's aws:dynamodb:global-table-pause-replication): a held link ships nothing, not even retransmissions; the
records wait in the change log, and when the hold ends the next poll ships them in order as after a partition.

The HLC send and receive rules run on protocol messages too (a message carries its sender's stamp), when the host
gives the node the region's clock (or the port exposes it as `hlc`).
"""

from __future__ import annotations

import logging
from typing import Any

from ..runtime.transport import Envelope
from .config import ReplicationConfig
from .hlc import HlcTimestamp, HybridLogicalClock
from .link import ReplicationLink
from .messages import SHIP, SHIP_ACK, MessageError, Ship, ShipAck, decode, encode
from .port import ReplicaPortLike
from .receiver import AppliedObserver, Receiver

logger = logging.getLogger(__name__)

PENDING_COUNT_CAP = 100_000  # status() counts unacknowledged records up to this many per link


def channel_of(table: str, lane: int) -> str:
    return f"{table}/{lane}"


class RegionNode:
    def __init__(
        self,
        region: str,
        peers: list[str] | tuple[str, ...],
        port: ReplicaPortLike,
        config: ReplicationConfig | None = None,
        *,
        hlc: HybridLogicalClock | None = None,
        on_applied: AppliedObserver | None = None,
    ) -> None:
        if region in peers:
            raise ValueError(f"region {region!r} cannot be its own peer")
        self.region = region
        self.peers = tuple(sorted(peers))
        self.port = port
        self.config = config or ReplicationConfig()
        self.hlc = hlc if hlc is not None else getattr(port, "hlc", None)
        self.receiver = Receiver(port, on_applied)
        # (peer, table, lane) -> link; created in a deterministic order as tables appear.
        self.links: dict[tuple[str, str, int], ReplicationLink] = {}
        self._lanes: dict[str, list[list[ReplicationLink]]] = {}  # table -> lane -> links to every peer
        # table -> the replicas its links were built for; a change (a replica added or removed) rebuilds them.
        self._members: dict[str, list[str]] = {}
        self._poll_at: float | None = 0.0  # a first poll picks up whatever the log holds (e.g. after a restart)
        self._msg_id = 0
        self.dropped_messages = 0
        self._backing_off: set[str] = set()  # peers with a link in retransmit backoff (see `peer_heard`)
        self.held: dict[str, frozenset[str]] = {}  # table -> peers its records are not shipped to (`hold`)

    def hold(self, held: dict[str, frozenset[str]]) -> None:
        """Replace the held (table -> peers) replication; a hold that ends ships at the next poll."""
        self.held = {table: frozenset(peers) for table, peers in held.items() if peers}
        self._poll_at = 0.0  # due at once: the next poll ships what a hold that ended kept back

    # ------------------------------------------------------------------------------------------------ inputs

    def on_local_commit(self, now: float | None = None) -> bool:
        """A client write committed: a poll is due now, which ships it on every link that is not busy (a busy link
        ships it with what follows when an ack comes). Whether that moved `next_deadline()` (False: a poll was
        already due, which will see this write too; commits between two polls share Ships)."""
        if self._poll_at is not None:
            return False
        self._poll_at = now if now is not None else float("-inf")
        return True

    def poll(self, now: float) -> list[Envelope]:
        self._poll_at = None
        out: list[Envelope] = []
        port = self.port
        tables = port.global_tables()
        if len(tables) != len(self._lanes):
            for gone in set(self._lanes) - set(tables):  # no longer global here: its links go
                self._drop_links(gone)
        for table in tables:
            lanes = self._lanes.get(table)
            if lanes is None or self._members.get(table) != port.peers(table):
                lanes = self._add_table(table)
            held = self.held.get(table, ())
            for lane, links in enumerate(lanes):
                log_end = port.log_end(table, lane)
                for link in links:
                    if link.peer in held:
                        continue
                    if link.state == "active" and (link.sent < log_end or link.sent > link.acked):
                        self._ship(link, link.poll(now, log_end, self._stamp), out)
        return out

    def on_message(self, envelope: Envelope, now: float) -> list[Envelope]:
        return self.on_messages([envelope], now)

    def on_messages(self, envelopes: list[Envelope], now: float) -> list[Envelope]:
        """Envelopes that arrived together (a host hands over whatever it received before it got to run). Ships
        of the same (origin, table, lane) and epoch that connect, in arrival order, are applied in one store
        transaction (up to `apply_records` records) and answered with one ack, which acknowledges them all."""
        out: list[Envelope] = []
        runs: dict[tuple[str, str, int], list[tuple[Envelope, Ship]]] = {}
        for envelope in envelopes:
            message = self._accept(envelope, now)
            if message is None:
                continue
            src = envelope.src
            if type(message) is Ship:
                port = self.port
                table = message.table
                lane = message.lane
                if table not in port.global_tables() or lane >= port.lanes(table) or src not in port.peers(table):
                    # Not (yet) a replica of this table here: no ack, so the sender retries later with backoff.
                    self._drop(envelope, f"no replica of {message.table} lane {message.lane} here")
                    continue
                runs.setdefault((src, table, message.lane), []).append((envelope, message))
            else:
                self._on_ack(src, envelope, message, now, out)  # type: ignore[arg-type]
        limit = self.config.apply_records
        for (src, _table, _lane), ships in runs.items():
            group = [ships[0]]
            end, count = ships[0][1].last_pos, len(ships[0][1].records)
            for envelope, ship in ships[1:]:
                if ship.epoch == group[0][1].epoch and ship.prev_pos <= end and count < limit:
                    group.append((envelope, ship))
                    if ship.last_pos > end:  # a duplicate adds nothing to apply
                        end, count = ship.last_pos, count + len(ship.records)
                    continue
                self._apply(src, group, out)
                group, end, count = [(envelope, ship)], ship.last_pos, len(ship.records)
            self._apply(src, group, out)
        return out

    def _accept(self, envelope: Envelope, now: float) -> Ship | ShipAck | None:
        """The envelope's message, after the HLC receive rule; None (dropped and counted) if it is not one."""
        src = envelope.src
        if src not in self.peers:
            self._drop(envelope, f"unknown peer {src!r}")
            return None
        try:
            message = decode(envelope.body)  # type: ignore[arg-type]
        except (MessageError, TypeError) as error:
            self._drop(envelope, str(error))
            return None
        if message.stamp is not None and self.hlc is not None:
            try:
                self.hlc.update(HlcTimestamp.parse(message.stamp))
            except ValueError as error:
                self._drop(envelope, str(error))
                return None
        if src in self._backing_off:
            self._peer_heard(src, now)
        return message

    def _apply(self, src: str, group: list[tuple[Envelope, Ship]], out: list[Envelope]) -> None:
        ack = self.receiver.on_ships(src, [ship for _, ship in group], self._stamp())
        self._msg_id += 1
        out.append(group[-1][0].reply(SHIP_ACK, self._msg_id, encode(ack)))

    def _on_ack(self, src: str, envelope: Envelope, message: ShipAck, now: float, out: list[Envelope]) -> None:
        link = self.links.get((src, message.table, message.lane))
        if link is None:
            self._drop(envelope, f"ack for unknown link {message.table}/{message.lane}")
            return
        link.on_ack(message, now)
        log_end = self.port.log_end(link.table, link.lane)
        if link.wants_to_ship(log_end) and link.peer not in self.held.get(link.table, ()):
            self._ship(link, link.poll(now, log_end, self._stamp), out)

    # ------------------------------------------------------------------------------------------------ timing

    def next_deadline(self) -> float | None:
        # Asked after every message and commit (the host re-arms its timer), so the common case — an idle link —
        # costs two attribute reads; the hold test only runs for a link with a timer.
        deadline = self._poll_at
        held = self.held
        for link in self.links.values():
            if link.sent > link.acked or link.deferring:  # records unacknowledged, or deferred by the peer
                if held and link.peer in held.get(link.table, ()):
                    continue  # a held link has no timer: nothing is retransmitted while it is held
                at = link.next_deadline()
                if at is not None and (deadline is None or at < deadline):
                    deadline = at
        return deadline

    # ------------------------------------------------------------------------------------------------ status

    def status(self) -> dict[str, Any]:
        port = self.port
        links = []
        for (peer, table, lane), link in self.links.items():
            entry = link.status(port.log_end(table, lane))
            count = getattr(port, "pending_count", None)  # the engine port counts in SQL, without reading records
            entry["pending"] = (
                count(table, lane, link.acked)
                if count is not None
                else len(port.local_records(table, lane, link.acked, PENDING_COUNT_CAP))
            )
            links.append(entry)
        applied = [
            {"origin": peer, "table": table, "lane": lane, "applied": port.applied_position(peer, table, lane)}
            for table in port.global_tables()
            for peer in self.peers
            if peer in port.peers(table)
            for lane in range(port.lanes(table))
        ]
        receiver = self.receiver
        return {
            "region": self.region,
            "links": links,
            "applied": applied,
            "held": {table: sorted(peers) for table, peers in sorted(self.held.items())},
            "received": {
                "applied_records": receiver.applied_records,
                "won": receiver.won,
                "duplicates": receiver.duplicates,
                "gaps": receiver.gaps,
                "deferred": receiver.deferred,
                "dropped_messages": self.dropped_messages,
            },
        }

    def idle(self) -> bool:
        """Every local record acknowledged by every peer (or its link failed), and nothing due."""
        port = self.port
        for table in port.global_tables():
            peers = port.peers(table)
            for lane in range(port.lanes(table)):
                log_end = port.log_end(table, lane)
                for peer in self.peers:
                    if peer not in peers:
                        continue
                    link = self.links.get((peer, table, lane))
                    acked = link.acked if link is not None else port.acked_position(peer, table, lane)
                    if acked < log_end and (link is None or link.state == "active"):
                        return False
        return True

    # ----------------------------------------------------------------------------------------------- helpers

    def reset_peer(self, table: str, peer: str) -> None:
        """Forget the links of (table, peer): the next poll builds them again from the port's acknowledged
        positions (a replica added with positions from a snapshot, or removed)."""
        for key in [key for key in self.links if key[0] == peer and key[1] == table]:
            del self.links[key]
        self._members.pop(table, None)

    def _drop_links(self, table: str) -> None:
        for key in [key for key in self.links if key[1] == table]:
            del self.links[key]
        self._lanes.pop(table, None)
        self._members.pop(table, None)

    def _add_table(self, table: str) -> list[list[ReplicationLink]]:
        """The table's links to its current replicas, keeping those that exist (membership may have changed)."""
        lanes = []
        replicas = self.port.peers(table)
        lane_count = self.port.lanes(table)
        for key in [key for key in self.links if key[1] == table and (key[0] not in replicas or key[2] >= lane_count)]:
            del self.links[key]
        for lane in range(lane_count):
            links = []
            for peer in self.peers:
                if peer not in replicas:
                    continue
                link = self.links.get((peer, table, lane))
                if link is None:
                    link = ReplicationLink(peer, table, lane, self.port, self.config)
                    self.links[(peer, table, lane)] = link
                links.append(link)
            lanes.append(links)
        self._lanes[table] = lanes
        self._members[table] = list(replicas)
        return lanes

    def _peer_heard(self, peer: str, now: float) -> None:
        self._backing_off.discard(peer)
        for (to, _table, _lane), link in self.links.items():
            if to == peer:
                link.peer_heard(now)

    def _ship(self, link: ReplicationLink, batches: list[tuple[Ship, bytes]], out: list[Envelope]) -> None:
        if link.backing_off:
            self._backing_off.add(link.peer)
        channel = channel_of(link.table, link.lane)
        for _, data in batches:
            self._msg_id += 1
            out.append(Envelope(self.region, link.peer, SHIP, self._msg_id, None, data, channel))

    def _stamp(self) -> str | None:
        hlc = self.hlc
        return hlc.encode(hlc.now()) if hlc is not None else None

    def _drop(self, envelope: Envelope, reason: str) -> list[Envelope]:
        self.dropped_messages += 1
        logger.warning("replication message %r dropped: %s", envelope, reason)
        return []
