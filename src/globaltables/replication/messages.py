"""The replication protocol's messages and their wire codec.

Two messages (docs/replication.md, "Messages"):
- `Ship(table, lane, epoch, prev_pos, records)`: the origin's records of one lane, in log order, covering the log
  positions (prev_pos, records[-1].pos]: every record of the lane in that range is included, none is skipped.
- `ShipAck(table, lane, epoch, applied_pos, gap)`: the receiver's durable applied position after handling a Ship;
  `gap` when the Ship did not connect to what it has applied (something upstream was lost or overtaken).
Both carry `stamp`, the sender's HLC stamp when it sent the message (or None), so the HLC receive rule can run on
every protocol message, not only on the records.

Codec: one compact orjson array per message, the first element its tag, fields in declaration order. Records are
arrays `[pos, key, version, image, commit_ms]`: key and image in normalised wire form (`{"S": "x"}`), version the
order-preserving `"<hlc>/<region>"` string (replication/hlc.py), image null for a delete. Arrays rather than
objects keep a batch of a thousand small items about half the size and twice as fast to decode. `decode` refuses
anything malformed with `MessageError`, so a peer's garbage can never reach the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

SHIP = "ship"
SHIP_ACK = "ack"


class MessageError(ValueError):
    """A replication message that does not decode (wrong shape or types)."""


class Record(NamedTuple):
    """One replicated item version, as shipped. Field-compatible with the engine port's `ReplicatedRecord`.
    (A NamedTuple: immutable like a frozen dataclass, and several times cheaper to build, once per record.)"""

    pos: int  # sequence number in the origin's table log
    key: dict[str, Any]  # the item's key attributes (normalised wire form)
    version: str  # "<hlc>/<origin>"
    image: dict[str, Any] | None  # the whole new item; None for a delete
    commit_ms: int  # origin's wall clock at commit (lag metrics only)
    service: bool = False  # a deletion DynamoDB made itself (TTL): applies only where the item has expired too


@dataclass(frozen=True, slots=True)
class Ship:
    table: str
    lane: int
    epoch: int
    prev_pos: int
    records: tuple[Any, ...]  # Record or any object with the same fields (the port's ReplicatedRecord)
    stamp: str | None = None

    @property
    def last_pos(self) -> int:
        return self.records[-1].pos if self.records else self.prev_pos


@dataclass(frozen=True, slots=True)
class ShipAck:
    table: str
    lane: int
    epoch: int
    applied_pos: int
    gap: bool
    stamp: str | None = None


Message = Ship | ShipAck


def encode(message: Message) -> bytes:
    if type(message) is Ship:
        return orjson.dumps(
            [
                SHIP,
                message.table,
                message.lane,
                message.epoch,
                message.prev_pos,
                message.stamp,
                [[r.pos, r.key, r.version, r.image, r.commit_ms, r.service] for r in message.records],
            ]
        )
    if type(message) is ShipAck:
        return orjson.dumps(
            [SHIP_ACK, message.table, message.lane, message.epoch, message.applied_pos, message.gap, message.stamp]
        )
    raise TypeError(f"not a replication message: {message!r}")


def _int(value: Any, field: str) -> int:
    # bool is an int subclass; a position or epoch of `true` is garbage.
    if type(value) is not int or value < 0:
        raise MessageError(f"{field} must be a non-negative integer, not {value!r}")
    return value


def _str(value: Any, field: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if type(value) is not str or not value:
        raise MessageError(f"{field} must be a non-empty string, not {value!r}")
    return value


def decode(data: bytes | str) -> Message:
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise MessageError(f"replication message is not JSON: {error}") from None
    if not isinstance(body, list) or not body:
        raise MessageError("replication message must be a non-empty JSON array")
    tag = body[0]
    if tag == SHIP:
        if len(body) != 7:
            raise MessageError(f"ship has {len(body) - 1} fields, expected 6")
        _, table, lane, epoch, prev_pos, stamp, raw_records = body
        if not isinstance(raw_records, list):
            raise MessageError("ship records must be an array")
        prev = _int(prev_pos, "prev_pos")
        records = []
        last = prev
        for raw in raw_records:
            if not isinstance(raw, list) or len(raw) != 6:
                raise MessageError("a record must be an array [pos, key, version, image, commit_ms, service]")
            pos, key, version, image, commit_ms, service = raw
            pos = _int(pos, "record pos")
            if pos <= last:
                raise MessageError(f"record positions must increase after prev_pos: {pos} after {last}")
            last = pos
            if not isinstance(key, dict) or not key:
                raise MessageError("record key must be a non-empty object")
            if image is not None and not isinstance(image, dict):
                raise MessageError("record image must be an object or null")
            if type(commit_ms) is not int:
                raise MessageError("record commit_ms must be an integer")
            if type(service) is not bool:
                raise MessageError("record service must be a boolean")
            records.append(Record(pos, key, _str(version, "record version"), image, commit_ms, service))
        return Ship(
            _str(table, "table"), _int(lane, "lane"), _int(epoch, "epoch"), prev, tuple(records),
            _str(stamp, "stamp", optional=True),
        )  # fmt: skip
    if tag == SHIP_ACK:
        if len(body) != 7:
            raise MessageError(f"ack has {len(body) - 1} fields, expected 6")
        _, table, lane, epoch, applied_pos, gap, stamp = body
        if type(gap) is not bool:
            raise MessageError(f"gap must be a boolean, not {gap!r}")
        return ShipAck(
            _str(table, "table"), _int(lane, "lane"), _int(epoch, "epoch"), _int(applied_pos, "applied_pos"), gap,
            _str(stamp, "stamp", optional=True),
        )  # fmt: skip
    raise MessageError(f"unknown replication message type {tag!r}")
