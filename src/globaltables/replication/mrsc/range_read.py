"""Strong Query and Scan: a range-sync with another member before reading locally (docs/mrsc.md, "Strong Query and
Scan").

The range is an item collection (a Query's partition key value) or the whole table (a Scan, with or without
segments). It is synced page by page, pages being intervals of item ids (the canonical key text, records.py
`item_id`), in item-id order on both sides:
Rule 1: the reader sends the commit versions of its records (items and tombstones) in the page (after, upper]: its
next `PAGE_KEYS` records, `upper` the last of them, or no bound when fewer remain.
Rule 2: the member answers every committed record of its own in the page that is newer than the reader's (a key the
reader lacks counts as version 0; a tombstone the reader lacks is left out: absent reads as deleted), and the keys
of its pending proposals in the page. It cuts the page short after `PAGE_BYTES` of images and says up to which item
id it answered; the reader's next page starts there.
Rule 3: the reader applies the newer images (apply only moves forward). A key pending on either side is then synced
on its own, as a strong GetItem (strong_read.py: wait until resolved); the other keys of the page are done: for
each of them this answer is exactly what a per-key Sync would have said (every write acknowledged before the read
began is held by a majority, which intersects {reader, member}).
Rule 4: the read completes when every page and every per-key follow-up is done; the host then reads locally.
Linearizable per item, not a snapshot across items. Retransmission and the deadline as strong_read.py: an attempt
unanswered for `retransmit_ms` goes to every other member; past the read's deadline it fails (500).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .messages import RangeSynced, SyncRange
from .records import item_id
from .strong_read import soonest_wake

PAGE_KEYS = 500  # the reader's records per page
PAGE_BYTES = 1 << 20  # the member cuts its answer short past this many bytes of images


@dataclass
class RangeRound:
    op: Any
    table: str
    partition: dict | None
    deadline: float
    after: str = ""
    upper: str = ""
    rid: int = 0
    next_send: float = 0.0
    unanswered: int = 0
    paged: bool = False  # every page answered
    following: int = 0  # per-key follow-up Syncs still out
    done: bool = False
    versions: dict = field(default_factory=dict)  # the current page's, as sent


class RangeReader:
    def __init__(self, node: Any) -> None:
        self.node = node
        self.rounds: dict[int, RangeRound] = {}  # current attempt's rid -> round
        self._rid = 0

    def read(self, op_id: Any, table: str, partition: dict | None, now: float) -> None:
        deadline = now + self.node.config.read_timeout_ms / 1000
        self._page(RangeRound(op_id, table, partition, deadline), now)

    def on_synced(self, src: str, message: RangeSynced, now: float) -> None:
        round_ = self.rounds.pop(message.rid, None)
        if round_ is None or round_.done:
            return  # an answer to an earlier attempt, or a second answer
        node = self.node
        port = node.port
        for key, cv, cpid, image in message.images:
            if cv > port.committed(round_.table, key)[0]:
                node.adopt(round_.table, key, cv, cpid, image, now)
        end = message.covered or round_.upper  # the page's last item id ("": no bound)
        follow = {item_id(key): key for key in message.pending}
        for ident, key in port.range_pending(round_.table, round_.partition).items():
            follow[ident] = key
        for ident, key in follow.items():
            if ident > round_.after and (not end or ident <= end):
                round_.following += 1
                node.reader.follow(round_.table, key, round_.deadline, self._followed(round_), now)
        round_.unanswered = 0
        if end:
            round_.after = end
            self._page(round_, now)
        else:
            round_.paged = True
            self._maybe_done(round_)

    def poll(self, now: float) -> None:
        for rid, round_ in list(self.rounds.items()):
            if now >= round_.deadline:
                del self.rounds[rid]
                self._finish(round_, False)
            elif now >= round_.next_send:
                del self.rounds[rid]
                round_.unanswered += 1
                self._attempt(round_, now)

    def next_deadline(self) -> float | None:
        return soonest_wake(self.rounds.values())

    # ----------------------------------------------------------------------------------------------- helpers

    def _page(self, round_: RangeRound, now: float) -> None:
        """Rule 1: the reader's versions for the next page."""
        records = self.node.port.range_records(round_.table, round_.partition)
        later = [r for r in records if r[0] > round_.after]
        page = later[:PAGE_KEYS]
        round_.upper = page[-1][0] if len(later) > PAGE_KEYS else ""
        round_.versions = {r[0]: r[2] for r in page}
        self._attempt(round_, now)

    def _attempt(self, round_: RangeRound, now: float) -> None:
        node = self.node
        self._rid += 1
        round_.rid = self._rid
        round_.next_send = now + node.config.retransmit_ms / 1000
        self.rounds[self._rid] = round_
        targets = node.others if round_.unanswered else node.others[:1]
        message = SyncRange(self._rid, round_.table, round_.partition, round_.after, round_.upper, round_.versions)
        for member in targets:
            node.send(member, message)

    def _followed(self, round_: RangeRound):
        def done(ok: bool, _now: float) -> None:
            round_.following -= 1
            if not ok:
                self._finish(round_, False)
            else:
                self._maybe_done(round_)

        return done

    def _maybe_done(self, round_: RangeRound) -> None:
        if round_.paged and round_.following == 0:
            self._finish(round_, True)

    def _finish(self, round_: RangeRound, ok: bool) -> None:
        if round_.done:
            return
        round_.done = True
        if round_.rid in self.rounds and self.rounds[round_.rid] is round_:
            del self.rounds[round_.rid]
        self.node.complete(round_.op, "ok" if ok else "timeout", None)


def range_synced(port: Any, message: SyncRange) -> RangeSynced:
    """Rule 2: a member's answer to one page of a range-sync."""
    after, upper, versions = message.after, message.upper, message.versions
    images: list = []
    size = 0
    covered = ""
    records = [
        r for r in port.range_records(message.table, message.partition) if r[0] > after and (not upper or r[0] <= upper)
    ]
    for index, (ident, key, cv, cpid, image) in enumerate(records):
        theirs = versions.get(ident, 0)
        if cv <= theirs or (image is None and theirs == 0):
            continue
        images.append([key, cv, cpid, image])
        size += len(orjson.dumps(image)) if image is not None else 0
        if size >= PAGE_BYTES and index + 1 < len(records):
            covered = ident
            break
    pending = [
        key
        for ident, key in port.range_pending(message.table, message.partition).items()
        if ident > after and (not (covered or upper) or ident <= (covered or upper))
    ]
    return RangeSynced(message.rid, images, pending, covered)
