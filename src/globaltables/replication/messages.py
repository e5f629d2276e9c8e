"""The replication protocol's messages and their wire codec.

Two messages (docs/replication.md, "Messages"):
- `Ship(table, lane, epoch, prev_pos, records)`: the origin's records of one lane, in log order, covering the log
  positions (prev_pos, records[-1].pos]: every record of the lane in that range is included, none is skipped.
- `ShipAck(table, lane, epoch, applied_pos, gap, deferred)`: the receiver's durable applied position after handling
  a Ship; `gap` when the Ship did not connect to what it has applied (something upstream was lost or overtaken);
  `deferred` when the receiver applied only a prefix of the Ship for lack of write capacity (back-pressure,
  docs/capacity.md decision 16): the sender ships the rest again after `defer_retry`. The codec sends `deferred`
  as an eighth element and reads acks of seven (a peer of an earlier release never defers).
Both carry `stamp`, the sender's HLC stamp when it sent the message (or None), so the HLC receive rule can run on
every protocol message, not only on the records.

Codec: one compact orjson array per message, the first element its tag, fields in declaration order. Records
(engine/mutation.py's `Mutation`, the one shipped-change type) are arrays `[pos, key, version, image, commit_ms, service, size]`: key and image in normalised wire form (`{"S": "x"}`),
`size` the image's item size as the origin counted it (so receivers need not count it again), key null when the
image carries it (the origin embeds its stored JSON image as it is, `orjson.Fragment`), version the
order-preserving `"<hlc>/<region>"` string (replication/hlc.py), image null for a delete. Arrays rather than
objects keep a batch of a thousand small items about half the size and twice as fast to decode. `decode` refuses
anything malformed with `MessageError`, so a peer's garbage can never reach the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..engine.mutation import Mutation

SHIP = "ship"
SHIP_ACK = "ack"


class MessageError(ValueError):
    """A replication message that does not decode (wrong shape or types)."""


@dataclass(frozen=True, slots=True)
class Ship:
    table: str
    lane: int
    epoch: int
    prev_pos: int
    records: tuple[Mutation, ...]
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
    deferred: bool = False


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
                [[r.pos, r.key, r.version, r.image, r.commit_ms, r.service, r.size] for r in message.records],
            ]
        )
    if type(message) is ShipAck:
        return orjson.dumps(
            [
                SHIP_ACK, message.table, message.lane, message.epoch, message.applied_pos, message.gap,
                message.stamp, message.deferred,
            ]
        )  # fmt: skip
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


def _record(raw: Any, last: int) -> Mutation:
    """One record of a Ship, checked field by field (`last`: the position it must follow)."""
    if not isinstance(raw, list) or len(raw) not in (6, 7):
        raise MessageError("a record must be an array [pos, key, version, image, commit_ms, service, size]")
    # A peer of an earlier release sends no size: the receiver counts it.
    pos, key, version, image, commit_ms, service, size = raw if len(raw) == 7 else (*raw, None)
    pos = _int(pos, "record pos")
    if pos <= last:
        raise MessageError(f"record positions must increase after prev_pos: {pos} after {last}")
    if image is not None and not isinstance(image, dict):
        raise MessageError("record image must be an object or null")
    if (key is not None or image is None) and (not isinstance(key, dict) or not key):
        raise MessageError("record key must be a non-empty object (or null when the image carries it)")
    if type(commit_ms) is not int:
        raise MessageError("record commit_ms must be an integer")
    if type(service) is not bool:
        raise MessageError("record service must be a boolean")
    if size is not None and (image is None or type(size) is not int or size < 0):
        raise MessageError("record size must be a non-negative integer, and only with an image")
    return Mutation(pos, key, _str(version, "record version"), image, commit_ms, service, size)


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
        append = records.append
        # The checked array is the record's fields in order: the tuple is made from it directly (the NamedTuple's
        # own `__new__` is a Python function, a call with seven arguments per record).
        make = tuple.__new__
        for raw in raw_records:
            # The common record (a current peer's write: 7 fields, an image, no key) in one test; anything else,
            # or anything wrong, goes through `_record`, which names what is wrong.
            if type(raw) is list and len(raw) == 7:
                pos, key, version, image, commit_ms, service, size = raw
                if (
                    type(pos) is int and pos > last and key is None and type(image) is dict and type(version) is str
                    and version and type(commit_ms) is int and type(service) is bool
                    and (size is None or (type(size) is int and size >= 0))
                ):  # fmt: skip
                    last = pos
                    append(make(Mutation, raw))
                    continue
            record = _record(raw, last)
            last = record.pos
            append(record)
        return Ship(
            _str(table, "table"), _int(lane, "lane"), _int(epoch, "epoch"), prev, tuple(records),
            _str(stamp, "stamp", optional=True),
        )  # fmt: skip
    if tag == SHIP_ACK:
        if len(body) not in (7, 8):
            raise MessageError(f"ack has {len(body) - 1} fields, expected 7")
        _, table, lane, epoch, applied_pos, gap, stamp, deferred = body if len(body) == 8 else (*body, False)
        if type(gap) is not bool:
            raise MessageError(f"gap must be a boolean, not {gap!r}")
        if type(deferred) is not bool:
            raise MessageError(f"deferred must be a boolean, not {deferred!r}")
        return ShipAck(
            _str(table, "table"), _int(lane, "lane"), _int(epoch, "epoch"), _int(applied_pos, "applied_pos"), gap,
            _str(stamp, "stamp", optional=True), deferred,
        )  # fmt: skip
    raise MessageError(f"unknown replication message type {tag!r}")
