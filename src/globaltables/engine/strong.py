"""The engine's side of strong mode (MRSC, docs/mrsc.md): per-item commit versions, pending proposals and votes, all
durable, and applying a committed image in one store transaction.

Rules
1. A replica keeps an item's commit version in the item's `version` column (tombstones keep it across deletes) as
   `"<cv:012d>.<proposal id>"`; the witness keeps `(cv, pid, image)` in `mrsc_witness` and has no item rows.
2. `accept` writes the pending proposal and the vote together; `apply` writes the image (item row or witness row),
   clears pending proposals at or below its version and the proposal's vote, in one transaction.
3. `apply` only moves forward: an image whose version is not above the stored one changes nothing (images are whole,
   so a member that missed versions jumps straight to the newest).
4. The witness keeps an item's image only until both replicas hold that version (`trim`); its version stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .errors import ValidationException
from .storage.records import ItemWrite, partition_hash
from .values import decode_key_value, item_size

if TYPE_CHECKING:
    from .engine import Engine
    from .storage.sqlite_store import SqliteStore

STRONG_SCHEMA = """
CREATE TABLE IF NOT EXISTS mrsc_pending (
    tbl TEXT NOT NULL,
    item TEXT NOT NULL,
    pid TEXT NOT NULL,
    version INTEGER NOT NULL,
    coordinator TEXT NOT NULL,
    image BLOB NOT NULL,
    PRIMARY KEY (tbl, item)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mrsc_votes (
    pid TEXT PRIMARY KEY,
    tbl TEXT NOT NULL,
    item TEXT NOT NULL,
    answer TEXT NOT NULL
) WITHOUT ROWID;
-- Per item and coordinator region, the greatest proposal (epoch, n) whose refusal vote was dropped once decided: a
-- late copy of that Propose (or of any older one) can never be accepted (rule 5 of docs/mrsc.md's accept rule).
CREATE TABLE IF NOT EXISTS mrsc_settled (
    tbl TEXT NOT NULL,
    item TEXT NOT NULL,
    coordinator TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (tbl, item, coordinator)
) WITHOUT ROWID;
-- The coordinator's own aborted proposals, so it can always say how it decided one (Outcome); a row goes once both
-- other members were seen holding a version at or above it (docs/mrsc.md, "Who decides").
CREATE TABLE IF NOT EXISTS mrsc_aborted (
    pid TEXT PRIMARY KEY,
    tbl TEXT NOT NULL,
    item TEXT NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mrsc_aborted_item ON mrsc_aborted (tbl, item, version);
CREATE TABLE IF NOT EXISTS mrsc_witness (
    tbl TEXT NOT NULL,
    item TEXT NOT NULL,
    cv INTEGER NOT NULL,
    pid TEXT NOT NULL,
    image BLOB NOT NULL,
    PRIMARY KEY (tbl, item)
) WITHOUT ROWID;
"""


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


def unsupported(what: str) -> ValidationException:
    """The refusal of a feature MRSC tables do not have (facts §3 "Not supported", §10.3)."""
    return ValidationException(f"{what} is not supported for tables with multi-Region strong consistency (MRSC)")


def refuse_if_strong(table: Any, what: str) -> None:
    if table.strong is not None:
        raise unsupported(what)


def make_strong(engine: Engine, name: str, replicas: list[str], witness: str | None) -> None:
    """Make table `name` a member of a strong-mode global table: `replicas` (this region among them) and at most
    one witness. Tables with local secondary indexes or a stream cannot be (facts §3)."""
    definition = engine.tables[name]
    if definition.lsis:
        raise unsupported("Local secondary indexes")
    if definition.stream_enabled:
        raise unsupported("DynamoDB Streams")
    definition.strong = {"replicas": sorted(set(replicas) | {engine.region}), "witness": witness}
    engine.save_table(definition)


@dataclass(frozen=True, slots=True)
class Pending:
    pid: str
    table: str
    key: dict
    version: int
    coordinator: str
    image: dict | None


class StrongStore:
    """One member's durable MRSC state. `engine` is None for a witness (it has a store but no tables)."""

    def __init__(self, store: SqliteStore, engine: Engine | None, region: str) -> None:
        self.store = store
        self.engine = engine
        self.region = region
        self.witness = engine is None
        if not hasattr(store, "db"):
            raise TypeError(f"strong mode (MRSC) keeps its state in SQL tables: it needs a SqliteStore, not {store!r}")
        store.db.executescript(STRONG_SCHEMA)
        self._in_tx: list[tuple[str, tuple[Any, ...]]] = []
        store.commit_hooks.append(self._run_in_tx)
        # Proposal ids are "<region>-<epoch>-<n>"; the epoch is bumped durably at every start, so ids never repeat.
        row = store.db.execute("SELECT value FROM meta WHERE key = 'mrsc_epoch'").fetchone()
        self.epoch = (int(row[0]) if row else 0) + 1
        store.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('mrsc_epoch', ?)", (str(self.epoch),))
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
            row = self.store.db.execute(
                "SELECT cv, pid, image FROM mrsc_witness WHERE tbl = ? AND item = ?", (table, item_id(key))
            ).fetchone()
            # A trimmed image (empty blob) reads as None: only replicas already holding that version ever ask.
            return (row[0], row[1], orjson.loads(row[2]) if row[2] else None) if row else (0, "", None)
        definition = self.engine.tables[table]
        pk, sk = definition.key.encode(key)
        item, version, _tombstone = self.store.get_record(table, pk, sk)
        cv, pid = decode_version(version)
        return cv, pid, item

    def pending(self, table: str, key: dict) -> Pending | None:
        row = self.store.db.execute(
            "SELECT pid, version, coordinator, image FROM mrsc_pending WHERE tbl = ? AND item = ?",
            (table, item_id(key)),
        ).fetchone()
        if row is None:
            return None
        return Pending(row[0], table, key, row[1], row[2], orjson.loads(row[3]))

    def all_pending(self) -> list[Pending]:
        rows = self.store.db.execute(
            "SELECT tbl, item, pid, version, coordinator, image FROM mrsc_pending ORDER BY tbl, item"
        ).fetchall()
        return [Pending(r[2], r[0], orjson.loads(r[1]), r[3], r[4], orjson.loads(r[5])) for r in rows]

    def range_records(self, table: str, partition: dict | None) -> list[tuple[str, dict, int, str, dict | None]]:
        """Every record (item or tombstone) of an item collection (`partition`: {partition key name: value}), or
        of the whole table (None), as (item id, key, cv, pid, image), sorted by item id: the range-sync of a strong
        Query or Scan (replication/mrsc/range_read.py)."""
        out = []
        if self.witness:
            for item, cv, pid, image in self.store.db.execute(
                "SELECT item, cv, pid, image FROM mrsc_witness WHERE tbl = ?", (table,)
            ):
                key = orjson.loads(item)
                if in_range(key, partition):
                    out.append((item, key, cv, pid, orjson.loads(image) if image else None))
        else:
            schema = self.engine.tables[table].key
            where, args = "tid = ?", [self.store.table_id(table)]
            if partition is not None:
                pk = schema.encode_partition(partition[schema.hash_name])
                where += " AND h = ? AND pk = ?"
                args += [partition_hash(pk), pk]
            db = self.store.db
            for item, version in db.execute(f"SELECT item, version FROM items WHERE {where}", args):
                image = orjson.loads(item)
                key = schema.key_of(image)
                out.append((item_id(key), key, *decode_version(version), image))
            for pk, sk, version in db.execute(f"SELECT pk, sk, version FROM tombstones WHERE {where}", args):
                key = {schema.hash_name: decode_key_value(schema.hash_type, pk)}
                if schema.range_name is not None:
                    key[schema.range_name] = decode_key_value(schema.range_type, sk)
                out.append((item_id(key), key, *decode_version(version), None))
        out.sort(key=lambda record: record[0])
        return out

    def range_pending(self, table: str, partition: dict | None) -> dict[str, dict]:
        """item id -> key of every pending proposal in an item collection (or the whole table, None)."""
        out = {}
        for (item,) in self.store.db.execute("SELECT item FROM mrsc_pending WHERE tbl = ?", (table,)):
            key = orjson.loads(item)
            if in_range(key, partition):
                out[item] = key
        return out

    def untrimmed(self) -> list[tuple[str, dict, int]]:
        """The witness's items whose latest image it still keeps, as (table, key, cv): not yet known to be held by
        both replicas (rule 4)."""
        rows = self.store.db.execute("SELECT tbl, item, cv FROM mrsc_witness WHERE length(image) > 0").fetchall()
        return [(table, orjson.loads(item), cv) for table, item, cv in rows]

    def all_votes(self) -> list[tuple[str, str, dict, str]]:
        """Every recorded vote, as (pid, table, key, answer)."""
        rows = self.store.db.execute("SELECT pid, tbl, item, answer FROM mrsc_votes").fetchall()
        return [(pid, table, orjson.loads(item), answer) for pid, table, item, answer in rows]

    def vote(self, pid: str) -> str | None:
        row = self.store.db.execute("SELECT answer FROM mrsc_votes WHERE pid = ?", (pid,)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------------------------------------------ writes

    def accept(self, proposal: Pending, answer: str = "accept") -> None:
        """Hold `proposal` (pending) and record the vote (`accept`, or `accept-again` after a conflict), durably
        and together."""
        self._transaction(
            [
                (
                    (
                        "INSERT OR REPLACE INTO mrsc_pending (tbl, item, pid, version, coordinator, image)"
                        " VALUES (?, ?, ?, ?, ?, ?)"
                    ),
                    (
                        proposal.table,
                        item_id(proposal.key),
                        proposal.pid,
                        proposal.version,
                        proposal.coordinator,
                        orjson.dumps(proposal.image),
                    ),
                ),
                (
                    "INSERT OR REPLACE INTO mrsc_votes (pid, tbl, item, answer) VALUES (?, ?, ?, ?)",
                    (proposal.pid, proposal.table, item_id(proposal.key), answer),
                ),
            ]
        )

    def refuse(self, pid: str, table: str, key: dict, answer: str) -> None:
        self._transaction(
            [
                (
                    "INSERT OR REPLACE INTO mrsc_votes (pid, tbl, item, answer) VALUES (?, ?, ?, ?)",
                    (pid, table, item_id(key), answer),
                )
            ]
        )

    def drop_vote(self, pid: str) -> None:
        """Forget the vote on a decided proposal, remembering that its coordinator's proposals for the item up to
        this one are settled: a copy of the Propose that arrives later (reordered, or resent across a reconnect)
        must not find this member without a vote and be accepted (`settled`)."""
        statements: list[tuple[str, tuple[Any, ...]]] = []
        row = self.store.db.execute("SELECT tbl, item, answer FROM mrsc_votes WHERE pid = ?", (pid,)).fetchone()
        if row is not None and row[2] not in ("accept", "accept-again"):  # committed: its version guards it
            statements.append(_raise_mark(row[0], row[1], pid))
        statements.append(("DELETE FROM mrsc_votes WHERE pid = ?", (pid,)))
        self._transaction(statements)

    def settled(self, pid: str, table: str, key: dict) -> bool:
        """Whether a proposal is at or below the settled mark of its coordinator for the item (see `drop_vote`)."""
        coordinator, epoch, n = pid_parts(pid)
        row = self.store.db.execute(
            "SELECT epoch, n FROM mrsc_settled WHERE tbl = ? AND item = ? AND coordinator = ?",
            (table, item_id(key), coordinator),
        ).fetchone()
        return row is not None and (epoch, n) <= (row[0], row[1])

    def trim(self, table: str, key: dict, held: int) -> None:
        """The witness drops its image of an item when both replicas hold its version or a newer one (`held`, the
        lower of the two): it keeps the version (its votes need it) and an empty blob for the image."""
        self._transaction(
            [
                (
                    "UPDATE mrsc_witness SET image = x'' WHERE tbl = ? AND item = ? AND cv <= ? AND length(image) > 0",
                    (table, item_id(key), held),
                )
            ]
        )

    def abort(self, pid: str, table: str, key: dict, version: int) -> None:
        """The coordinator's own proposal is aborted: its pending row and vote go and its aborted record is written,
        together, so it can always say how it decided (docs/mrsc.md, "Who decides")."""
        ident = item_id(key)
        self._transaction(
            [
                ("DELETE FROM mrsc_pending WHERE tbl = ? AND item = ? AND pid = ?", (table, ident, pid)),
                ("DELETE FROM mrsc_votes WHERE pid = ?", (pid,)),
                (
                    "INSERT OR REPLACE INTO mrsc_aborted (pid, tbl, item, version) VALUES (?, ?, ?, ?)",
                    (pid, table, ident, version),
                ),
            ]
        )

    def aborted(self, pid: str) -> bool:
        """Whether this coordinator aborted its proposal `pid` (and still keeps the record)."""
        return self.store.db.execute("SELECT 1 FROM mrsc_aborted WHERE pid = ?", (pid,)).fetchone() is not None

    def aborted_items(self) -> list[tuple[str, dict]]:
        """(table, key) of every item with aborted records."""
        rows = self.store.db.execute("SELECT DISTINCT tbl, item FROM mrsc_aborted").fetchall()
        return [(table, orjson.loads(item)) for table, item in rows]

    def forget_aborted(self, table: str, key: dict, held: int) -> bool:
        """Drop the item's aborted records at or below version `held`, which both other members hold: no member
        can hold those proposals pending or accept them any more (a newer version supersedes them). True when
        records remain for the item."""
        ident = item_id(key)
        self._transaction([("DELETE FROM mrsc_aborted WHERE tbl = ? AND item = ? AND version <= ?",
                            (table, ident, held))])  # fmt: skip
        row = self.store.db.execute("SELECT 1 FROM mrsc_aborted WHERE tbl = ? AND item = ?", (table, ident)).fetchone()
        return row is not None

    def abandon(self, pid: str, table: str, key: dict) -> None:
        """Another member's proposal this member accepted was aborted by its coordinator: drop the pending row and
        the vote, and raise the settled mark (as `drop_vote` does for a refusal), in one transaction."""
        ident = item_id(key)
        self._transaction(
            [
                ("DELETE FROM mrsc_pending WHERE tbl = ? AND item = ? AND pid = ?", (table, ident, pid)),
                ("DELETE FROM mrsc_votes WHERE pid = ?", (pid,)),
                _raise_mark(table, ident, pid),
            ]
        )

    def apply(
        self, table: str, key: dict, version: int, pid: str, image: dict | None, *, drop_vote: bool = True
    ) -> bool:
        """Apply a committed image if it is newer than the stored one; clear pending proposals it supersedes and
        (when the decision came from the coordinator, `drop_vote`) the proposal's vote. One transaction. True when
        the image was written."""
        ident = item_id(key)
        current, _cpid, old = self.committed(table, key)
        statements: list[tuple[str, tuple[Any, ...]]] = [
            (
                "DELETE FROM mrsc_pending WHERE tbl = ? AND item = ? AND version <= ?",
                (table, ident, max(version, current)),
            ),
        ]
        if drop_vote:
            statements.append(("DELETE FROM mrsc_votes WHERE pid = ?", (pid,)))
        newer = version > current
        if self.witness:
            if newer:
                statements.append(
                    (
                        "INSERT OR REPLACE INTO mrsc_witness (tbl, item, cv, pid, image) VALUES (?, ?, ?, ?, ?)",
                        (table, ident, version, pid, orjson.dumps(image)),
                    )
                )
            self._transaction(statements)
            return newer
        if not newer:
            self._transaction(statements)
            return False
        definition = self.engine.tables[table]
        pk, sk = definition.key.encode(key)
        write = ItemWrite(
            table, pk, sk, image, item_size(image) if image is not None else 0, old,
            version=encode_version(version, pid), origin=pid.rsplit("-", 2)[0], old_version=None,
            tombstone=image is None, had_tombstone=True, deleted_at=self.engine.clock.wall_time(),
        )  # fmt: skip
        self._in_tx = statements  # run by the commit hook inside the engine's write transaction
        try:
            self.engine.commit([write])
        finally:
            self._in_tx = []
        return True

    # ----------------------------------------------------------------------------------------------- helpers

    def _run_in_tx(self, db: Any, _writes: list[ItemWrite]) -> None:
        for sql, args in self._in_tx:
            db.execute(sql, args)
        self._in_tx = []

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        db = self.store.db
        db.execute("BEGIN")
        try:
            for sql, args in statements:
                db.execute(sql, args)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _raise_mark(table: str, ident: str, pid: str) -> tuple[str, tuple[Any, ...]]:
    """The statement raising the item's settled mark for pid's coordinator to pid (never lowering it)."""
    coordinator, epoch, n = pid_parts(pid)
    return (
        "INSERT INTO mrsc_settled (tbl, item, coordinator, epoch, n) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (tbl, item, coordinator) DO UPDATE SET epoch = excluded.epoch, n = excluded.n"
        " WHERE (excluded.epoch, excluded.n) > (mrsc_settled.epoch, mrsc_settled.n)",
        (table, ident, coordinator, epoch, n),
    )
