"""DescribeStream: a stream's status, view type, key schema and its one shard with the sequence numbers it holds.

The shard's StartingSequenceNumber is its oldest record still retained (or, before any record, the number the first
one will get); a disabled stream's shard is closed and also has an EndingSequenceNumber.
"""

from __future__ import annotations

from ..table_description import epoch
from ..validation import Int, Str, Struct, check_request
from .shards import check_stream_arn, format_seq, shard_id

FIELDS = {
    "StreamArn": Str(required=True, min_length=37, max_length=1024),
    "Limit": Int(minimum=1, maximum=100),
    "ExclusiveStartShardId": Str(min_length=28, max_length=65),
    # A ShardFilter names both the filter and the shard it applies to.
    "ShardFilter": Struct(
        {"Type": Str(required=True, enum=("CHILD_SHARDS",)), "ShardId": Str(required=True, min_length=28, max_length=65)}
    ),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    arn = request["StreamArn"]
    check_stream_arn(arn)
    log = engine.change_log
    stream = log.stream(arn)
    shard_name = shard_id(stream)
    start = max(stream.start_seq, log.trimmed(stream.tid) + 1)
    sequence_range = {"StartingSequenceNumber": format_seq(start)}
    if not stream.enabled:
        sequence_range["EndingSequenceNumber"] = format_seq(max(stream.end_seq, start))
    shards = [{"ShardId": shard_name, "SequenceNumberRange": sequence_range}]
    after = request.get("ExclusiveStartShardId")
    if after is not None and after >= shard_name:
        shards = []
    if request.get("ShardFilter") is not None:
        shards = []  # CHILD_SHARDS: a stream's only shard has no children
    return {
        "StreamDescription": {
            "StreamArn": stream.arn,
            "StreamLabel": stream.label,
            "StreamStatus": "ENABLED" if stream.enabled else "DISABLED",
            "StreamViewType": stream.view_type,
            "CreationRequestDateTime": epoch(stream.created),
            "TableName": stream.table_name,
            "KeySchema": stream.key_schema,
            "Shards": shards,
        }
    }
