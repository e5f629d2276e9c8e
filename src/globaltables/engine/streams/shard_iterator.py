"""Shard iterators: opaque strings carrying a stream, a position in its shard and the time they were issued.

Shape: `<stream arn>|1|<token>`, like DynamoDB's (which also start with the stream ARN). The token is base64url of
(position, issue time in ms) followed by a truncated HMAC-SHA256 over the ARN and those fields, so an iterator that
was cut, altered or made up is refused as malformed rather than read from a wrong place. The key is derived from
the region and account, not drawn at random (the engine draws no randomness and iterators must survive a restart);
it protects against accidents, not against an attacker who reads this source.

An iterator expires 15 minutes after it was issued (on the engine's clock), as DynamoDB's do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct

from ..errors import ExpiredIteratorException, ValidationException

LIFETIME_S = 15 * 60.0
VERSION = "1"
_FIELDS = struct.Struct(">QQ")  # position (next sequence number to read), issue time (epoch ms)
_MAC_BYTES = 16

INVALID = "Invalid ShardIterator"


def _key(region: str, account: str) -> bytes:
    return hashlib.sha256(f"globaltables shard iterator {region} {account}".encode()).digest()


def _mac(key: bytes, arn: str, fields: bytes) -> bytes:
    return hmac.new(key, arn.encode() + b"|" + fields, hashlib.sha256).digest()[:_MAC_BYTES]


def encode(engine, arn: str, position: int, now: float) -> str:
    fields = _FIELDS.pack(position, max(0, round(now * 1000)))
    token = fields + _mac(_key(engine.region, engine.account), arn, fields)
    return f"{arn}|{VERSION}|{base64.urlsafe_b64encode(token).decode().rstrip('=')}"


def decode(engine, iterator: str, now: float) -> tuple[str, int]:
    """(stream arn, position) of a valid, unexpired iterator; ValidationException or ExpiredIteratorException."""
    arn, _, rest = iterator.rpartition("|")
    arn, _, version = arn.rpartition("|")
    if not arn or version != VERSION or not rest.isascii():
        raise ValidationException(INVALID)
    try:
        token = base64.urlsafe_b64decode(rest + "=" * (-len(rest) % 4))
    except (binascii.Error, ValueError):
        raise ValidationException(INVALID) from None
    if len(token) != _FIELDS.size + _MAC_BYTES:
        raise ValidationException(INVALID)
    fields, mac = token[: _FIELDS.size], token[_FIELDS.size :]
    if not hmac.compare_digest(mac, _mac(_key(engine.region, engine.account), arn, fields)):
        raise ValidationException(INVALID)
    position, issued_ms = _FIELDS.unpack(fields)
    if now * 1000 - issued_ms > LIFETIME_S * 1000:
        raise ExpiredIteratorException("Iterator expired. The iterator was created more than 15 minutes ago")
    return arn, position
