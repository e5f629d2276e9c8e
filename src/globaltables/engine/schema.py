"""Table definitions: key schema, secondary indexes, and how keys are validated and encoded.

A `TableDefinition` is what CreateTable/UpdateTable build and what DescribeTable reports. It persists as a plain
dict (`to_dict`/`from_dict`) in the store, so a restarted region has the same tables.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import ValidationException, invalid_parameter
from .values import MAX_ITEM_BYTES, encode_key_tuple, encode_key_value, item_size, normalize_value

MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
KEY_MISMATCH = "The provided key element does not match the schema"
HASH_KEY_TOO_LONG = "Size of hashkey has exceeded the maximum size limit of2048 bytes"
RANGE_KEY_TOO_LONG = "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"


@dataclass(slots=True)
class KeySchema:
    """Partition (HASH) key and optional sort (RANGE) key: names and scalar types (S, N or B).

    A GSI may have a multi-attribute key (DynamoDB, November 2025): up to four HASH attributes forming the partition
    key and up to four RANGE attributes forming the sort key, each with its own type. `hash_name`/`range_name` are
    the first of each; `more_hash`/`more_range` hold the others as (name, type) pairs in key-schema order. A key
    with one attribute on a side encodes that side as the attribute's own key bytes; a side with several encodes as
    `values.encode_key_tuple` (component-wise order), so storage and reads handle both as one blob per side.
    DynamoDB's documents give no size limit for a multi-attribute key; here the 2048-byte partition key and 1024-byte
    sort key limits apply to a side's components together (DynamoDB's own text already speaks of the "aggregated
    size of all range keys").
    """

    hash_name: str
    hash_type: str
    range_name: str | None = None
    range_type: str | None = None
    more_hash: tuple[tuple[str, str], ...] = ()
    more_range: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.more_hash or self.more_range:  # stored definitions come back from JSON with lists
            self.more_hash = tuple((name, kind) for name, kind in self.more_hash)
            self.more_range = tuple((name, kind) for name, kind in self.more_range)

    @property
    def multi_attribute(self) -> bool:
        """Whether either side has more than one attribute (GSIs only)."""
        return bool(self.more_hash or self.more_range)

    @property
    def hash_parts(self) -> tuple[tuple[str, str], ...]:
        """Every HASH attribute as (name, type), in key-schema order."""
        return ((self.hash_name, self.hash_type), *self.more_hash)

    @property
    def range_parts(self) -> tuple[tuple[str, str], ...]:
        """Every RANGE attribute as (name, type), in key-schema order (empty: no sort key)."""
        if self.range_name is None:
            return ()
        return ((self.range_name, self.range_type), *self.more_range)

    @property
    def names(self) -> tuple[str, ...]:
        if self.more_hash or self.more_range:
            return tuple(name for name, _kind in (*self.hash_parts, *self.range_parts))
        return (self.hash_name,) if self.range_name is None else (self.hash_name, self.range_name)

    def to_wire(self) -> list[dict]:
        out = [{"AttributeName": name, "KeyType": "HASH"} for name, _kind in self.hash_parts]
        out.extend({"AttributeName": name, "KeyType": "RANGE"} for name, _kind in self.range_parts)
        return out

    # --------------------------------------------------------------------------------------------- key validation

    def key_from_request(self, key: Any) -> tuple[bytes, bytes, dict]:
        """Validate a `Key` parameter (GetItem, UpdateItem, DeleteItem, ExclusiveStartKey of the base table).

        Returns the encoded (partition, sort) key and the normalised key map.
        """
        if not isinstance(key, dict) or len(key) != len(self.names):
            raise ValidationException(KEY_MISMATCH)
        normalized = {}
        for name, kind in self._typed_names():
            if name not in key:
                raise ValidationException(KEY_MISMATCH)
            value = normalize_value(key[name])
            if next(iter(value)) != kind:
                raise ValidationException(KEY_MISMATCH)
            normalized[name] = value
        return (*self._encode(normalized), normalized)

    def key_from_item(self, item: dict) -> tuple[bytes, bytes]:
        """Validate the key attributes inside a whole (already normalised) item, as PutItem does."""
        for name, kind in self._typed_names():
            value = item.get(name)
            if value is None:
                raise invalid_parameter(f"Missing the key {name} in the item")
            actual = next(iter(value))
            if actual != kind:
                raise invalid_parameter(f"Type mismatch for key {name} expected: {kind} actual: {actual}")
        return self._encode(item)

    def key_of(self, item: dict) -> dict:
        """The key attributes of a stored item."""
        return {name: item[name] for name in self.names}

    def keys_of(self, maps: list[dict]) -> list[dict]:
        """`key_of` for many items or key maps at once (a replicated batch): one call, names looked up once."""
        names = self.names
        if len(names) == 2:
            first, second = names
            return [{first: m[first], second: m[second]} for m in maps]
        if len(names) == 1:  # a display per map, not a nested comprehension (a function call each)
            (first,) = names
            return [{first: m[first]} for m in maps]
        return [{name: m[name] for name in names} for m in maps]

    def encode_all(self, maps: list[dict]) -> list[tuple[bytes, bytes]]:
        """`encode` for many items or key maps at once (a replicated batch). The common key (non-empty string
        attributes, one a side) is encoded inline, exactly as `encode_partition` and `encode_range` do; any other
        goes through them."""
        if self.more_hash or self.more_range:
            return [self._encode(m) for m in maps]
        hash_name, range_name = self.hash_name, self.range_name
        out = []
        append = out.append
        for m in maps:
            value = m[hash_name]
            inner = value.get("S")
            if inner and len(value) == 1 and len(inner) * 4 <= MAX_PARTITION_KEY_BYTES:  # 4: UTF-8's widest
                pk = inner.encode("utf-8")
            else:
                pk = self.encode_partition(value)
            if range_name is None:
                append((pk, b""))
                continue
            value = m[range_name]
            inner = value.get("S")
            if inner and len(value) == 1 and len(inner) * 4 <= MAX_SORT_KEY_BYTES:
                append((pk, inner.encode("utf-8")))
            else:
                append((pk, self.encode_range(m)))
        return out

    def _typed_names(self) -> list[tuple[str, str]]:
        if self.more_hash or self.more_range:
            return [*self.hash_parts, *self.range_parts]
        pairs = [(self.hash_name, self.hash_type)]
        if self.range_name is not None:
            pairs.append((self.range_name, self.range_type))
        return pairs

    def encode_partition(self, hash_value: dict) -> bytes:
        """The encoded partition key of a single-attribute partition key, after DynamoDB's emptiness and size checks."""
        inner = hash_value.get("S")
        if inner and len(hash_value) == 1:  # the common case (a non-empty string), inlined: every write takes it
            pk = inner.encode("utf-8")
            if len(pk) > MAX_PARTITION_KEY_BYTES:
                raise invalid_parameter(HASH_KEY_TOO_LONG)
            return pk
        check_key_not_empty(self.hash_name, hash_value)
        pk = encode_key_value(hash_value)
        if _raw_len(hash_value) > MAX_PARTITION_KEY_BYTES:
            raise invalid_parameter(HASH_KEY_TOO_LONG)
        return pk

    def encode_hash(self, values: dict) -> bytes:
        """The encoded partition key of a map holding every HASH attribute (one or several)."""
        if not self.more_hash:
            return self.encode_partition(values[self.hash_name])
        return encode_components(self.hash_parts, values, MAX_PARTITION_KEY_BYTES, HASH_KEY_TOO_LONG)

    def encode_range(self, values: dict) -> bytes:
        """The encoded sort key of a map holding every RANGE attribute (b"" without a sort key)."""
        if self.range_name is None:
            return b""
        if self.more_range:
            return encode_components(self.range_parts, values, MAX_SORT_KEY_BYTES, RANGE_KEY_TOO_LONG)
        range_value = values[self.range_name]
        inner = range_value.get("S")
        if inner and len(range_value) == 1:  # a non-empty string, inlined as in `encode_partition`
            sk = inner.encode("utf-8")
            if len(sk) > MAX_SORT_KEY_BYTES:
                raise invalid_parameter(RANGE_KEY_TOO_LONG)
            return sk
        check_key_not_empty(self.range_name, range_value)
        sk = encode_key_value(range_value)
        if _raw_len(range_value) > MAX_SORT_KEY_BYTES:
            raise invalid_parameter(RANGE_KEY_TOO_LONG)
        return sk

    def encode(self, values: dict) -> tuple[bytes, bytes]:
        """The encoded (partition, sort) key of a normalised item or key map known to hold the key attributes."""
        return self._encode(values)

    def _encode(self, values: dict) -> tuple[bytes, bytes]:
        if self.more_hash:
            return self.encode_hash(values), self.encode_range(values)
        return self.encode_partition(values[self.hash_name]), self.encode_range(values)


