"""The change log and the stream registry of a `MemoryStore` (the contract of storage/change_log_store.py).

Per table id, records are a dict by sequence number plus the ascending list of those numbers; each replication lane
keeps the ascending list of this region's own records in it. Sequence numbers only grow, so appending keeps the
lists sorted and "after N" is a bisection. Streams are kept as tuples and handed out as fresh `StreamRow`s.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

import orjson

from .memory_store import MemoryStore, MemoryTransaction, kept
from .records import NO_END, LogRecord, StreamRow, trim_cut


class MemoryChangeLogStore:
    def __init__(self, store: MemoryStore) -> None:
        self.state = store

    # ------------------------------------------------------------------------------------------------ sequences

    def last_seq(self, tid: int) -> int:
        seqs = self.state.log_seqs.get(tid)
        return max(seqs[-1] if seqs else 0, self.trimmed(tid))

    def trimmed(self, tid: int) -> int:
        return self.state.trimmed.get(tid, 0)

    # -------------------------------------------------------------------------------------------------- records

    def append(self, tx: MemoryTransaction, rows: list[tuple]) -> None:
        """Add records on the commit's transaction; a row is (tid, seq, created, old blob, new blob, service,
        origin, version, lane, new item's size)."""
        state = self.state
        added: list[tuple[dict, list, list | None, int]] = []
        for row in rows:
            tid, seq, origin, lane = row[0], row[1], row[6], row[8]
            if row[3] is not None:  # the old image, serialised for this record (the new one is the store's, kept)
                row = (*row[:3], kept(row[3]), *row[4:])
            log = state.log_rows.get(tid)
            if log is None:
                log = state.log_rows[tid] = {}
                state.log_seqs[tid] = []
            seqs = state.log_seqs[tid]
            log[seq] = row
            seqs.append(seq)
            lane_seqs = None
            if lane is not None and origin is None:
                lane_seqs = state.lane_seqs.get((tid, lane))
                if lane_seqs is None:
                    lane_seqs = state.lane_seqs[(tid, lane)] = []
                lane_seqs.append(seq)
            added.append((log, seqs, lane_seqs, seq))

        def undo() -> None:
            for log, seqs, lane_seqs, seq in reversed(added):
                del log[seq]
                seqs.pop()
                if lane_seqs is not None:
                    lane_seqs.pop()

        tx.on_undo(undo)

    def read(self, tid: int, first: int, last: int | None, limit: int) -> Iterator[LogRecord]:
        seqs = self.state.log_seqs.get(tid, [])
        log = self.state.log_rows.get(tid, {})
        start = bisect_left(seqs, first)
        end = bisect_right(seqs, NO_END if last is None else last)
        loads = orjson.loads
        for seq in seqs[start : min(end, start + limit)]:
            row = log[seq]
            old, new = row[3], row[4]
            yield LogRecord(
                seq, row[2], None if old is None else loads(old), None if new is None else loads(new), bool(row[5])
            )

    def trim(
        self,
        before: float,
        limit: int,
        ceilings: dict[int, int] | None = None,
        horizons: dict[int, float] | None = None,
    ) -> int:
        """Delete up to `limit` records created before `before` (oldest first, table by table); how many. A table
        in `ceilings` keeps its records above its ceiling, one in `horizons` those created since its horizon."""
        state = self.state
        removed = 0
        for tid in sorted(state.logged_tids):
            if removed >= limit:
                break
            seqs = state.log_seqs.get(tid, [])
            log = state.log_rows.get(tid, {})
            cut = trim_cut(tid, ((seq, log[seq][2]) for seq in seqs[: limit - removed]), before, ceilings, horizons)
            if cut <= 0:
                continue
            count = bisect_right(seqs, cut)
            for seq in seqs[:count]:
                del log[seq]
            del seqs[:count]
            for (lane_tid, _lane), lane_seqs in state.lane_seqs.items():
                if lane_tid == tid:
                    del lane_seqs[: bisect_right(lane_seqs, cut)]
            state.trimmed[tid] = max(state.trimmed.get(tid, 0), cut)
            removed += count
        return removed

    # ---------------------------------------------------------------------------------------------- replication

    def local_lane_records(self, tid: int, lane: int, after: int, limit: int) -> list[tuple]:
        """(seq, created, new image, old image, version, service, size) of this region's own records in a lane."""
        lane_seqs = self.state.lane_seqs.get((tid, lane), [])
        log = self.state.log_rows[tid] if lane_seqs else {}
        start = bisect_right(lane_seqs, after)
        out = []
        for seq in lane_seqs[start : start + limit]:
            row = log[seq]
            out.append((seq, row[2], row[4], row[3], row[7], row[5], row[9]))
        return out

    def local_lane_count(self, tid: int, lane: int, after: int) -> int:
        lane_seqs = self.state.lane_seqs.get((tid, lane), [])
        return len(lane_seqs) - bisect_right(lane_seqs, after)

    def local_lane_end(self, tid: int, lane: int) -> int:
        lane_seqs = self.state.lane_seqs.get((tid, lane))
        return lane_seqs[-1] if lane_seqs else 0

    # -------------------------------------------------------------------------------------------------- streams

    def streams(self) -> list[StreamRow]:
        return [StreamRow(*self.state.streams[arn]) for arn in sorted(self.state.streams)]

    def stream(self, arn: str) -> StreamRow | None:
        row = self.state.streams.get(arn)
        return StreamRow(*row) if row is not None else None

    def add_stream(self, stream: StreamRow) -> None:
        if stream.arn in self.state.streams:
            raise KeyError(f"stream {stream.arn} already registered")  # the SQLite store's primary key refuses it
        self.state.streams[stream.arn] = (
            stream.arn, stream.tid, stream.table_name, stream.label, stream.view_type,
            orjson.loads(orjson.dumps(stream.key_schema)), stream.created, stream.start_seq, stream.end_seq,
            stream.disabled,
        )  # fmt: skip
        self.state.logged_tids.add(stream.tid)

    def register_table(self, tid: int) -> None:
        """Have retention trim this table's log (a logged table without a stream: point-in-time recovery)."""
        self.state.logged_tids.add(tid)

    def close_stream(self, arn: str, end_seq: int, disabled: float) -> None:
        row = self.state.streams.get(arn)
        if row is not None:
            self.state.streams[arn] = (*row[:8], end_seq, disabled)

    def drop_stream(self, arn: str) -> None:
        self.state.streams.pop(arn, None)
