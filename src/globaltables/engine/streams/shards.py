"""How streams, shards and sequence numbers look on the wire.

- A stream ARN is `<table arn>/stream/<label>`; the label is the stream's creation time (ISO 8601, milliseconds).
- Each stream has exactly one shard. Its id has DynamoDB's shape, `shardId-<20 digits>-<8 hex>`: the digits are the
  stream's creation time in milliseconds, the hex a hash of the ARN, so the id is stable across restarts.
- A sequence number is the change log's per-table sequence number plus 10^20: a numeric string of 21 digits with no
  leading zero (DynamoDB's are 21 to 40 digits), increasing with the log and comparable as numbers.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import ValidationException
from ..storage.records import StreamRow

SEQUENCE_BASE = 10**20
STREAM_ARN = re.compile(r"arn:aws:dynamodb:[a-z0-9-]+:\d{12}:table/[a-zA-Z0-9_.-]{3,255}/stream/[0-9T:.-]+")


def shard_id(stream: StreamRow) -> str:
    digest = hashlib.blake2b(stream.arn.encode(), digest_size=4).hexdigest()
    return f"shardId-{round(stream.created * 1000):020d}-{digest}"


def format_seq(seq: int) -> str:
    return str(SEQUENCE_BASE + seq)


def parse_seq(text: str) -> int:
    """The log sequence number of a wire sequence number; ValidationException if it is not one of ours."""
    if not text.isdigit() or not text.isascii():
        raise ValidationException(f"Invalid SequenceNumber: {text}")
    seq = int(text) - SEQUENCE_BASE
    if seq < 0:
        raise ValidationException(f"Invalid SequenceNumber: {text}")
    return seq


def check_stream_arn(arn: str, parameter: str = "StreamArn") -> None:
    if not STREAM_ARN.fullmatch(arn):
        raise ValidationException(f"Invalid {parameter}")