def encode_components(parts: tuple[tuple[str, str], ...], values: dict, limit: int, too_long: str) -> bytes:
    """One side of a multi-attribute key as a tuple encoding; the size limit applies to the components together."""
    for name, _kind in parts:
        check_key_not_empty(name, values[name])
    if sum(_raw_len(values[name]) for name, _kind in parts) > limit:
        raise invalid_parameter(too_long)
    return encode_key_tuple(values[name] for name, _kind in parts)


def _raw_len(value: dict) -> int:
    kind, inner = next(iter(value.items()))
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "B":
        return len(encode_key_value(value))
    return 0  # numbers are bounded by their 38 digits


def check_key_not_empty(name: str, value: dict) -> None:
    kind, inner = next(iter(value.items()))
    if kind in ("S", "B") and inner == "":
        type_word = "string" if kind == "S" else "binary"
        raise ValidationException(
            "One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an "
            f"empty {type_word} value. Key: {name}"
        )


@dataclass(slots=True)
class IndexDefinition:
    """A global or local secondary index."""

    name: str
    kind: str  # "GSI" or "LSI"
    key: KeySchema
    projection_type: str = "ALL"  # ALL | KEYS_ONLY | INCLUDE
    non_key_attributes: list[str] = field(default_factory=list)
    status: str = "ACTIVE"
    provisioned: dict | None = None  # GSIs: ReadCapacityUnits, WriteCapacityUnits, Last*DateTime, decreases
    backfilling: bool = False
    on_demand: dict | None = None  # GSIs: OnDemandThroughput as last set
    warm_throughput: dict | None = None  # GSIs: WarmThroughput as last set

    @property
    def projection(self) -> dict:
        """The `Projection` structure as CreateTable took it and DescribeTable reports it."""
        out: dict = {"ProjectionType": self.projection_type}
        if self.projection_type == "INCLUDE" and self.non_key_attributes:
            out["NonKeyAttributes"] = list(self.non_key_attributes)
        return out


