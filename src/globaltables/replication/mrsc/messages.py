"""MRSC protocol messages (docs/mrsc.md) and their codec: one compact orjson array per message.

Keys and images are in normalised wire form; an image of None is a delete. `decode` checks the shape and raises
`MessageError`; the node drops such messages.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from typing import Any

import orjson

ACCEPT, STALE, CONFLICT, FENCED = "accept", "stale", "conflict", "fenced"
ANSWERS = frozenset({ACCEPT, STALE, CONFLICT, FENCED})


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


Message = Propose | Status | Vote | Commit | Abort | Sync | Synced

KINDS: dict[str, type] = {
    "propose": Propose, "status": Status, "vote": Vote, "commit": Commit, "abort": Abort, "sync": Sync,
    "synced": Synced,
}  # fmt: skip
KIND_OF = {cls: kind for kind, cls in KINDS.items()}
# Field types, for decode's shape check (None: a dict or null).
_TYPES: dict[type, tuple[Any, ...]] = {
    Propose: (str, str, dict, int, None, str),
    Status: (str, str, dict, int, str),
    Vote: (str, str, int, str, None),
    Commit: (str, str, dict, int, None),
    Abort: (str, str, dict),
    Sync: (int, str, dict),
    Synced: (int, int, str, None, bool),
}


def kind_of(message: Message) -> str:
    return KIND_OF[type(message)]


def encode(message: Message) -> bytes:
    return orjson.dumps([KIND_OF[type(message)], *astuple(message)])


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
    for value, expected in zip(fields, types, strict=True):
        if expected is None:
            if value is not None and not isinstance(value, dict):
                raise MessageError(f"{parts[0]}: an image must be an object or null")
        elif expected is int and (type(value) is not int):
            raise MessageError(f"{parts[0]}: expected an integer, got {value!r}")
        elif not isinstance(value, expected):
            raise MessageError(f"{parts[0]}: expected {expected.__name__}, got {value!r}")
    if cls is Vote and fields[1] not in ANSWERS:
        raise MessageError(f"vote: unknown answer {fields[1]!r}")
    return cls(*fields)
