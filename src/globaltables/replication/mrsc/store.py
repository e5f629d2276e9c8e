"""One member's durable strong-mode (MRSC) state (docs/mrsc.md): pending proposals, votes, settled marks, aborted
records, the witness's versions and images, and per-item commit versions — on any store that keeps side records
(engine/storage/records.py `SideChange`: `SqliteStore` on disk for a region process, `MemoryStore` in the simulator).

Rules
1. A replica keeps an item's commit version in the item's `version` (records.py rule 3; tombstones keep it across
   deletes); the witness has no item rows and keeps `(cv, pid)` per item in `mrsc.witness` and the image beside it in
   `mrsc.witness-images` while it still needs it.
2. `accept` writes the pending proposal and the vote together; `apply` writes the image (through the engine's
   `ImageCommits`, or the witness's records), clears pending proposals at or below its version and the proposal's
   vote, in one transaction.
3. `apply` only moves forward: an image whose version is not above the stored one changes nothing (images are whole,
   so a member that missed versions jumps straight to the newest).
4. The witness keeps an item's image only until both replicas hold that version (`trim`); its version stays.
5. Every change is one store transaction (`side_write`, or the item write `apply` makes): what a crash leaves is a
   state some sequence of whole calls produced. A call reads what it needs before it writes; a member is driven by
   one thread, so nothing changes in between.

The records, per space (keys are text; an item is "<table>\\0<item id>", which lists a space in (table, item id)
order, as item ids never hold a NUL: JSON escapes it):
- `mrsc.pending`  item -> [pid, version, coordinator, image]: the proposal this member holds for the item.
- `mrsc.votes`    pid -> [table, item id, answer]: how this member answered a proposal, until it is decided.
- `mrsc.settled`  item + "\\0<coordinator>" -> [epoch, n]: the greatest proposal of that coordinator for the item
  whose refusal vote (or acceptance) was dropped once decided: a late copy of its Propose, or of any older one, can
  never be accepted (docs/mrsc.md's accept rule, member.py rule 3).
- `mrsc.aborted`  pid -> [table, item id, version]: the coordinator's own aborted proposals, so it can always say
  how it decided one (Outcome); a record goes once both other members were seen holding a version at or above it
  (docs/mrsc.md, "Who decides").
- `mrsc.witness`  item -> [cv, pid]; `mrsc.witness-images` item -> [cv, image] (rule 4).
- `mrsc.meta`     "epoch" -> the epoch of this member's proposal ids (records.py rule 2), bumped at every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ...engine.strong import ImageCommits
from ...engine.values import decode_key_value
from .records import Pending, decode_version, encode_version, in_range, item_id, pid_parts

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ...engine.engine import Engine
    from ...engine.storage.records import SideChange

PENDING = "mrsc.pending"
VOTES = "mrsc.votes"
SETTLED = "mrsc.settled"
ABORTED = "mrsc.aborted"
WITNESS = "mrsc.witness"
IMAGES = "mrsc.witness-images"
META = "mrsc.meta"

ACCEPTS = ("accept", "accept-again")  # votes whose proposal, once committed, is guarded by its version


class SideStore(Protocol):
    """What this needs of a store (both engine/storage stores keep it; tests/engine/test_store_contract.py)."""

    def side_get(self, space: str, key: str) -> bytes | None: ...
    def side_scan(self, space: str, prefix: str = "") -> list[tuple[str, bytes]]: ...
    def side_write(self, changes: list[SideChange]) -> None: ...
    def get_record(self, table: str, pk: bytes, sk: bytes) -> tuple[dict | None, str | None, bool]: ...
    def table_records(self, table: str, pk: bytes | None = None) -> Iterable[tuple[bytes, bytes, dict, Any]]: ...
    def table_tombstones(self, table: str, pk: bytes | None = None) -> Iterable[tuple[bytes, bytes, str, float]]: ...


def _item(table: str, ident: str) -> str:
    return f"{table}\x00{ident}"


def _split(key: str) -> tuple[str, str]:
    table, _, ident = key.partition("\x00")
    return table, ident


class StrongStore:
    """One member's durable MRSC state. `engine` is None for a witness (it has a store but no tables); a replica's
    `store` is its engine's."""

    def __init__(self, store: SideStore, engine: Engine | None, region: str) -> None:
        if engine is not None and engine.store is not store:
            raise ValueError("a replica keeps its strong-mode state in its engine's store")
        self.store = store
        self.engine = engine
        self.region = region
        self.witness = engine is None
        self.images = None if engine is None else ImageCommits(engine)
        # Proposal ids are "<region>-<epoch>-<n>"; the epoch is bumped durably at every start, so ids never repeat.
        stored = store.side_get(META, "epoch")
        self.epoch = (int(stored) if stored else 0) + 1
        store.side_write([(META, "epoch", str(self.epoch).encode())])
        self._next = 0

    def new_pid(self) -> str:
        self._next += 1
        return f"{self.region}-{self.epoch}-{self._next}"

    # ------------------------------------------------------------------------------------------------- reads

    def holds(self, table: str) -> bool:
        """Whether this member can take part in `table`: a witness in every table its replicas propose, a replica
        in the tables it holds (one a conversion has not reached yet holds none, and must not answer)."""
        return self.witness or table in self.engine.tables

    def committed(self, table: str, key: dict) -> tuple[int, str, dict | None]:
        """(commit version, proposal id committed at it, image) of the item; (0, "", None) if never written."""
        if self.witness:
            name = _item(table, item_id(key))
            stored = self.store.side_get(WITNESS, name)
            if stored is None:
                return 0, "", None
            cv, pid = orjson.loads(stored)
            # A trimmed image reads as None: only replicas already holding that version ever ask.
            image = self.store.side_get(IMAGES, name)
            return cv, pid, orjson.loads(image)[1] if image is not None else None
        definition = self.engine.tables[table]
        pk, sk = definition.key.encode(key)
        item, version, _tombstone = self.store.get_record(table, pk, sk)
        cv, pid = decode_version(version)
        return cv, pid, item

    def pending(self, table: str, key: dict) -> Pending | None:
        stored = self.store.side_get(PENDING, _item(table, item_id(key)))
        if stored is None:
            return None
        pid, version, coordinator, image = orjson.loads(stored)
        return Pending(pid, table, key, version, coordinator, image)

    def all_pending(self) -> list[Pending]:
        """Every pending proposal, in (table, item id) order."""
        out = []
        for name, stored in self.store.side_scan(PENDING):
            table, ident = _split(name)
            pid, version, coordinator, image = orjson.loads(stored)
            out.append(Pending(pid, table, orjson.loads(ident), version, coordinator, image))
        return out

    def range_records(self, table: str, partition: dict | None) -> list[tuple[str, dict, int, str, dict | None]]:
        """Every record (item or tombstone) of an item collection (`partition`: {partition key name: value}), or
        of the whole table (None), as (item id, key, cv, pid, image), sorted by item id: the range-sync of a strong
        Query or Scan (replication/mrsc/range_read.py)."""
        out = []
        if self.witness:
            prefix = _item(table, "")
            images = {name: stored for name, stored in self.store.side_scan(IMAGES, prefix)}
            for name, stored in self.store.side_scan(WITNESS, prefix):
                ident = _split(name)[1]
                key = orjson.loads(ident)
                if in_range(key, partition):
                    cv, pid = orjson.loads(stored)
                    image = images.get(name)
                    out.append((ident, key, cv, pid, orjson.loads(image)[1] if image is not None else None))
        else:
            schema = self.engine.tables[table].key
            pk = None if partition is None else schema.encode_partition(partition[schema.hash_name])
            for _pk, _sk, image, version in self.store.table_records(table, pk):
                key = schema.key_of(image)
                out.append((item_id(key), key, *decode_version(version), image))
            for tpk, tsk, version, _deleted_at in self.store.table_tombstones(table, pk):
                key = {schema.hash_name: decode_key_value(schema.hash_type, tpk)}
                if schema.range_name is not None:
                    key[schema.range_name] = decode_key_value(schema.range_type, tsk)
                out.append((item_id(key), key, *decode_version(version), None))
        out.sort(key=lambda record: record[0])
        return out

    def range_pending(self, table: str, partition: dict | None) -> dict[str, dict]:
        """item id -> key of every pending proposal in an item collection (or the whole table, None)."""
        out = {}
        for name, _stored in self.store.side_scan(PENDING, _item(table, "")):
            ident = _split(name)[1]
            key = orjson.loads(ident)
            if in_range(key, partition):
                out[ident] = key
        return out

    def untrimmed(self) -> list[tuple[str, dict, int]]:
        """The witness's items whose latest image it still keeps, as (table, key, cv): not yet known to be held by
        both replicas (rule 4)."""
        out = []
        for name, stored in self.store.side_scan(IMAGES):
            table, ident = _split(name)
            out.append((table, orjson.loads(ident), orjson.loads(stored)[0]))
        return out

    def all_votes(self) -> list[tuple[str, str, dict, str]]:
        """Every recorded vote, as (pid, table, key, answer), in pid order."""
        out = []
        for pid, stored in self.store.side_scan(VOTES):
            table, ident, answer = orjson.loads(stored)
            out.append((pid, table, orjson.loads(ident), answer))
        return out

    def vote(self, pid: str) -> str | None:
        stored = self.store.side_get(VOTES, pid)
        return orjson.loads(stored)[2] if stored is not None else None

    def settled(self, pid: str, table: str, key: dict) -> bool:
        """Whether a proposal is at or below the settled mark of its coordinator for the item (see `drop_vote`)."""
        coordinator, epoch, n = pid_parts(pid)
        stored = self.store.side_get(SETTLED, f"{_item(table, item_id(key))}\x00{coordinator}")
        return stored is not None and (epoch, n) <= tuple(orjson.loads(stored))

    def aborted(self, pid: str) -> bool:
        """Whether this coordinator aborted its proposal `pid` (and still keeps the record)."""
        return self.store.side_get(ABORTED, pid) is not None

    def aborted_items(self) -> list[tuple[str, dict]]:
        """(table, key) of every item with aborted records, in (table, item id) order."""
        items = {tuple(orjson.loads(stored)[:2]) for _pid, stored in self.store.side_scan(ABORTED)}
        return [(table, orjson.loads(ident)) for table, ident in sorted(items)]

    # ------------------------------------------------------------------------------------------------ writes

    def accept(self, proposal: Pending, answer: str = "accept") -> None:
        """Hold `proposal` (pending) and record the vote (`accept`, or `accept-again` after a conflict), durably
        and together."""
        ident = item_id(proposal.key)
        held = [proposal.pid, proposal.version, proposal.coordinator, proposal.image]
        self.store.side_write(
            [
                (PENDING, _item(proposal.table, ident), orjson.dumps(held)),
                (VOTES, proposal.pid, orjson.dumps([proposal.table, ident, answer])),
            ]
        )

    def refuse(self, pid: str, table: str, key: dict, answer: str) -> None:
        self.store.side_write([(VOTES, pid, orjson.dumps([table, item_id(key), answer]))])

    def drop_vote(self, pid: str) -> None:
        """Forget the vote on a decided proposal, remembering that its coordinator's proposals for the item up to
        this one are settled: a copy of the Propose that arrives later (reordered, or resent across a reconnect)
        must not find this member without a vote and be accepted (`settled`)."""
        changes: list[SideChange] = []
        stored = self.store.side_get(VOTES, pid)
        if stored is not None:
            table, ident, answer = orjson.loads(stored)
            if answer not in ACCEPTS:  # committed: its version guards it
                changes += self._raise_mark(table, ident, pid)
        changes.append((VOTES, pid, None))
        self.store.side_write(changes)

    def trim(self, table: str, key: dict, held: int) -> None:
        """The witness drops its image of an item when both replicas hold its version or a newer one (`held`, the
        lower of the two): it keeps the version (its votes need it)."""
        name = _item(table, item_id(key))
        image = self.store.side_get(IMAGES, name)
        if image is not None and orjson.loads(image)[0] <= held:
            self.store.side_write([(IMAGES, name, None)])

    def abort(self, pid: str, table: str, key: dict, version: int) -> None:
        """The coordinator's own proposal is aborted: its pending record and vote go and its aborted record is
        written, together, so it can always say how it decided (docs/mrsc.md, "Who decides")."""
        ident = item_id(key)
        changes = self._drop_pending(table, ident, pid)
        changes.append((VOTES, pid, None))
        changes.append((ABORTED, pid, orjson.dumps([table, ident, version])))
        self.store.side_write(changes)

    def forget_aborted(self, table: str, key: dict, held: int) -> bool:
        """Drop the item's aborted records at or below version `held`, which both other members hold: no member
        can hold those proposals pending or accept them any more (a newer version supersedes them). True when
        records remain for the item."""
        ident = item_id(key)
        doomed: list[SideChange] = []
        remain = False
        for pid, stored in self.store.side_scan(ABORTED):
            a_table, a_ident, version = orjson.loads(stored)
            if a_table == table and a_ident == ident:
                if version <= held:
                    doomed.append((ABORTED, pid, None))
                else:
                    remain = True
        if doomed:
            self.store.side_write(doomed)
        return remain

    def abandon(self, pid: str, table: str, key: dict) -> None:
        """Another member's proposal this member accepted was aborted by its coordinator: drop the pending record
        and the vote, and raise the settled mark (as `drop_vote` does for a refusal), in one transaction."""
        ident = item_id(key)
        changes = self._drop_pending(table, ident, pid)
        changes.append((VOTES, pid, None))
        changes += self._raise_mark(table, ident, pid)
        self.store.side_write(changes)

    def apply(
        self, table: str, key: dict, version: int, pid: str, image: dict | None, *, drop_vote: bool = True
    ) -> bool:
        """Apply a committed image if it is newer than the stored one; clear pending proposals it supersedes and
        (when the decision came from the coordinator, `drop_vote`) the proposal's vote. One transaction. True when
        the image was written."""
        ident = item_id(key)
        name = _item(table, ident)
        current, _cpid, old = self.committed(table, key)
        changes: list[SideChange] = []
        held = self.store.side_get(PENDING, name)
        if held is not None and orjson.loads(held)[1] <= max(version, current):
            changes.append((PENDING, name, None))
        if drop_vote:
            changes.append((VOTES, pid, None))
        newer = version > current
        if self.witness:
            if newer:
                changes.append((WITNESS, name, orjson.dumps([version, pid])))
                changes.append((IMAGES, name, orjson.dumps([version, image])))
            self.store.side_write(changes)
            return newer
        if not newer:
            self.store.side_write(changes)
            return False
        self.images.commit(table, key, image, old, encode_version(version, pid), pid_parts(pid)[0], changes)
        return True

    # ----------------------------------------------------------------------------------------------- helpers

    def _drop_pending(self, table: str, ident: str, pid: str) -> list[SideChange]:
        """The change dropping the item's pending proposal if it is `pid`'s."""
        name = _item(table, ident)
        held = self.store.side_get(PENDING, name)
        return [(PENDING, name, None)] if held is not None and orjson.loads(held)[0] == pid else []

    def _raise_mark(self, table: str, ident: str, pid: str) -> list[SideChange]:
        """The change raising the item's settled mark for pid's coordinator to pid (never lowering it)."""
        coordinator, epoch, n = pid_parts(pid)
        name = f"{_item(table, ident)}\x00{coordinator}"
        stored = self.store.side_get(SETTLED, name)
        if stored is not None and (epoch, n) <= tuple(orjson.loads(stored)):
            return []
        return [(SETTLED, name, orjson.dumps([epoch, n]))]
