"""MRSC protocol messages (docs/mrsc.md) and their codec: one compact orjson array per message.

Keys and images are in normalised wire form; an image of None is a delete. `decode` checks the shape and raises
`MessageError`; the node drops such messages.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

import orjson

ACCEPT, STALE, CONFLICT, FENCED = "accept", "stale", "conflict", "fenced"
ACCEPT_AGAIN, OUTRANKED, SETTLED = "accept-again", "outranked", "settled"
ANSWERS = frozenset({ACCEPT, ACCEPT_AGAIN, STALE, CONFLICT, OUTRANKED, FENCED, SETTLED})
ACCEPTS = frozenset({ACCEPT, ACCEPT_AGAIN})


class MessageError(ValueError):
    """A message that does not decode to a known, well-formed MRSC message."""


@dataclass(frozen=True, slots=True)
class Propose:
    pid: str
    table: str
    key: dict
    version: int
    image: dict | None
    coordinator: str


@dataclass(frozen=True, slots=True)
class Repropose:
    """The coordinator asks again a member that answered `conflict`: accepted now if that member holds no
    conflicting proposal any more (docs/mrsc.md, accept rule 1)."""

    pid: str
    table: str
    key: dict
    version: int
    image: dict | None
    coordinator: str


@dataclass(frozen=True, slots=True)
class Status:
    """Resolution: "did you accept proposal pid?" A member without a vote on it refuses it for good."""

    pid: str
    table: str
    key: dict
    version: int
    coordinator: str


@dataclass(frozen=True, slots=True)
class Vote:
    """The answer to a Propose or a Status; a refusal carries the voter's committed (cv, cpid, image)."""

    pid: str
    answer: str
    cv: int
    cpid: str
    image: dict | None


@dataclass(frozen=True, slots=True)
class Commit:
    pid: str
    table: str
    key: dict
    version: int
    image: dict | None


@dataclass(frozen=True, slots=True)
class Abort:
    pid: str
    table: str
    key: dict


@dataclass(frozen=True, slots=True)
class Sync:
    rid: int
    table: str
    key: dict


@dataclass(frozen=True, slots=True)
class Synced:
    rid: int
    cv: int
    cpid: str
    image: dict | None
    pending: bool


@dataclass(frozen=True, slots=True)
class SyncRange:
    """A strong Query/Scan's range-sync, one page: the reader's commit versions of the records in the item
    collection `partition` ({name: value}; null: the whole table) with item ids in (after, upper] ("" upper: no
    bound), keyed by item id."""

    rid: int
    table: str
    partition: dict | None
    after: str
    upper: str
    versions: dict


@dataclass(frozen=True, slots=True)
class RangeSynced:
    """The answer: [key, cv, cpid, image] of every committed record newer than the reader's, the keys of the
    pending proposals, and `covered`: the last item id the answer covers when the page was cut short ("": all)."""

    rid: int
    images: list
    pending: list
    covered: str


@dataclass(frozen=True, slots=True)
class Held:
    """A replica to the witness: "I durably hold commit version cv (or newer) of this item" (witness trimming)."""

    table: str
    key: dict
    cv: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """A member holding a vote on proposal pid to its coordinator: "have you decided it?" (vote clean-up)."""

    pid: str
    table: str
    key: dict


@dataclass(frozen=True, slots=True)
class Settled:
    """The coordinator's answer to Outcome, sent only once it has decided pid (committed or aborted): the vote may
    go, and a member still holding pid pending applies or drops it."""

    pid: str
    table: str
    key: dict
    committed: bool


Message = (
    Propose
    | Repropose
    | Status
    | Vote
    | Commit
    | Abort
    | Sync
    | Synced
    | SyncRange
    | RangeSynced
    | Held
    | Outcome
    | Settled
)

KINDS: dict[str, type] = {
    "propose": Propose, "repropose": Repropose, "status": Status, "vote": Vote, "commit": Commit, "abort": Abort, "sync": Sync,
    "synced": Synced, "sync-range": SyncRange, "range-synced": RangeSynced, "held": Held, "outcome": Outcome,
    "settled": Settled,
}  # fmt: skip
KIND_OF = {cls: kind for kind, cls in KINDS.items()}
# Field types, for decode's shape check (None: a dict or null).
_TYPES: dict[type, tuple[Any, ...]] = {
    Propose: (str, str, dict, int, None, str),
    Repropose: (str, str, dict, int, None, str),
    Status: (str, str, dict, int, str),
    Vote: (str, str, int, str, None),
    Commit: (str, str, dict, int, None),
    Abort: (str, str, dict),
    Sync: (int, str, dict),
    Synced: (int, int, str, None, bool),
    SyncRange: (int, str, None, str, str, dict),
    RangeSynced: (int, list, list, str),
    Held: (str, dict, int),
    Outcome: (str, str, dict),
    Settled: (str, str, dict, bool),
}


# Each message's fields in declaration order, read shallowly: `dataclasses.astuple` would deep-copy every key and
# image only for orjson to read the copy once (it was a third of a member's CPU per message).
_FIELDS = {cls: attrgetter(*(field.name for field in fields(cls))) for cls in KIND_OF}


def kind_of(message: Message) -> str:
    return KIND_OF[type(message)]


def encode(message: Message) -> bytes:
    cls = type(message)
    return orjson.dumps([KIND_OF[cls], *_FIELDS[cls](message)])


def decode(data: bytes) -> Message:
    try:
        parts = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise MessageError(f"not JSON: {error}") from None
    if not isinstance(parts, list) or not parts or parts[0] not in KINDS:
        raise MessageError("not an MRSC message")
    cls = KINDS[parts[0]]
    fields = parts[1:]
    types = _TYPES[cls]
    if len(fields) != len(types):
        raise MessageError(f"{parts[0]}: {len(fields)} fields, expected {len(types)}")
    for value, expected in zip(fields, types):  # the lengths are equal (checked above)
        if type(value) is expected:
            continue  # what orjson gives for a well-formed field: the exact type (never a subclass)
        if expected is None:
            if value is not None and not isinstance(value, dict):
                raise MessageError(f"{parts[0]}: an image must be an object or null")
        elif expected is int and (type(value) is not int):
            raise MessageError(f"{parts[0]}: expected an integer, got {value!r}")
        elif not isinstance(value, expected):
            raise MessageError(f"{parts[0]}: expected {expected.__name__}, got {value!r}")
    if cls is Vote and fields[1] not in ANSWERS:
        raise MessageError(f"vote: unknown answer {fields[1]!r}")
    if cls is SyncRange and not all(type(cv) is int for cv in fields[5].values()):
        raise MessageError("sync-range: versions must be integers")
    if cls is RangeSynced:
        _check_range_synced(fields[1], fields[2])
    return cls(*fields)


def _check_range_synced(images: list, pending: list) -> None:
    for entry in images:
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and isinstance(entry[0], dict)
            and type(entry[1]) is int
            and isinstance(entry[2], str)
            and (entry[3] is None or isinstance(entry[3], dict))
        ):
            raise MessageError(f"range-synced: an image must be [key, cv, pid, image], not {entry!r}")
    if not all(isinstance(key, dict) for key in pending):
        raise MessageError("range-synced: pending keys must be objects")
