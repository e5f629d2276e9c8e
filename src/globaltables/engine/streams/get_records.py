"""GetRecords: the records at an iterator's position, in sequence order, and the iterator for what follows.

At most `Limit` records (1000 by default and at most) and about 1 MB per call. NextShardIterator is absent once a
closed shard (a disabled stream) has been read to its end; an open shard always gives one, even when there was
nothing new. An iterator whose position retention has removed meanwhile gets TrimmedDataAccessException.
"""

from __future__ import annotations

from ..errors import TrimmedDataAccessException
from ..validation import Int, Str, check_request
from . import shard_iterator
from .records import wire_record

MAX_LIMIT = 1000
MAX_RESPONSE_BYTES = 1024 * 1024

FIELDS = {
    "ShardIterator": Str(required=True, min_length=1, max_length=2048),
    "Limit": Int(minimum=1, maximum=MAX_LIMIT),
}

TRIMMED = "The shard iterator points to records that are beyond the trim horizon of the stream"


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    now = engine.clock.wall_time()
    arn, position = shard_iterator.decode(engine, request["ShardIterator"], now)
    log = engine.change_log
    stream = log.stream(arn)
    if position <= log.trimmed(stream.tid):
        raise TrimmedDataAccessException(TRIMMED)
    limit = request.get("Limit") or MAX_LIMIT
    records = []
    size = 0
    next_position = position
    truncated = False
    found = log.read(stream, position, limit)
    try:
        for record in found:
            shown = wire_record(stream, record, engine.region)
            size += shown["dynamodb"]["SizeBytes"]
            if records and size > MAX_RESPONSE_BYTES:
                truncated = True
                break
            records.append(shown)
            next_position = record.seq + 1
    finally:
        found.close()
    response: dict = {"Records": records}
    # A closed shard read to its end has no next iterator; an open one always has.
    at_end = not truncated and len(records) < limit
    if stream.enabled or not (at_end or next_position > stream.end_seq):
        response["NextShardIterator"] = shard_iterator.encode(engine, arn, next_position, now)
    return response
