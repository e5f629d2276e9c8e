"""CloudWatch Contributor Insights for DynamoDB: per table and per GSI, the most accessed and the most throttled keys
(capacity-facts §7; docs/capacity.md, decisions 18-20).

What is kept
- A `Setting` per (table, index) that was ever enabled: status, mode, when it last changed, and its rules'
  creation timestamp. UpdateContributorInsights changes it, Describe/List read it. Transitions are immediate: the
  update answers ENABLING / DISABLING, as DynamoDB does, and from then on the status is ENABLED / DISABLED.
- While enabled, a `KeyTracker` on the table's or index's throughput resource (throughput.py feeds it): for every
  charge the model serves, the key's ConsumedThroughputUnits (3 x write units + read units, the rule's measure);
  for every throttle, a ThrottleCount of 1. Partition keys (the PKC / PKT rules) and, when the resource has a sort
  key, partition + sort keys (SKC / SKT). THROTTLED_KEYS mode keeps only the throttled keys. A write throttled by a
  GSI's shortage is not counted against the table's keys (the fact sheet: "not counted").
- Bounded memory: one-minute windows on the engine's monotonic clock (the injected clock), the last `WINDOWS` of
  them, each a weighted Misra-Gries summary of at most `CAPACITY` keys: any key whose share of a window exceeds
  1/(CAPACITY+1) is kept, and its count is low by at most that share of the window's total. `top` adds up the
  windows of the period asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ACCESSED_AND_THROTTLED = "ACCESSED_AND_THROTTLED_KEYS"
THROTTLED_ONLY = "THROTTLED_KEYS"
MODES = (ACCESSED_AND_THROTTLED, THROTTLED_ONLY)
WINDOW_S = 60.0  # CloudWatch's one-minute periods
WINDOWS = 60  # an hour of history
CAPACITY = 64  # keys per window and summary
WRITE_WEIGHT = 3.0  # ConsumedThroughputUnits = 3 x WCU + RCU
RULE_PREFIX = "DynamoDBContributorInsights"
# The four rules: (code, what it counts, whether it needs a sort key). PKC/SKC: ConsumedThroughputUnits of the
# most accessed keys; PKT/SKT: ThrottleCount of the most throttled.
RULES = (("PKC", "accessed", False), ("SKC", "accessed", True), ("PKT", "throttled", False), ("SKT", "throttled", True))


class Summary:
    """A weighted Misra-Gries summary: at most `capacity` keys with their (under-)counts."""

    __slots__ = ("capacity", "counts", "total")

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self.counts: dict = {}
        self.total = 0.0

    def add(self, key, weight: float) -> None:
        self.total += weight
        counts = self.counts
        if key in counts:
            counts[key] += weight
            return
        if len(counts) < self.capacity:
            counts[key] = weight
            return
        # Full: take the smallest count (or the new weight, if smaller) off every key and the newcomer; the keys
        # brought to nothing leave. Each pass removes at least one key, so the passes are paid for by the adds.
        cut = min(weight, min(counts.values()))
        for other in list(counts):
            left = counts[other] - cut
            if left <= 1e-12:
                del counts[other]
            else:
                counts[other] = left
        if weight - cut > 1e-12:
            counts[key] = weight - cut


@dataclass
class Window:
    start: float
    summaries: dict[str, Summary] = field(default_factory=dict)  # rule code -> summary


class KeyTracker:
    """The keys of one table or GSI while Contributor Insights is enabled on it."""

    __slots__ = ("has_sort_key", "mode", "windows")

    def __init__(self, mode: str, has_sort_key: bool) -> None:
        self.mode = mode
        self.has_sort_key = has_sort_key
        self.windows: list[Window] = []

    def _window(self, now: float) -> Window:
        start = math.floor(now / WINDOW_S) * WINDOW_S
        windows = self.windows
        if not windows or windows[-1].start != start:
            windows.append(Window(start))
            if len(windows) > WINDOWS:
                del windows[0]
        return windows[-1]

    def accessed(self, pk: bytes, sk: bytes | None, units: float, now: float) -> None:
        if self.mode != ACCESSED_AND_THROTTLED:
            return
        self._add(self._window(now), "PKC", "SKC", pk, sk, units)

    def throttled(self, pk: bytes, sk: bytes | None, now: float) -> None:
        self._add(self._window(now), "PKT", "SKT", pk, sk, 1.0)

    def _add(self, window: Window, by_partition: str, by_item: str, pk: bytes, sk, weight: float) -> None:
        summaries = window.summaries
        summary = summaries.get(by_partition)
        if summary is None:
            summary = summaries[by_partition] = Summary()
        summary.add(pk, weight)
        if self.has_sort_key and sk is not None:
            summary = summaries.get(by_item)
            if summary is None:
                summary = summaries[by_item] = Summary()
            summary.add((pk, sk), weight)

    def top(self, code: str, now: float, period_s: float = WINDOW_S * WINDOWS, n: int = 10) -> list[tuple]:
        """The `n` heaviest keys of rule `code` in the windows that overlap the last `period_s` seconds: (key,
        count), heaviest first (ties by key). A key is an encoded partition key, or (partition, sort) for SK*."""
        since = now - period_s
        totals: dict = {}
        for window in self.windows:
            if window.start + WINDOW_S <= since:
                continue
            summary = window.summaries.get(code)
            if summary is None:
                continue
            for key, count in summary.counts.items():
                totals[key] = totals.get(key, 0.0) + count
        return sorted(totals.items(), key=lambda pair: (-pair[1], pair[0]))[:n]


@dataclass
class Setting:
    table: str
    index: str | None
    status: str  # ENABLED or DISABLED once the update that set it has answered
    mode: str
    updated: float  # wall-clock seconds (LastUpdateDateTime)
    created_ms: int  # the rules' creation timestamp, in their names
    tracker: KeyTracker | None = None

    def rule_names(self, has_sort_key: bool) -> list[str]:
        resource = self.table if self.index is None else f"{self.table}-{self.index}"
        codes = [code for code, measure, needs_sort in RULES if has_sort_key or not needs_sort]
        if self.mode == THROTTLED_ONLY:  # only the "most throttled" graphs exist in this mode
            codes = [code for code in codes if code.endswith("T")]
        return [f"{RULE_PREFIX}-{code}-{resource}-{self.created_ms}" for code in codes]


class ContributorInsights:
    """Every table's and GSI's Contributor Insights setting in one engine (in memory: a restarted region starts
    with none enabled, as its buckets start afresh; docs/capacity.md, decision 18)."""

    def __init__(self) -> None:
        self.settings: dict[tuple[str, str | None], Setting] = {}
        self.listeners: list = []  # called with a table name when one of its settings changed (throughput.py)

    def get(self, table: str, index: str | None) -> Setting | None:
        return self.settings.get((table, index))

    def update(
        self, table: str, index: str | None, enable: bool, mode: str, has_sort_key: bool, wall: float
    ) -> Setting:
        """Enable (with `mode`) or disable; the transition completes at once."""
        setting = self.settings.get((table, index))
        if enable:
            if setting is None or setting.status != "ENABLED" or setting.mode != mode:
                created = setting.created_ms if setting is not None and setting.status == "ENABLED" else None
                setting = Setting(table, index, "ENABLED", mode, wall, created or int(wall * 1000))
                setting.tracker = KeyTracker(mode, has_sort_key)
                self.settings[(table, index)] = setting
        elif setting is not None:
            setting.status, setting.updated, setting.tracker = "DISABLED", wall, None
        else:
            setting = self.settings[(table, index)] = Setting(table, index, "DISABLED", ACCESSED_AND_THROTTLED, wall, 0)
        for listener in self.listeners:
            listener(table)
        return setting

    def tracker(self, table: str, index: str | None) -> KeyTracker | None:
        setting = self.settings.get((table, index))
        return setting.tracker if setting is not None else None

    def forget(self, table: str) -> None:
        """A deleted table takes its settings with it."""
        for key in [key for key in self.settings if key[0] == table]:
            del self.settings[key]

    def forget_index(self, table: str, index: str) -> None:
        self.settings.pop((table, index), None)
