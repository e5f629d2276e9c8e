"""A checker's proof, drawn for a person: one lane per region, one row per operation of the proof, in history order.

The linearizability checker (chaos/checkers/linearizable.py, rule 6) explains an invalid key with a small set of
operations that no order explains; results.json keeps them (`checks[].findings[].operations`, invocation and
completion records). Here each operation becomes one row of a Markdown table whose columns are the regions: the
cell in its region's lane says what it did and how it ended, from invocation (#i) to completion (#j), so which
operation finished before which began is read top to bottom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _value(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value.values())), str):
        return repr(next(iter(value.values())))
    return "no item" if value is None else repr(value)


def _cell(invoke: dict[str, Any], done: dict[str, Any] | None) -> str:
    f = invoke["f"]
    span = f"#{invoke['index']}→#{done['index']}" if done else f"#{invoke['index']}→?"
    if done is None or done["type"] == "info":
        ending = "in doubt" + (f" ({done['error']})" if done and done.get("error") else "")
    elif done["type"] == "fail":
        ending = done.get("error") or "failed"
    elif f in ("put", "update", "delete"):
        ending = "ok"
    else:
        ending = f"read {_value(done.get('value'))}"
    what = f if f == "delete" or f not in ("put", "update") else f"{f} {_value(invoke.get('value'))}"
    if invoke.get("condition"):
        what += " if " + ("exists" if invoke["condition"].get("exists") else "absent")
    return f"{what}: {ending} ({span})"


def lanes(operations: Sequence[dict[str, Any]], regions: Sequence[str]) -> list[str]:
    """Markdown lines: a table with a column per region (regions the proof does not touch are left out)."""
    invocations: dict[Any, dict[str, Any]] = {}
    rows: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for record in sorted(operations, key=lambda r: r["index"]):
        process = repr(record["process"])
        if record["type"] == "invoke":
            invocations[process] = record
            rows.append((record, None))
        elif process in invocations:
            start = invocations.pop(process)
            rows = [(inv, record if inv is start else done) for inv, done in rows]
    used = [region for region in regions if any(inv.get("region") == region for inv, _ in rows)]
    used += sorted({inv.get("region") or "?" for inv, _ in rows} - set(used))
    lines = ["| # | " + " | ".join(used) + " |", "| ---: |" + " --- |" * len(used)]
    for n, (invoke, done) in enumerate(rows, 1):
        cells = [_cell(invoke, done) if (invoke.get("region") or "?") == region else "" for region in used]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def proof_section(checks: Sequence[dict[str, Any]], regions: Sequence[str]) -> list[str]:
    """The report's "Why a check failed" section: each finding's sentence and its lanes (empty when none)."""
    out: list[str] = []
    for check in checks:
        for finding in check.get("findings") or []:
            if not finding.get("operations"):
                continue
            out += ["", f"### {check['name']}: {finding['table']}[{finding['key']}]", "", finding["detail"], ""]
            out += lanes(finding["operations"], regions)
    return (["", "## Why a check failed"] + out) if out else []


__all__ = ["lanes", "proof_section"]
