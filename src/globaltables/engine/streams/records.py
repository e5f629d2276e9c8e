"""A change log record as a stream record on the wire, through the stream's view type.

The log keeps full images; the view type only decides what is shown: KEYS_ONLY the keys, NEW_IMAGE / OLD_IMAGE
the item after / before the change (when there is one), NEW_AND_OLD_IMAGES both. SizeBytes counts what is shown
(keys and images, by DynamoDB's item size rules). Changes DynamoDB made itself (TTL deletions) carry the service
identity. Member names are the Streams API's (`userIdentity.PrincipalId` / `Type`); AWS Lambda renames them to
`principalId` / `type` in the events it delivers.
"""

from __future__ import annotations

import hashlib

from ..storage.records import LogRecord, StreamRow
from ..values import item_size
from .shards import format_seq

SERVICE_IDENTITY = {"PrincipalId": "dynamodb.amazonaws.com", "Type": "Service"}
SHOWS_NEW = frozenset({"NEW_IMAGE", "NEW_AND_OLD_IMAGES"})
SHOWS_OLD = frozenset({"OLD_IMAGE", "NEW_AND_OLD_IMAGES"})


def event_name(record: LogRecord) -> str:
    if record.old is None:
        return "INSERT"
    if record.new is None:
        return "REMOVE"
    return "MODIFY"


def wire_record(stream: StreamRow, record: LogRecord, region: str) -> dict:
    image = record.new if record.new is not None else record.old
    assert image is not None
    keys = {element["AttributeName"]: image[element["AttributeName"]] for element in stream.key_schema}
    view = stream.view_type
    body: dict = {"ApproximateCreationDateTime": float(int(record.created)), "Keys": keys}
    size = item_size(keys)
    if view in SHOWS_NEW and record.new is not None:
        body["NewImage"] = record.new
        size += item_size(record.new)
    if view in SHOWS_OLD and record.old is not None:
        body["OldImage"] = record.old
        size += item_size(record.old)
    sequence = format_seq(record.seq)
    body["SequenceNumber"] = sequence
    body["SizeBytes"] = size
    body["StreamViewType"] = view
    out = {
        "eventID": hashlib.blake2b(f"{stream.arn}|{sequence}".encode(), digest_size=16).hexdigest(),
        "eventName": event_name(record),
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": body,
    }
    if record.service:
        out["userIdentity"] = dict(SERVICE_IDENTITY)
    return out
