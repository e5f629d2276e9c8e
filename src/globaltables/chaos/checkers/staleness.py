"""Staleness of eventually consistent reads: how far behind (versions and ms) each region's reads were.

A read at region R invoked at time t returned some write's value; the acknowledged writes to the key that had
completed before t and are later by LWW order than the value read are what it missed: their count is the staleness
in versions, and t minus the earliest such completion the staleness in ms (mono clock of the recorder). A read of
nothing counts every acknowledged non-delete write completed before t. Reads returning values no write stored
are findings. With `max_ms`, a read staler than that is a finding too; otherwise the checker only measures.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ..history import OK, History, Op, key_id
from .lww import canonical_value, parse_version
from .result import CheckResult, Finding

NAME = "staleness"
_position = itemgetter(1)


def check_staleness(
    history: History, *, max_ms: float | None = None, version_key: Callable[[Any], Any] = parse_version
) -> tuple[CheckResult, dict[str, dict[str, float]]]:
    """(result, {region: {reads, stale_reads, max_versions, max_ms, mean_ms}})."""
    writes: dict[tuple[str, str], list[tuple[Op, Op]]] = {}
    reads: list[tuple[Op, Op]] = []
    for invocation, completion in history.pairs():
        if completion is None or completion.type != OK:
            continue
        if invocation.is_write and completion.version is not None:
            writes.setdefault((invocation.table, key_id(invocation.key)), []).append((invocation, completion))
        elif invocation.f == "get":
            reads.append((invocation, completion))
    stats: dict[str, dict[str, float]] = {}
    findings: list[Finding] = []
    first_by_value: dict[tuple[str, str], dict[Any, Op]] = {}  # per key: value -> the first write storing it
    # Per key, its writes with their versions parsed once (not once per read that looks at them), in completion
    # order, so a read looks only at the prefix completed before its invocation (found by bisection).
    parsed: dict[tuple[str, str], list[tuple[int, int, Any, Op, Op]]] = {}
    completed_at: dict[tuple[str, str], list[int]] = {}
    for key, key_writes in writes.items():
        first = first_by_value[key] = {}
        for i, c in key_writes:
            first.setdefault(canonical_value(i.value), c)
        entries = sorted((c.index, position, version_key(c.version), i, c)
                         for position, (i, c) in enumerate(key_writes))  # fmt: skip
        parsed[key] = entries
        completed_at[key] = [entry[0] for entry in entries]
    for invocation, completion in reads:
        key = (invocation.table, key_id(invocation.key))
        entries = parsed.get(key, ())
        done = entries[: bisect_left(completed_at[key], invocation.index)] if entries else ()
        value = canonical_value(completion.value)
        if value is None:
            base = None
        else:
            match = first_by_value.get(key, {}).get(value)
            if match is None:
                findings.append(Finding(key[0], key[1], "unknown-value", f"read #{completion.index} returned "
                                        f"{value!r}, which no acknowledged write stored", [invocation.region],
                                        {invocation.region: completion.value}, [invocation, completion]))  # fmt: skip
                continue
            base = version_key(match.version)
        # The writes missed, in the history's order of their invocations.
        if base is None:
            chosen = [entry for entry in done if not entry[3].is_delete]
        else:
            chosen = [entry for entry in done if entry[2] > base]
        chosen.sort(key=_position)
        missed = [entry[4] for entry in chosen]
        lag_ms = 0.0
        if missed and invocation.mono is not None and all(c.mono is not None for c in missed):
            lag_ms = max(0.0, (invocation.mono - min(c.mono for c in missed)) * 1000.0)
        entry = stats.setdefault(invocation.region, {"reads": 0, "stale_reads": 0, "max_versions": 0,
                                                     "max_ms": 0.0, "total_ms": 0.0})  # fmt: skip
        entry["reads"] += 1
        entry["stale_reads"] += bool(missed)
        entry["max_versions"] = max(entry["max_versions"], len(missed))
        entry["max_ms"] = max(entry["max_ms"], lag_ms)
        entry["total_ms"] += lag_ms
        if max_ms is not None and lag_ms > max_ms:
            findings.append(Finding(key[0], key[1], "too-stale", f"read #{completion.index} was {lag_ms:.1f} ms "
                                    f"and {len(missed)} versions behind", [invocation.region], {},
                                    [invocation, completion, *missed]))  # fmt: skip
    for entry in stats.values():
        entry["mean_ms"] = entry.pop("total_ms") / entry["reads"] if entry["reads"] else 0.0
    summary = ", ".join(f"{r}: {int(s['stale_reads'])}/{int(s['reads'])} stale, max {s['max_versions']} versions "
                        f"{s['max_ms']:.1f} ms" for r, s in sorted(stats.items())) or "no reads"  # fmt: skip
    return CheckResult(NAME, not findings, summary, findings), stats
