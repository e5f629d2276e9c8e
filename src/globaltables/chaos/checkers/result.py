"""What a checker says: pass/fail, a one-line summary and, on failure, the keys and the operations that prove it."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..history import Op

# {region: {table: {key_id: item_or_None}}}
ReplicaStates = dict[str, dict[str, dict[str, Any]]]


@dataclasses.dataclass
class Finding:
    """One problem with one key: which regions show it, what they hold, and the history records behind it."""

    table: str
    key: str
    problem: str
    detail: str
    regions: list[str] = dataclasses.field(default_factory=list)
    observed: dict[str, Any] = dataclasses.field(default_factory=dict)
    operations: list[Op] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "problem": self.problem,
            "detail": self.detail,
            "regions": self.regions,
            "observed": self.observed,
            "operations": [op.to_dict() for op in self.operations],
        }

    def __str__(self) -> str:
        lines = [f"{self.table}[{self.key}] {self.problem}: {self.detail} (regions: {', '.join(self.regions)})"]
        lines.extend(f"    {op!r}" for op in self.operations)
        return "\n".join(lines)


@dataclasses.dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str
    offending: list[Finding] = dataclasses.field(default_factory=list)

    def offending_keys(self) -> list[tuple[str, str]]:
        """(table, key) of every finding, sorted, without repeats."""
        return sorted({(finding.table, finding.key) for finding in self.offending})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "detail": self.detail,
            "offending": [finding.to_dict() for finding in self.offending],
        }

    def __str__(self) -> str:
        head = f"{self.name}: {'PASS' if self.passed else 'FAIL'} — {self.detail}"
        return "\n".join([head, *(f"  {finding}" for finding in self.offending)])
