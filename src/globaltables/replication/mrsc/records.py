"""The formats of strong mode's records (docs/mrsc.md), the same in every member: item ids, proposal ids, commit
versions and the pending proposal.

Rules
1. An item's id is the canonical text of its key (normalised wire JSON, keys sorted): equal keys, equal ids.
2. A proposal id is "<region>-<epoch>-<n>": the coordinator's region (which may contain hyphens), its epoch (bumped
   durably at every start, store.py) and a counter, so ids never repeat.
3. A replica keeps an item's commit version as the item's version text, `"<cv:012d>.<proposal id>"`: fixed-width,
   so versions compare as text in commit order. A version that is not in this form (an MREC/HLC version: the table
   was not written in strong mode) reads as (0, "").
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson


def item_id(key: dict) -> str:
    """The canonical text of an item's key (normalised wire form), the same in every member."""
    return orjson.dumps(key, option=orjson.OPT_SORT_KEYS).decode()


def in_range(key: dict, partition: dict | None) -> bool:
    """Whether an item key belongs to an item collection ({partition key name: value}; None: the whole table)."""
    return partition is None or all(key.get(name) == value for name, value in partition.items())


def pid_parts(pid: str) -> tuple[str, int, int]:
    """(coordinator region, epoch, n) of a proposal id "<region>-<epoch>-<n>" (region names contain hyphens)."""
    region, epoch, n = pid.rsplit("-", 2)
    return region, int(epoch), int(n)


def encode_version(cv: int, pid: str) -> str:
    return f"{cv:012d}.{pid}"


def decode_version(text: str | None) -> tuple[int, str]:
    if not text:
        return 0, ""
    cv, _, pid = text.partition(".")
    try:
        return int(cv), pid
    except ValueError:  # an MREC/HLC version: the table was not written in strong mode
        return 0, ""


@dataclass(frozen=True, slots=True)
class Pending:
    pid: str
    table: str
    key: dict
    version: int
    coordinator: str
    image: dict | None
