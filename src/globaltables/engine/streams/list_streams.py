"""ListStreams: the region's streams, current and past (until retention drops them), optionally of one table.

Streams are listed in ARN order (a table's streams therefore oldest first); `ExclusiveStartStreamArn` resumes after
the given ARN, and `LastEvaluatedStreamArn` is set when the page is full and more streams follow.
"""

from __future__ import annotations

from ..errors import ResourceNotFoundException
from ..validation import Int, Str, TableNameField, check_request
from .shards import check_stream_arn

DEFAULT_LIMIT = 100

FIELDS = {
    "TableName": TableNameField(required=False),
    "Limit": Int(minimum=1, maximum=100),
    "ExclusiveStartStreamArn": Str(min_length=37, max_length=1024),
}


def handle(engine, request: dict) -> dict:
    check_request(request, FIELDS)
    table_name = request.get("TableName")
    limit = request.get("Limit") or DEFAULT_LIMIT
    start = request.get("ExclusiveStartStreamArn")
    if start is not None:
        check_stream_arn(start, "ExclusiveStartStreamArn")
    streams = engine.change_log.streams()
    if table_name is not None:
        streams = [stream for stream in streams if stream.table_name == table_name]
        if not streams and table_name not in engine.tables:
            raise ResourceNotFoundException(f"Requested resource not found: Table: {table_name} not found")
    if start is not None:
        streams = [stream for stream in streams if stream.arn > start]
    page = streams[:limit]
    response: dict = {
        "Streams": [
            {"StreamArn": stream.arn, "TableName": stream.table_name, "StreamLabel": stream.label} for stream in page
        ]
    }
    if len(streams) > limit:
        response["LastEvaluatedStreamArn"] = page[-1].arn
    return response
