"""GetShardIterator: a position in a stream's shard, as an opaque iterator valid for 15 minutes.

TRIM_HORIZON starts at the oldest retained record of the stream, LATEST just after the newest one; AT_ / AFTER_
SEQUENCE_NUMBER at or just after a given record, or the shard's StartingSequenceNumber (valid before the first record
too). A sequence number older than retention is TrimmedDataAccessException; one that was never part of this stream's
shard is a ValidationException, and so is a SequenceNumber given with TRIM_HORIZON or LATEST.
"""

from __future__ import annotations

from ..errors import ResourceNotFoundException, TrimmedDataAccessException, ValidationException
from ..validation import Str, check_request
from . import shard_iterator
from .shards import check_stream_arn, parse_seq, shard_id

FIELDS = {
    "StreamArn": Str(required=True, min_length=37, max_length=1024),
    "ShardId": Str(required=True, min_length=28, max_length=65),
    "ShardIteratorType": Str(
        required=True, enum=("TRIM_HORIZON", "LATEST", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER")
    ),
    "SequenceNumber": Str(min_length=21, max_length=40),
}

NEEDS_SEQUENCE = ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER")
TRIMMED = "The requested sequence number is beyond the trim horizon of the stream (older than its retention period)"


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    arn = request["StreamArn"]
    check_stream_arn(arn)
    kind = request["ShardIteratorType"]
    text = request.get("SequenceNumber")
    if kind in NEEDS_SEQUENCE and text is None:
        raise ValidationException(f"SequenceNumber is required for ShardIteratorType {kind}")
    if kind not in NEEDS_SEQUENCE and text is not None:
        raise ValidationException(f"SequenceNumber cannot be specified for ShardIteratorType {kind}")
    requested = parse_seq(text) if kind in NEEDS_SEQUENCE else None
    log = engine.change_log
    stream = log.stream(arn)
    if request["ShardId"] != shard_id(stream):
        raise ResourceNotFoundException(f"Requested resource not found: Shard does not exist: {request['ShardId']}")
    trimmed = log.trimmed(stream.tid)
    last = log.last_seq(stream)
    oldest = max(stream.start_seq, trimmed + 1)  # the shard's advertised StartingSequenceNumber
    if kind == "TRIM_HORIZON":
        position = oldest
    elif kind == "LATEST":
        position = last + 1
    else:
        assert requested is not None
        if requested <= trimmed:
            raise TrimmedDataAccessException(TRIMMED)
        # Any record's number is valid, and so is the StartingSequenceNumber DescribeStream shows, even before the
        # shard holds a record (then it is the number the first record will get).
        if requested < stream.start_seq or (requested > last and requested != oldest):
            raise ValidationException(f"Invalid SequenceNumber {text} for shard {request['ShardId']}")
        position = requested if kind == "AT_SEQUENCE_NUMBER" else requested + 1
    return {"ShardIterator": shard_iterator.encode(engine, stream.arn, position, engine.clock.wall_time())}
