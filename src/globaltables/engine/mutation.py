"""`Mutation`: one item change as replication ships it — the unit of MREC replication (docs/replication.md).

One type from end to end: the engine's port builds it from the change log (`ReplicaPort.local_records`), the codec
encodes and decodes it (replication/messages.py), the receiver hands it back to `ReplicaPort.apply_replicated`.
(A NamedTuple: immutable, and built once per record shipped or received, several times cheaper than a frozen
dataclass.)

As `local_records` builds it, `image` is the change log's stored JSON (an `orjson.Fragment`, embedded in the message
as it is, never parsed and re-serialised) and `key` is None when the image carries the key; as the codec decodes it,
`image` is a dict (`key` may still be None: read it from the image).
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Mutation(NamedTuple):
    pos: int  # sequence number in the origin's table log
    key: dict[str, Any] | None  # the item's key attributes (normalised wire form); None: read them from the image
    version: str  # "<hlc>/<origin>"
    image: Any  # the whole new item (a dict, or the stored JSON as an orjson.Fragment); None for a delete
    commit_ms: int  # origin's wall clock at commit (lag metrics only)
    service: bool = False  # a deletion DynamoDB made itself (TTL): applies only where the item has expired too
    size: int | None = None  # the image's item size as the origin counted it (None: the receiver counts it)
