"""The DynamoDB Streams API (`DynamoDBStreams_20120810.<Operation>`), served on the region's endpoint.

Streams read the change log (engine/change_log.py): a stream is a range of its table's log, exposed as one shard.
One module per operation, each exporting `handle(engine, request) -> response`, as the DynamoDB operations do.
"""

from __future__ import annotations

from typing import Any

from ..errors import SerializationException, UnknownOperationException
from . import describe_stream, get_records, get_shard_iterator, list_streams

OPERATIONS = {
    "ListStreams": list_streams.handle,
    "DescribeStream": describe_stream.handle,
    "GetShardIterator": get_shard_iterator.handle,
    "GetRecords": get_records.handle,
}


def handle(engine, operation: str, request: Any) -> dict:
    handler = OPERATIONS.get(operation)
    if handler is None:
        raise UnknownOperationException()
    if not isinstance(request, dict):
        raise SerializationException("Start of structure or map found where not expected")
    return handler(engine, request)
