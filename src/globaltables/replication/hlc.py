"""Hybrid logical clocks (Kulkarni, Demirbas et al., "Logical Physical Clocks", 2014) and item versions.

Theory of operation
-------------------
A stamp is `HlcTimestamp(physical_ms, logical)`: `physical_ms` is the largest physical time (milliseconds since the
epoch, as some region's possibly skewed clock read it) that causally precedes the event, `logical` a counter that
orders events sharing that physical part. Both are unbounded Python ints; stamps compare as tuples.

Rule 1 (local event or send): `l = max(l, pt)`; `c = c + 1` if `l` did not move, else `c = 0`.
Rule 2 (receive of stamp m): `l = max(l, m.l, pt)`; `c` is one more than the largest counter among the parts that
reached the new `l` (the old state, the message), or 0 when only the physical clock did.

Both rules return a stamp strictly greater than every stamp this clock issued or received before, whatever the
physical clock does (it may stand still or go backwards). So a write stamped after the clock saw the version it
replaces always carries a greater stamp — the property last-writer-wins needs (facts §10.4).

A remote stamp whose physical part is more than `max_offset_ms` ahead of our physical clock is counted and logged,
never rejected: rejecting would make a region with a fast clock unable to replicate at all, and DynamoDB does not
refuse replicated writes. The stamp is still absorbed (rule 2), so the local clock jumps ahead with it.

`Version(stamp, region)` orders versions of one item: the greater (stamp, origin region name) wins everywhere
(facts §10.4). Both encode to ASCII strings whose byte order is their order (see `encode_uint`), used in the
`x-globaltables-version: <hlc>/<region>` header and in storage keys.

`conflict_clock: wall` replaces the HLC with the bare (skewed) physical clock plus a tie counter for events inside
one millisecond, and no receive rule: a region with a slow clock then stamps writes *below* the versions they
replace and those writes lose, which is what the mode exists to demonstrate.

No time, randomness or event loop here: the physical clock is injected (tests and chaos skew it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

logger = logging.getLogger(__name__)

ConflictClock = Literal["hlc", "wall"]
CONFLICT_CLOCKS: tuple[ConflictClock, ...] = ("hlc", "wall")

# ------------------------------------------------------------------------------------------------- encoding
#
# An unsigned integer is written as one length character followed by its decimal digits (canonical: no leading
# zeros, "0" for zero). Length characters are "A".."Z" for 1..26 digits and "a".."z" for 27..52, which sort in
# that order in ASCII; longer numbers write "~" (above every letter) followed by the encoded digit count. Among
# numbers of one length, decimal digit strings sort like the numbers, and a longer number is larger, so the
# encoding is order-preserving. It is also prefix-free (the length says where it ends), so concatenating the
# encodings of a tuple's members, with any fixed separator, sorts like the tuple. Decimal rather than hex keeps
# the milliseconds readable in a header: 1700000000000 ms is "M1700000000000".

_LENGTH_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_LENGTH_OF = {character: index + 1 for index, character in enumerate(_LENGTH_CHARACTERS)}
_LONG = "~"
_SEPARATOR = "."  # between physical and logical parts; only for readability
_REGION_SEPARATOR = "/"


def encode_uint(value: int) -> str:
    """The order-preserving, prefix-free text form of a non-negative integer."""
    if value < 0:
        raise ValueError(f"cannot encode negative integer {value}")
    digits = str(value)
    if len(digits) <= len(_LENGTH_CHARACTERS):
        return _LENGTH_CHARACTERS[len(digits) - 1] + digits
    return _LONG + encode_uint(len(digits)) + digits


def decode_uint(text: str, start: int = 0) -> tuple[int, int]:
    """(value, index after it) of the integer encoded at `text[start:]`; ValueError unless canonical."""
    if start >= len(text):
        raise ValueError("missing integer")
    head = text[start]
    if head == _LONG:
        length, start = decode_uint(text, start + 1)
        if length <= len(_LENGTH_CHARACTERS):
            raise ValueError("non-canonical integer length")
    elif head in _LENGTH_OF:
        length, start = _LENGTH_OF[head], start + 1
    else:
        raise ValueError(f"invalid integer length character {head!r}")
    digits = text[start : start + length]
    if len(digits) != length or not digits.isascii() or not digits.isdigit():
        raise ValueError(f"expected {length} decimal digits")
    if length > 1 and digits[0] == "0":
        raise ValueError("integer has leading zeros")
    return int(digits), start + length


# ------------------------------------------------------------------------------------------ stamps and versions


class HlcTimestamp(NamedTuple):
    """A hybrid logical timestamp; ordered as the tuple (physical_ms, logical)."""

    physical_ms: int
    logical: int

    def encode(self) -> str:
        """The order-preserving text form (`HybridLogicalClock.encode` is the faster form for a clock's own)."""
        return encode_uint(self.physical_ms) + _SEPARATOR + encode_uint(self.logical)

    def to_bytes(self) -> bytes:
        return self.encode().encode("ascii")

    @classmethod
    def parse(cls, text: str | bytes) -> HlcTimestamp:
        if isinstance(text, bytes):
            text = text.decode("ascii")
        try:
            stamp, end = _decode_stamp(text, 0)
            if end != len(text):
                raise ValueError("trailing characters")
        except ValueError as error:
            raise ValueError(f"invalid HLC timestamp {text!r}: {error}") from None
        return stamp

    def __str__(self) -> str:
        return self.encode()


def _decode_stamp(text: str, start: int) -> tuple[HlcTimestamp, int]:
    physical, index = decode_uint(text, start)
    if text[index : index + 1] != _SEPARATOR:
        raise ValueError(f"expected {_SEPARATOR!r} after the physical part")
    logical, index = decode_uint(text, index + 1)
    return HlcTimestamp(physical, logical), index


ZERO = HlcTimestamp(0, 0)


class Version(NamedTuple):
    """An item version: (stamp, origin region). The greater version wins in every region (facts §10.4)."""

    stamp: HlcTimestamp
    region: str

    def encode(self) -> str:
        """`<hlc>/<region>`, the `x-globaltables-version` header value; sorts like the versions."""
        return self.stamp.encode() + _REGION_SEPARATOR + self.region

    def to_bytes(self) -> bytes:
        return self.encode().encode("ascii")

    @classmethod
    def parse(cls, text: str | bytes) -> Version:
        if isinstance(text, bytes):
            text = text.decode("ascii")
        try:
            stamp, index = _decode_stamp(text, 0)
            if text[index : index + 1] != _REGION_SEPARATOR:
                raise ValueError(f"expected {_REGION_SEPARATOR!r} after the timestamp")
            region = text[index + 1 :]
            if not region or _REGION_SEPARATOR in region:
                raise ValueError("missing or invalid region name")
        except ValueError as error:
            raise ValueError(f"invalid version {text!r}: {error}") from None
        return cls(stamp, region)

    def __str__(self) -> str:
        return self.encode()


# ------------------------------------------------------------------------------------------------------ clock


class WallClock(Protocol):
    def wall_time(self) -> float:
        """Seconds since the Unix epoch (see globaltables.runtime.clock.Clock)."""


@dataclass(frozen=True)
class HlcStatistics:
    """A snapshot of a clock's counters."""

    mode: ConflictClock
    last: HlcTimestamp
    remote_ahead_count: int  # remote stamps more than max_offset_ms ahead of our physical clock
    max_remote_ahead_ms: int  # the largest such lead seen (0 if none)


SkewCallback = Callable[[HlcTimestamp, int, int], None]  # (remote stamp, our physical ms, lead in ms)


def physical_ms_of(clock: WallClock) -> Callable[[], int]:
    """A milliseconds source reading `clock.wall_time()` (seconds, float)."""
    wall_time = clock.wall_time
    return lambda: int(wall_time() * 1000)


class HybridLogicalClock:
    """One region's clock for stamping versions and protocol messages.

    `physical` is either a callable returning milliseconds since the epoch, or an object with `wall_time()` in
    seconds (globaltables.runtime.clock.Clock). Not thread-safe: one region's replication core owns it.
    """

    __slots__ = (
        "_ahead_count", "_encoded", "_last", "_max_ahead_ms", "_on_skew", "_physical", "max_offset_ms", "mode",
    )  # fmt: skip

    def __init__(
        self,
        physical: Callable[[], int] | WallClock,
        max_offset_ms: int,
        *,
        mode: ConflictClock = "hlc",
        on_skew: SkewCallback | None = None,
    ) -> None:
        if mode not in CONFLICT_CLOCKS:
            raise ValueError(f"conflict clock must be one of {', '.join(CONFLICT_CLOCKS)}, not {mode!r}")
        if max_offset_ms < 0:
            raise ValueError(f"max_offset_ms must be >= 0, not {max_offset_ms}")
        self._physical: Callable[[], int] = physical_ms_of(physical) if hasattr(physical, "wall_time") else physical
        self.mode: ConflictClock = mode
        self.max_offset_ms = max_offset_ms
        self._on_skew = on_skew
        self._last = ZERO
        self._ahead_count = 0
        self._max_ahead_ms = 0
        self._encoded: tuple[int, str] = (-1, "")  # the physical part `encode` last wrote, and its text

    @property
    def last(self) -> HlcTimestamp:
        """The latest stamp issued or observed; in hlc mode also the greatest (wall mode may go backwards)."""
        return self._last

    def _read_physical(self) -> int:
        # A skewed clock may read before the epoch; stamps are unsigned, so clamp (the logical part still advances).
        return max(self._physical(), 0)

    def now(self) -> HlcTimestamp:
        """Rule 1: a stamp for a local event or a message about to be sent; greater than any before (hlc mode)."""
        physical = self._read_physical()
        last = self._last
        if self.mode == "wall":
            # Only the physical clock counts; the counter separates events within one millisecond.
            logical = last.logical + 1 if physical == last.physical_ms else 0
            stamp = HlcTimestamp(physical, logical)
        elif physical > last.physical_ms:
            stamp = HlcTimestamp(physical, 0)
        else:
            stamp = HlcTimestamp(last.physical_ms, last.logical + 1)
        self._last = stamp
        return stamp

    tick = now  # the paper's "send or local event"

    def encode(self, stamp: HlcTimestamp) -> str:
        """`stamp.encode()`, cheaper for this clock's own stamps: they come in runs of one millisecond, so the text
        of the physical part is kept from the previous call. Kept per clock, not per process: the regions of one
        simulation (or test) each stamp in their own runs, and none may see another's state."""
        physical = stamp.physical_ms
        encoded = self._encoded
        if encoded[0] != physical:
            encoded = self._encoded = (physical, encode_uint(physical) + _SEPARATOR)
        return encoded[1] + encode_uint(stamp.logical)

    def update(self, remote: HlcTimestamp) -> HlcTimestamp:
        """Rule 2: absorb a received stamp and return the receive event's stamp (> both, in hlc mode).

        In wall mode there is no receive rule: the skew is still counted, and the stamp is just `now()`.
        """
        physical = self._read_physical()
        lead = remote.physical_ms - physical
        if lead > self.max_offset_ms:
            self._count_skew(remote, physical, lead)
        if self.mode == "wall":
            return self.now()
        last = self._last
        top = max(last.physical_ms, remote.physical_ms, physical)
        if top == last.physical_ms and top == remote.physical_ms:
            logical = max(last.logical, remote.logical) + 1
        elif top == last.physical_ms:
            logical = last.logical + 1
        elif top == remote.physical_ms:
            logical = remote.logical + 1
        else:
            logical = 0
        stamp = HlcTimestamp(top, logical)
        self._last = stamp
        return stamp

    def observe_floor(self, stamp: HlcTimestamp) -> None:
        """Make every later stamp exceed `stamp` (after a restart: the largest stamp in the log). Not a receive:
        no skew accounting. In wall mode the physical clock still rules; only same-millisecond ties move."""
        if stamp > self._last:
            self._last = HlcTimestamp(stamp.physical_ms, stamp.logical)

    def next_stamp_above(self, existing: Version | HlcTimestamp | None) -> HlcTimestamp:
        """The stamp for a local write replacing `existing` (None: no previous version).

        hlc mode: strictly greater than the replaced version's stamp, so the local write wins over what it read.
        Normally the clock is already past it (every replicated apply ran rule 2); this closes the gaps (a
        version restored from disk before `observe_floor`, a stamp that was never received). wall mode: just
        `now()` — the write may lose to the version it replaces, by design.
        """
        if self.mode == "hlc" and existing is not None:
            self.observe_floor(existing.stamp if isinstance(existing, Version) else existing)
        return self.now()

    def _count_skew(self, remote: HlcTimestamp, physical: int, lead: int) -> None:
        self._ahead_count += 1
        self._max_ahead_ms = max(self._max_ahead_ms, lead)
        count = self._ahead_count
        # Log the first occurrence and then at powers of two, so a persistently skewed peer cannot flood the log.
        if count & (count - 1) == 0:
            logger.warning(
                "remote HLC stamp %s is %d ms ahead of the local physical clock (max offset %d ms); "
                "accepted (%d such stamps so far)",
                remote.encode(),
                lead,
                self.max_offset_ms,
                count,
            )
        if self._on_skew is not None:
            self._on_skew(remote, physical, lead)

    def statistics(self) -> HlcStatistics:
        return HlcStatistics(
            mode=self.mode,
            last=self._last,
            remote_ahead_count=self._ahead_count,
            max_remote_ahead_ms=self._max_ahead_ms,
        )
