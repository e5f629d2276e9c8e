"""The lost-write ledger: every acknowledged write that last-writer-wins threw away, where, to what, and why.

AWS records none of the writes a global table discards. An experiment can: the history says which writes were
acknowledged (their version is the `x-globaltables-version` answer header), and every region logs its apply
decisions (region/apply_decisions.py): each replicated record applied, or found older than the version the region
already held. One ledger entry is one such decision about an acknowledged write — "region R discarded write W
(origin A, version v) because it held W' (origin B, version v')" — and a local write that `conflict_clock: wall`
stamped behind the stored version is an entry at its own origin. An entry's write is held by no region at the end:
every region ends on a version at least v' (convergence), and v' > v.

Rules
1. Entries come only from the regions' decisions; the history adds what the regions do not know: whether the
   write was acknowledged, its value, and when it was invoked and answered.
2. Identity with the receivers' counters: the entries of other regions' writes, plus the discarded records of
   writes that got no ok answer (`unacknowledged`), are exactly `conflicts.lww_overwrites` (the receivers' applied
   minus won, summed over regions).
3. `first_read_s`: when a client first read the write's value (any region; None: nobody ever saw it, the write
   vanished unread — `never_read` counts such writes). When each region learnt of a version: its origin at the write's answer (history mono), every other region at
   its decision about the record (applied or lost), on the same monotonic clock.
4. Cause, per entry:
   - `skew`: the winner was answered before the loser was sent, so in real time the loser is the newer write; only
     a clock ahead (or a clock behind at the loser's origin) can have given the winner the greater timestamp. All
     regions run on one machine, so without injected skew a later write always reads a later clock (to the
     millisecond of the version's physical part). A write lost at its own origin is always `skew`: its region held
     the winner when it stamped it, and only a clock behind stamps below a version it holds.
   - `concurrent`: the winner's origin had not learnt of the loser when the winner was sent: honest concurrency,
     what last-writer-wins exists to settle.
   - `superseded`: the winner's origin had learnt of the loser first; the winner knowingly replaced it and only
     the discarding region's arrival order (the winner came first) made it a discard.
5. Versions are compared as the regions compare them (their encoding sorts like the version); the winner's origin
   is the region part of its version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..chaos.history import OK, History, Op, key_id

CAUSES = ("skew", "concurrent", "superseded")


def origin_of(version: str | None) -> str | None:
    if not version:
        return None
    _, slash, region = version.rpartition("/")
    return region if slash else None


@dataclass
class _Write:
    invocation: Op
    completion: Op | None

    @property
    def acknowledged(self) -> bool:
        return self.completion is not None and self.completion.type == OK and self.completion.version is not None


class Ledger:
    """Built once from a run's history and every region's decisions; `entries` in time order, `summary()` for
    results.json, `key_versions()` for the report's key explorer."""

    def __init__(
        self,
        history: History,
        decisions: Mapping[str, Iterable[Mapping[str, Any]]],
        *,
        origin_mono: float | None = None,
    ) -> None:
        self.origin_mono = origin_mono
        self.by_version: dict[str, _Write] = {}
        self.unanswered: list[_Write] = []
        self.first_read: dict[str, float] = {}  # value -> mono of the first ok read that returned it
        for invocation, completion in history.pairs():
            if not invocation.is_write and invocation.f != "append":
                if completion is not None and completion.type == OK and completion.mono is not None:
                    self._note_read(completion.value, completion.mono)
                continue
            write = _Write(invocation, completion)
            if write.acknowledged:
                self.by_version[completion.version] = write  # type: ignore[union-attr, index]
            elif completion is None or completion.type != "fail":
                self.unanswered.append(write)
        # learnt[version][region] = mono of the first time `region` held or refused it (rule 3)
        self.learnt: dict[str, dict[str, float]] = {}
        for version, write in self.by_version.items():
            if write.completion is not None and write.completion.mono is not None:
                self.learnt.setdefault(version, {})[origin_of(version) or write.invocation.region] = (
                    write.completion.mono
                )
        self.decisions: list[tuple[str, Mapping[str, Any]]] = []
        self.regions = sorted(decisions)
        for region, entries in decisions.items():
            for decision in entries:
                self.decisions.append((region, decision))
                seen = self.learnt.setdefault(decision["version"], {})
                at = decision["at_mono"]
                if region not in seen or at < seen[region]:
                    seen[region] = at
        self.decisions.sort(key=lambda pair: pair[1]["at_mono"])
        self.entries: list[dict[str, Any]] = []
        self.unacknowledged = 0
        for region, decision in self.decisions:
            if decision.get("lost_to") is None:
                continue
            write = self.by_version.get(decision["version"])
            if write is None:
                self.unacknowledged += 1  # rule 2: a record of a write without an ok answer (info)
                continue
            self.entries.append(self._entry(region, decision, write))

    def _note_read(self, value: Any, mono: float) -> None:
        """A register read returns one value, a list read (or a query) a list of them."""
        first_read = self.first_read
        for seen in value if isinstance(value, list) else (value,):
            if isinstance(seen, str):
                known = first_read.get(seen)  # a mono time, never None
                if known is None or mono < known:
                    first_read[seen] = mono

    # ------------------------------------------------------------------------------------------------ entries

    def _t(self, mono: float | None) -> float | None:
        if mono is None:
            return None
        return round(mono - self.origin_mono, 4) if self.origin_mono is not None else round(mono, 4)

    def _entry(self, region: str, decision: Mapping[str, Any], write: _Write) -> dict[str, Any]:
        version, winner_version = decision["version"], decision["lost_to"]
        origin, winner_origin = origin_of(version), origin_of(winner_version)
        winner = self.by_version.get(winner_version)
        regions = sorted(set(self.learnt.get(version, {})) | set(self.learnt.get(winner_version, {})) | {region})
        learnt = {
            name: {
                "write_s": self._t(self.learnt.get(version, {}).get(name)),
                "winner_s": self._t(self.learnt.get(winner_version, {}).get(name)),
            }
            for name in regions
        }
        return {
            "table": decision["table"],
            "key": key_id(write.invocation.key),
            "value": write.invocation.value,
            "version": version,
            "origin": origin,
            "invoked_s": self._t(write.invocation.mono),
            "acknowledged_s": self._t(write.completion.mono if write.completion else None),
            "region": region,
            "discarded_s": self._t(decision["at_mono"]),
            "first_read_s": self._t(self.first_read.get(write.invocation.value))
            if isinstance(write.invocation.value, str) else None,
            "winner": {
                "version": winner_version,
                "origin": winner_origin,
                "value": winner.invocation.value if winner is not None else None,
                "invoked_s": self._t(winner.invocation.mono) if winner is not None else None,
                "acknowledged_s": self._t(winner.completion.mono) if winner and winner.completion else None,
            },
            "cause": "skew" if region == origin else self._cause(write, winner, winner_origin),
            "learnt": learnt,
        }

    def _cause(self, write: _Write, winner: _Write | None, winner_origin: str | None) -> str:
        """Rule 4."""
        if (
            winner is not None
            and winner.completion is not None
            and winner.completion.mono is not None
            and write.invocation.mono is not None
            and winner.completion.mono < write.invocation.mono
        ):
            return "skew"
        version = write.completion.version if write.completion else None
        known_at = self.learnt.get(version or "", {}).get(winner_origin or "")
        sent = winner.invocation.mono if winner is not None else None
        if known_at is not None and sent is not None and known_at < sent:
            return "superseded"
        return "concurrent"

    # ------------------------------------------------------------------------------------------------ summary

    def summary(self) -> dict[str, Any]:
        entries = self.entries
        at_origin = sum(1 for entry in entries if entry["region"] == entry["origin"])
        return {
            "count": len(entries),
            "writes": len({entry["version"] for entry in entries}),
            "replicated": len(entries) - at_origin,
            "at_origin": at_origin,
            "unacknowledged": self.unacknowledged,
            "never_read": len({e["version"] for e in entries if e["first_read_s"] is None}),
            "by_pair": dict(sorted(Counter(f"{e['origin']}->{e['winner']['origin']}" for e in entries).items())),
            "by_region": dict(sorted(Counter(e["region"] for e in entries).items())),
            "by_table": dict(sorted(Counter(e["table"] for e in entries).items())),
            "by_cause": {cause: sum(1 for e in entries if e["cause"] == cause) for cause in CAUSES},
        }

    def key_versions(self, limit: int = 300, exclude=None) -> dict[str, list[dict[str, Any]]]:
        """{"table|key": [every acknowledged version of the key, in version order: value, origin, when written,
        whether it won, and when each region learnt of it]} for the `limit` keys with the most versions (and every
        key with a ledger entry); keys for which `exclude(key)` holds are left out."""
        by_key: dict[str, list[tuple[str, _Write]]] = {}
        for version, write in self.by_version.items():
            if exclude is not None and exclude(write.invocation.key):
                continue
            name = f"{write.invocation.table}|{key_id(write.invocation.key)}"
            by_key.setdefault(name, []).append((version, write))
        lost = {f"{e['table']}|{e['key']}" for e in self.entries}
        discarded = {}
        for entry in self.entries:
            discarded.setdefault(entry["version"], []).append(entry["region"])
        chosen = sorted(by_key, key=lambda name: (name not in lost, -len(by_key[name]), name))[:limit]
        result: dict[str, list[dict[str, Any]]] = {}
        for name in sorted(chosen):
            versions = sorted(by_key[name], key=lambda pair: pair[0])
            winner = versions[-1][0]
            result[name] = [
                {
                    "version": version,
                    "origin": origin_of(version),
                    "f": write.invocation.f,
                    "value": write.invocation.value,
                    "invoked_s": self._t(write.invocation.mono),
                    "acknowledged_s": self._t(write.completion.mono if write.completion else None),
                    "won": version == winner,
                    "discarded_by": sorted(discarded.get(version, [])),
                    "learnt_s": {region: self._t(at) for region, at in sorted(self.learnt.get(version, {}).items())},
                }
                for version, write in versions
            ]
        return result


    def convergence_after_heals(self, faults: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """For each fault that ended (and the final heal): how long until every region had learnt of every write
        acknowledged before it (rule 3). Versions some region never decided on (its log started again with a
        restart) are left out and counted."""
        heals = []
        for fault in faults:
            value = fault.get("value") or {}
            if fault.get("mono") is None or not isinstance(value, dict):
                continue
            if value.get("phase") == "end":
                heals.append((fault["mono"], f"{fault['f']} {'/'.join(value.get('regions', []))} ended".strip()))
            elif fault.get("f") == "heal" and value.get("phase") == "final":
                heals.append((fault["mono"], "final heal"))
        everyone = set(self.regions)
        rows = []
        for at, label in sorted(heals):
            latest, writes, incomplete = None, 0, 0
            for version, write in self.by_version.items():
                if write.completion is None or write.completion.mono is None or write.completion.mono >= at:
                    continue
                seen = self.learnt.get(version, {})
                if not everyone <= set(seen):
                    incomplete += 1
                    continue
                writes += 1
                last = max(seen[region] for region in everyone)
                latest = last if latest is None or last > latest else latest
            ms = None if latest is None else round(max(0.0, latest - at) * 1000.0, 1)
            rows.append({"after": label, "t_s": self._t(at), "ms": ms, "writes": writes, "incomplete": incomplete})
        return rows


def build_ledger(history: History, decisions: Mapping[str, Iterable[Mapping[str, Any]]],
                 origin_mono: float | None = None) -> Ledger:  # fmt: skip
    return Ledger(history, decisions, origin_mono=origin_mono)


def write_files(out_dir: Any, ledger: Ledger, decisions: Mapping[str, Iterable[Mapping[str, Any]]]) -> None:
    """lost_writes.jsonl (one entry a line, in time order) and apply_decisions.jsonl (every region's decisions,
    `{"region", ...decision}` a line, so the ledger can be rebuilt offline: `read_decisions`)."""
    import orjson

    from pathlib import Path

    out = Path(out_dir)
    with open(out / "lost_writes.jsonl", "wb") as file:
        file.writelines(orjson.dumps(entry) + b"\n" for entry in ledger.entries)
    with open(out / "apply_decisions.jsonl", "wb") as file:
        for region, entries in sorted(decisions.items()):
            file.writelines(orjson.dumps({"region": region, **entry}) + b"\n" for entry in entries)


def read_decisions(path: Any) -> dict[str, list[dict[str, Any]]]:
    import orjson

    from pathlib import Path

    decisions: dict[str, list[dict[str, Any]]] = {}
    file = Path(path)
    if not file.exists():
        return decisions
    for line in file.read_bytes().splitlines():
        if line.strip():
            record = orjson.loads(line)
            decisions.setdefault(record.pop("region"), []).append(record)
    return decisions
