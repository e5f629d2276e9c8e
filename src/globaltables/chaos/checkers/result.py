"""What a checker says: a three-valued verdict, a one-line summary and the keys and operations behind it.

Verdicts are Jepsen's: `valid` (the property holds), `invalid` (a finding proves it does not), `unknown` (the
checker could not decide, e.g. a search ran out of budget: never a pass, never a failure). Keys a checker could not
decide are always listed in `undecided`, whatever the verdict (an invalid result still names the keys it left open).
Combining several results (`overall`): invalid if any is invalid, else unknown if any is unknown, else valid; the
CLI's exit status follows (`exit_status`: 0 valid, 1 invalid, 2 unknown).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from ..history import Op

# {region: {table: {key_id: item_or_None}}}
ReplicaStates = dict[str, dict[str, dict[str, Any]]]

VALID, INVALID, UNKNOWN = "valid", "invalid", "unknown"
VERDICTS = (VALID, INVALID, UNKNOWN)
EXIT_STATUS = {VALID: 0, INVALID: 1, UNKNOWN: 2}


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
    # An anomaly the mode's contract allows (an append lost to last-writer-wins under MREC): shown, not a failure.
    permitted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "key": self.key,
            "problem": self.problem,
            "detail": self.detail,
            "regions": self.regions,
            "observed": self.observed,
            "operations": [op.to_dict() for op in self.operations],
            **({"permitted": True} if self.permitted else {}),
        }

    def __str__(self) -> str:
        lines = [f"{self.table}[{self.key}] {self.problem}: {self.detail} (regions: {', '.join(self.regions)})"]
        lines.extend(f"    {op!r}" for op in self.operations)
        return "\n".join(lines)


@dataclasses.dataclass
class CheckResult:
    """`passed` is True exactly when the verdict is valid. `verdict` defaults to valid/invalid from `passed`; a
    checker that could not decide says `verdict=UNKNOWN` (with `passed` False) and lists `undecided`."""

    name: str
    passed: bool
    detail: str
    offending: list[Finding] = dataclasses.field(default_factory=list)
    verdict: str = ""
    undecided: list[str] = dataclasses.field(default_factory=list)  # "table[key]" of every key left open
    stats: dict[str, Any] = dataclasses.field(default_factory=dict)  # checker-specific numbers (budgets, timings)

    def __post_init__(self) -> None:
        if not self.verdict:
            self.verdict = VALID if self.passed else INVALID
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, not {self.verdict!r}")
        if (self.verdict == VALID) != bool(self.passed):
            raise ValueError(f"passed={self.passed!r} contradicts verdict {self.verdict!r}")

    def offending_keys(self) -> list[tuple[str, str]]:
        """(table, key) of every finding, sorted, without repeats."""
        return sorted({(finding.table, finding.key) for finding in self.offending})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "verdict": self.verdict,
            "detail": self.detail,
            "undecided": self.undecided,
            "offending": [finding.to_dict() for finding in self.offending],
        }

    def summary(self) -> dict[str, Any]:
        """What results.json keeps of a check (docs/results.md)."""
        return {
            "name": self.name,
            "passed": self.passed,
            "verdict": self.verdict,
            "detail": self.detail,
            "undecided": list(self.undecided),
            **({"stats": self.stats} if self.stats else {}),
        }

    def __str__(self) -> str:
        head = f"{self.name}: {LABEL[self.verdict]} — {self.detail}"
        lines = [head, *(f"  {finding}" for finding in self.offending)]
        if self.undecided:
            lines.append(f"  undecided: {', '.join(self.undecided)}")
        return "\n".join(lines)


LABEL = {VALID: "PASS", INVALID: "FAIL", UNKNOWN: "UNKNOWN"}


def verdict_of(check: CheckResult | dict[str, Any]) -> str:
    """A result's verdict; a results.json entry written before verdicts existed has only `passed`."""
    if isinstance(check, CheckResult):
        return check.verdict
    return check.get("verdict") or (VALID if check.get("passed") else INVALID)


def overall(checks: Iterable[CheckResult | dict[str, Any]]) -> str:
    verdicts = {verdict_of(check) for check in checks}
    if INVALID in verdicts:
        return INVALID
    if UNKNOWN in verdicts:
        return UNKNOWN
    return VALID


def exit_status(checks: Iterable[CheckResult | dict[str, Any]]) -> int:
    """0 every check valid, 1 one is invalid, 2 none is invalid but one is unknown."""
    return EXIT_STATUS[overall(checks)]