@dataclass(slots=True)
class TableDefinition:
    name: str
    table_id: str
    arn: str
    key: KeySchema
    attribute_definitions: list[dict]
    creation_time: float
    billing_mode: str = "PROVISIONED"
    provisioned: dict | None = None
    gsis: list[IndexDefinition] = field(default_factory=list)
    lsis: list[IndexDefinition] = field(default_factory=list)
    status: str = "ACTIVE"
    stream: dict | None = None  # {"StreamEnabled": bool, "StreamViewType": ..., "LatestStreamLabel": ...}
    ttl: dict | None = None  # {"AttributeName": ..., "TimeToLiveStatus": ...}
    deletion_protection: bool = False
    table_class: str = "STANDARD"
    tags: list[dict] = field(default_factory=list)
    billing_mode_updated: float | None = None  # LastUpdateToPayPerRequestDateTime
    extra: dict = field(default_factory=dict)  # description fields with no behaviour behind them
    sse: dict | None = None  # SSEDescription when encrypted with a KMS key; None for the AWS owned key
    on_demand: dict | None = None  # OnDemandThroughput as last set
    warm_throughput: dict | None = None  # WarmThroughput as last set
    billing_mode_explicit: bool = False  # DynamoDB shows BillingModeSummary once a mode was asked for
    table_class_updated: float | None = None  # TableClassSummary.LastUpdateDateTime
    # Global tables (docs/replication.md): every region holding a replica, this one included (empty: a regional
    # table), and the number of ordered replication lanes per link.
    replicas: list[str] = field(default_factory=list)
    replication_lanes: int = 4
    # Replicas not ACTIVE (yet, or any more): region -> CREATING | DELETING | CREATION_FAILED, plus a reason under
    # "<region>:reason" for CREATION_FAILED (engine/replica_membership.py). Links run only to ACTIVE replicas.
    replica_status: dict[str, str] = field(default_factory=dict)
    # Strong mode (MRSC, engine/strong.py): {"replicas": [...], "witness": name | None}; None for every other table.
    # Kept apart from `replicas`, which drives MREC's change log and links.
    strong: dict | None = None
    # Point-in-time recovery as last set by UpdateContinuousBackups: {"RecoveryPeriodInDays": n, "Since": epoch s}
    # while enabled, None while disabled (describe_continuous_backups.py).
    point_in_time_recovery: dict | None = None
    # A table made by RestoreTableFromBackup or RestoreTableToPointInTime (engine/backups.py): its RestoreSummary
    # (SourceBackupArn or SourceTableArn, RestoreDateTime); None for every other table.
    restore_summary: dict | None = None

    def index(self, name: str) -> IndexDefinition | None:
        for index in (*self.gsis, *self.lsis):
            if index.name == name:
                return index
        return None

    def index_arn(self, index_name: str) -> str:
        return f"{self.arn}/index/{index_name}"

    @property
    def stream_enabled(self) -> bool:
        return bool(self.stream and self.stream.get("StreamEnabled"))

    @property
    def stream_arn(self) -> str | None:
        """The latest stream's ARN; it outlives a disabled stream, as DynamoDB keeps it readable for 24 hours."""
        label = self.stream.get("LatestStreamLabel") if self.stream else None
        return f"{self.arn}/stream/{label}" if label else None

    def key_attribute_names(self) -> list[str]:
        """Every attribute used by the table's or an index's key schema, in first-use order."""
        names: list[str] = []
        for key in (self.key, *(index.key for index in (*self.lsis, *self.gsis))):
            for name in key.names:
                if name not in names:
                    names.append(name)
        return names

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> TableDefinition:
        data = dict(data)
        data["key"] = KeySchema(**data["key"])
        for kind in ("gsis", "lsis"):
            data[kind] = [
                IndexDefinition(**{**index, "key": KeySchema(**index["key"])}) for index in data.get(kind, [])
            ]
        return cls(**data)


def validate_item_size(item: dict, message: str = "Item size has exceeded the maximum allowed size") -> int:
    size = item_size(item)
    if size > MAX_ITEM_BYTES:
        raise ValidationException(message)
    return size
