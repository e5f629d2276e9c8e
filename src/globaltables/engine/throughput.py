"""The throughput model: which requests a region serves and which it throttles (docs/capacity.md).

Every data-plane request computes one `capacity.Charge` (what ReturnConsumedCapacity reports) and hands it to
`ThroughputModel.charge` before it changes anything; a refused charge raises the `throttling.Throttle`'s error and
the request has no effect (no write, no stream record, nothing drawn). `Engine(capacity="unlimited")` has no model
(`engine.throughput is None`): nothing is ever throttled.

Buckets (token buckets on the engine's monotonic clock, refilled continuously, never above their depth):
- Partitions. Each partition of the table and of each global secondary index has one bucket counted in
  partition-seconds: a read of r units draws r/3000, a write of w units w/1000, refill 1 per second, depth 1 (one
  second of a partition's throughput). One bucket for both, so reads and writes share a partition as the linear
  combination r/3000 + w/1000 <= 1. Exceeded: KeyRangeThroughputExceeded. A key lives in one partition, so one key
  never gets more than 1,000 WCU / 3,000 RCU a second. A partition that serves at least 80 % of that in each of 120
  seconds in a row splits for heat at a hash chosen from the keys it served (`Partition.served`,
  partitions.heat_cut; docs/capacity.md, decision 4): two hot keys that shared it then get a partition each.
- Provisioned mode: per table and per GSI, a read and a write bucket filling at the provisioned rate, depth 300
  seconds of it (burst capacity), starting with one second. Any partition may draw from them, up to its own
  partition bucket: that is adaptive capacity, instant and never above the partition limit. Exceeded:
  ProvisionedThroughputExceeded.
- On demand: no table bucket; the partitions are the limit, and there are enough of them to serve twice the
  previous peak (partitions.py). A one-second consumption counts as the previous peak 30 minutes after it
  happened. `OnDemandThroughput` maxima are buckets at that rate, depth one second (MaxOnDemandThroughputExceeded);
  the per-table quota (40,000 read and 40,000 write units a second, table and GSIs together) is one more
  (AccountLimitExceeded).

Admission: a request is served when every bucket it draws from holds what it would draw there, and then draws it.
A draw larger than a bucket's depth (a 400 KB write on one partition, a 4 MB transaction) needs a full bucket and
leaves it in debt, repaid by the refill before anything else is served; so every request can succeed eventually,
while the rate over any interval stays within the bucket's rate plus its depth. Each item of a batch or
transaction is checked on its own.

Cost (bench/capacity.py in process, bench/region_throughput.py --capacity-cost through a region): a GetItem and a
write that touches no secondary index are charged by `charge_one`, from scalars (the units from the stored item
size the read returned, the hash the store computed), against the table's buckets looked up once per configuration
(`Lane`); no Charge, dict or list is built and no ARN is formatted unless the request is throttled. Between two
requests a region's caches are cold (the store's pages pass through them), so there a line of Python costs several
times what it does in a loop: the fast path is measured by the objects it touches as much as by its lines.
A bucket is kept as the time it was empty (`Bucket`), so bringing it up to date is one comparison; heat and the 10
GB rule are looked at once a second per partition (`ThroughputModel._second`), not per request.

Metrics: every resource counts what CloudWatch publishes for it (consumed units, throttle events, events by limit
type) and feeds its Contributor Insights tracker when one is enabled (contributor_insights.py); `throttled` tells
the engine which tables a failed request was throttled on (ThrottledRequests). region/capacity_metrics.py renders
them; docs/capacity.md, decisions 17-20.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

from . import partitions
from .capacity import Charge, read_units, write_units
from .throttling import ACCOUNT_LIMIT, KEY_RANGE, MAX_ON_DEMAND, PROVISIONED, Throttle
from .values import MAX_ITEM_BYTES

UNLIMITED = "unlimited"
MODELLED = "modelled"
CAPACITY_OPTIONS = (MODELLED, UNLIMITED)

BURST_S = 300.0  # unused provisioned capacity is kept for up to 5 minutes
PEAK_MATURITY_S = 1800.0  # "throttling can occur if you exceed double your previous peak within 30 minutes"
NEW_TABLE_PEAK = {"read": 6000.0, "write": 2000.0}  # a new on-demand table serves twice that at once
REPLICATION_RESERVE_S = 1.0  # replicated writes leave this much of a bucket's rate to local requests (decision 16)
SIZE_RECHECK_S = 60.0  # how often the 10 GB rule looks at the stored size again (a count of the rows)


@dataclass(frozen=True)
class CapacitySettings:
    """The adjustable quotas (DescribeLimits' table maxima): per table, read and write units per second."""

    table_max_read_units: float = 40000.0
    table_max_write_units: float = 40000.0


class Bucket:
    """A token bucket kept as the time it was (or will be) empty: its level at time t is rate * (t - empty), never
    above its depth (`span`, depth / rate seconds after `empty`, it is full). A draw of c moves `empty` on by
    c / rate; a level below zero is a debt (decision 8). Exactly the continuously refilled bucket, with one number
    to bring up to date (`refill` clamps `empty` to now - span) instead of a level and a time. `level` is the level
    as of the last refill."""

    __slots__ = ("depth", "empty", "inverse", "last", "rate", "span")

    def __init__(self, rate: float, depth: float, level: float, now: float) -> None:
        self.rate, self.depth, self.inverse, self.span = rate, depth, 1.0 / rate, depth / rate
        self.empty = now - level / rate
        self.last = now

    @property
    def level(self) -> float:
        level = self.rate * (self.last - self.empty)
        return level if level < self.depth else self.depth  # noqa: FURB136

    def refill(self, now: float) -> None:
        if now > self.last:  # noqa: PLR1730 (max() is a call: hot path)
            self.last = now
        full = self.last - self.span
        if self.empty < full:  # noqa: PLR1730 (max() is a call: hot path)
            self.empty = full

    def admits(self, cost: float, now: float) -> bool:
        """Whether the bucket holds `cost`; a cost above its depth needs a full bucket (and leaves a debt)."""
        self.refill(now)
        return self.rate * (self.last - self.empty) >= (cost if cost < self.depth else self.depth)  # noqa: FURB136

    def draw(self, cost: float) -> None:
        self.empty += cost * self.inverse

    def retune(self, rate: float, depth: float, now: float) -> None:
        """A new rate from now on (UpdateTable): what accrued so far stays, up to the new depth."""
        self.refill(now)
        level = min(self.level, depth)
        self.rate, self.depth, self.inverse, self.span = rate, depth, 1.0 / rate, depth / rate
        self.empty = self.last - level / rate


class Partition(Bucket):
    """A partition's bucket (rate 1, depth 1 partition-second: `empty` moves on by the share drawn) and its heat:
    what it served in the current whole second of the monotonic clock, since when every second has been hot (at
    least HEAT_SHARE served), and, during such a streak, the load each partition hash drew (the observed key
    distribution a split point is chosen from). `ends` is when the fast path must call `served`: the end of the
    second, or at once while the partition is hot."""

    __slots__ = ("ends", "hot", "hot_since", "second_ends", "used")

    def __init__(self, now: float, level: float = 1.0) -> None:
        super().__init__(1.0, 1.0, level, now)
        self.ends = self.second_ends = -math.inf  # when the current second ends
        self.used = 0.0
        self.hot_since: float | None = None
        self.hot: dict[int, float] | None = None  # partition hash -> share served, while hot

    def served(self, h: int, share: float, now: float) -> bool:
        """Count `share` served at hash `h`; whether the partition has been hot long enough to split. Outside a
        streak the fast path only adds to `used` until the second ends."""
        split = False
        if now >= self.second_ends:
            split = self._roll(now)
        self.used += share
        hot = self.hot
        if hot is not None:
            if h in hot:
                hot[h] += share
            elif len(hot) < partitions.HEAT_KEYS:
                hot[h] = share
        self.ends = -math.inf if hot is not None else self.second_ends
        return split

    def _roll(self, now: float) -> bool:
        """A new second: the one that ended continues the streak if it was hot and this one follows it at once (a
        second with nothing served is not hot)."""
        second = math.floor(now)
        if self.used >= partitions.HEAT_SHARE and second == self.second_ends:
            if self.hot_since is None:
                self.hot_since, self.hot = self.second_ends - 1.0, {}
        else:
            self.hot_since = self.hot = None
        self.second_ends, self.used = second + 1.0, 0.0
        return self.hot_since is not None and second - self.hot_since >= partitions.HEAT_SPLIT_S

    def twin(self, now: float) -> Partition:
        """The new half of a split: it starts with what the partition holds now."""
        self.refill(now)
        return Partition(now, self.level)


class Peak:
    """The highest one-second consumption of one kind, counted once it is 30 minutes old."""

    __slots__ = ("ends", "pending", "second", "used", "value")

    def __init__(self, value: float) -> None:
        self.value = value
        self.second: int | None = None
        self.ends = -math.inf  # when the current second ends: until then a record is one addition
        self.used = 0.0
        self.pending: list[tuple[float, float]] = []  # (when it happened, consumption), consumption increasing

    def record(self, now: float, units: float, sustained: float) -> bool:
        """Count `units` consumed at `now`; whether the previous peak rose. A second's consumption counts up to
        `sustained`, what the partitions serve in a second: the second of throughput full buckets start with
        is not a peak. Pending peaks mature at whole seconds, so looking at them once a second is exact."""
        if now < self.ends:
            self.used += units
            return False
        second = math.floor(now)
        if second != self.second:
            used = min(self.used, sustained)
            if self.second is not None and used > max(self.value, self.pending[-1][1] if self.pending else 0):
                self.pending.append((self.second + 1.0, used))
            self.second, self.used = second, 0.0
            self.ends = second + 1.0
        self.used += units
        rose = False
        while self.pending and self.pending[0][0] <= now - PEAK_MATURITY_S:
            self.value = max(self.value, self.pending.pop(0)[1])
            rose = True
        return rose


def _units(spec: dict | None, member: str) -> float:
    value = (spec or {}).get(member)
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0


class Resource:
    """The buckets of a table or of one of its GSIs, and what CloudWatch would count for it (metrics)."""

    # Slots: the fast path reads a few of these per request, and a region's cache is cold between requests (the
    # item store's pages pass through it), so fewer objects and cache lines per request is what saves time there.
    __slots__ = (
        "arn", "base", "caps", "consumed", "count", "events", "has_sort_key", "heat_splits", "highest", "insights",
        "name", "parts", "peaks", "provisioned", "reasons", "resource_type", "size", "starts", "warm",
    )  # fmt: skip

    def __init__(self, resource_type: str, arn: str, name: str | None = None, has_sort_key: bool = False) -> None:
        self.resource_type = resource_type  # "Table" or "Index"
        self.arn = arn
        self.name = name  # the GSI's name, None for the table
        self.has_sort_key = has_sort_key
        self.count = 0  # partitions
        self.base = 0  # the partitions the rates, peaks, warm throughput and size ask for (equal ranges)
        self.parts: list[Partition] = []
        self.starts: list[int] | None = None  # each partition's first hash, once a split for heat made them unequal
        self.heat_splits = 0
        self.provisioned: dict[str, Bucket] = {}  # kind -> bucket, provisioned mode only
        self.caps: dict[str, Bucket] = {}  # kind -> OnDemandThroughput maximum, on demand only
        self.peaks: dict[str, Peak] | None = None  # on demand only
        self.warm = 0  # partitions the WarmThroughput asks for
        self.highest = {"read": 0.0, "write": 0.0}  # the highest rates ever provisioned
        self.size = 0
        # CloudWatch's counts (docs/capacity.md, decision 17): units served, throttle events, and throttle events by
        # the limit type that refused them ((kind, limit type) -> events).
        self.consumed = {"read": 0.0, "write": 0.0}
        self.events = {"read": 0, "write": 0}
        self.reasons: dict[tuple[str, str], int] = {}
        self.insights = None  # contributor_insights.KeyTracker while Contributor Insights is enabled here

    def configure(self, on_demand: bool, spec, now: float) -> None:
        """Rates from the definition (`spec`: the TableDefinition or IndexDefinition), kept buckets retuned."""
        if on_demand:
            if self.peaks is None:
                # A table switched from provisioned keeps what it had: its highest provisioned rate or the new-table
                # peak, whichever is higher.
                self.peaks = {kind: Peak(max(NEW_TABLE_PEAK[kind], self.highest[kind])) for kind in ("read", "write")}
            self.provisioned = {}
            for kind, member in (("read", "MaxReadRequestUnits"), ("write", "MaxWriteRequestUnits")):
                rate = _units(spec.on_demand, member)
                self._tune(self.caps, kind, rate, rate, now)
        else:
            self.peaks = None
            self.caps = {}
            for kind, member in (("read", "ReadCapacityUnits"), ("write", "WriteCapacityUnits")):
                rate = _units(spec.provisioned, member)
                self.highest[kind] = max(self.highest[kind], rate)
                self._tune(self.provisioned, kind, rate, rate * BURST_S, now)
        warm = spec.warm_throughput or {}
        self.warm = max(
            math.ceil(_units(warm, "ReadUnitsPerSecond") / partitions.PARTITION_READ_UNITS),
            math.ceil(_units(warm, "WriteUnitsPerSecond") / partitions.PARTITION_WRITE_UNITS),
        )
        self.resize(now)

    @staticmethod
    def _tune(buckets: dict[str, Bucket], kind: str, rate: float, depth: float, now: float) -> None:
        if rate <= 0:
            buckets.pop(kind, None)
        elif kind in buckets:
            buckets[kind].retune(rate, depth, now)
        else:
            buckets[kind] = Bucket(rate, depth, rate, now)  # one second to start with; burst accrues unused

    def resize(self, now: float) -> None:
        """Split to the partition count the rates, the peaks, the warm throughput and the size ask for."""
        if self.peaks is not None:
            wanted = partitions.on_demand_count(self.peaks["read"].value, self.peaks["write"].value, self.size)
        else:
            read = self.provisioned.get("read")
            write = self.provisioned.get("write")
            wanted = partitions.provisioned_count(read.rate if read else 0, write.rate if write else 0, self.size)
        wanted = max(wanted, self.warm)
        if wanted > self.base:  # split, never merged: cuts made for heat stay
            self.base = wanted
            if self.starts is not None:
                self.starts = sorted(set(self.starts) | set(partitions.uniform_starts(wanted)))
            self.count = wanted if self.starts is None else len(self.starts)
            self.parts = [Partition(now) for _ in range(self.count)]

    def partition(self, h: int) -> Partition:
        return self.parts[partitions.place(h, self.count, self.starts)]

    def split_for_heat(self, part: Partition, now: float) -> None:
        """`part` has been hot for HEAT_SPLIT_S: cut it in two where its observed load balances, unless one
        partition key carried it all (docs/capacity.md, decision 4). Either way its streak starts again."""
        cut = partitions.heat_cut(part.hot or {})
        part.hot_since = part.hot = None
        part.ends = part.second_ends
        if cut is None:
            return
        i = next(n for n, p in enumerate(self.parts) if p is part)
        starts = self.starts if self.starts is not None else partitions.uniform_starts(self.count)
        starts.insert(i + 1, cut)
        self.parts.insert(i + 1, part.twin(now))
        self.starts = starts
        self.count += 1
        self.heat_splits += 1


class Lane:
    """What `charge_one` needs of one table's own resource for one kind of unit, looked up once per configuration,
    not per request (ThroughputModel drops it whenever the engine saves or drops the table, or Contributor Insights
    changes there): the resource, the table's bucket (the provisioned one in provisioned mode, the per-table quota
    on demand: a table has one or the other, ThroughputModel._configure, so the fast path checks one bucket inline),
    the previous peak of an on-demand table, and the partition share of one unit. A lane is `plain` when the fast
    path may serve every request of its kind: nothing it does not do must see each request (an OnDemandThroughput
    cap, Contributor Insights), and any one item's draw is below the table bucket's depth (a larger draw needs a
    full bucket and leaves a debt, decision 8; a partition's depth of 1,000 WCU is above any item's 400)."""

    __slots__ = ("bucket", "peak", "plain", "resource", "share", "state")

    def __init__(self, state: TableThroughput, kind: str) -> None:
        resource = state.resources[None]
        provisioned, quota = resource.provisioned.get(kind), state.quota.get(kind)
        assert provisioned is None or quota is None  # provisioned mode has no quota bucket, on demand no rate
        self.state = state
        self.resource = resource
        self.bucket = bucket = provisioned or quota
        self.peak = resource.peaks[kind] if resource.peaks is not None else None
        self.share = _SHARE[kind]
        self.plain = (
            resource.caps.get(kind) is None
            and resource.insights is None
            and (bucket is None or bucket.depth > _MOST_ITEM_UNITS[kind])
        )


class TableThroughput:
    """One table's resources: the table, each GSI, and the per-table on-demand quota."""

    __slots__ = ("definition", "name", "quota", "resources", "sized_at", "table_id", "throttled_requests")

    def __init__(self, table) -> None:
        self.name = table.name
        self.table_id = table.table_id
        self.definition = None
        self.resources: dict[str | None, Resource] = {}
        self.quota: dict[str, Bucket] = {}
        self.sized_at = -math.inf
        self.throttled_requests: dict[str, int] = {}  # operation -> requests throttled (ThrottledRequests)


_SHARE = {"read": 1.0 / partitions.PARTITION_READ_UNITS, "write": 1.0 / partitions.PARTITION_WRITE_UNITS}
_PER_PARTITION = {"read": partitions.PARTITION_READ_UNITS, "write": partitions.PARTITION_WRITE_UNITS}
_OPERATION = {"read": "Read", "write": "Write"}
# The largest draw of one item: 400 KB in write units, or read strongly.
_MOST_ITEM_UNITS = {"read": read_units(MAX_ITEM_BYTES, consistent=True), "write": write_units(MAX_ITEM_BYTES)}


class ThroughputModel:
    """One engine's buckets. Its dependencies are narrow: the clock, the table registry (name -> definition) and
    `sizes(table)`, the stored bytes of the table (key None) and of each of its GSIs (key: index name); and, to
    feed Contributor Insights, the engine's settings (contributor_insights.py), whose changes it listens to."""

    def __init__(self, clock, tables, sizes, settings: CapacitySettings | None = None, insights=None) -> None:
        self.clock = clock
        self._monotonic = clock.monotonic  # bound once: the fast path reads it per request
        self.tables_by_name = tables
        self.sizes = sizes
        self.settings = settings or CapacitySettings()
        self.tables: dict[str, TableThroughput] = {}
        # kind -> table name -> the fast path's Lane (charge_one), made by the first request after a configuration.
        self._lanes: dict[str, dict[str, Lane | None]] = {"read": {}, "write": {}}
        self.insights = insights
        if insights is not None:
            insights.listeners.append(self._attach_insights)
        # The tables a throttle refused something of since the engine last looked (`take_throttled`): a request
        # that fails with a throttle counts once in each one's ThrottledRequests.
        self.throttled: set[str] = set()

    # ------------------------------------------------------------------------------------------------- admission

    def charge(self, charge: Charge) -> None:
        """Serve `charge` (draw it) or raise the throttling error of the first limit it hits."""
        throttle = self.try_charge(charge)
        if throttle is not None:
            raise throttle.error()

    def charge_one(self, table: str, kind: str, h: int, units: float, pk: bytes | None, sk: bytes | None) -> None:
        """`charge` of `units` on the table itself (no index), at partition hash `h`: the fast path of a GetItem or
        an index-free write, with no Charge built, the buckets' arithmetic inlined (Bucket.admits and draw). Kept
        short and touching few objects (the table's `Lane`, the partition, the table's bucket): whatever is rare
        (a first request, a new definition, an OnDemandThroughput cap, Contributor Insights, a draw as large as a
        bucket, a throttle) takes `_charge_general`, which applies the same limits in the same order.

        Why a bucket is checked before it is brought up to date: its level is min(now - empty, span) in seconds of
        its rate, and a draw below the span (`Lane.plain` sees to it) fits exactly when now - empty >= the draw, so
        the clamp to the span is only needed for the new `empty`."""
        now = self._monotonic()
        lane = self._lanes[kind].get(table)
        if lane is None:  # none yet, or not a plain one; a lane lives until its table is saved or dropped
            self._charge_general(table, kind, h, units, pk, sk, now)
            return
        resource = lane.resource
        starts = resource.starts
        part = resource.parts[h * resource.count >> 32 if starts is None else bisect_right(starts, h) - 1]
        share = units * lane.share
        empty = part.empty
        if now - empty < share:  # the partition holds less than the draw (rate 1, depth 1)
            self._charge_general(table, kind, h, units, pk, sk, now)
            return
        bucket = lane.bucket
        if bucket is not None:  # the table's provisioned rate or quota, in seconds of its rate
            table_empty = bucket.empty
            wait = units * bucket.inverse
            if now - table_empty < wait:
                self._charge_general(table, kind, h, units, pk, sk, now)
                return
            floor = now - bucket.span
            bucket.empty = (table_empty if table_empty > floor else floor) + wait
        floor = now - 1.0
        part.empty = (empty if empty > floor else floor) + share
        if now >= part.ends:  # a new second (heat and the 10 GB rule are looked at), or a hot partition
            self._second(lane.state, resource, part, h, share, now)
        else:
            part.used += share
        resource.consumed[kind] += units
        peak = lane.peak
        if peak is not None:  # on demand: the previous peak, one addition until the second ends (Peak.record)
            if now < peak.ends:
                peak.used += units
            elif peak.record(now, units, resource.count * _PER_PARTITION[kind]):
                resource.resize(now)

    def _charge_general(
        self, table: str, kind: str, h: int, units: float, pk: bytes | None, sk: bytes | None, now: float
    ) -> None:
        """`charge_one` the long way (`_one`: every limit, the throttle counted, Contributor Insights fed), and the
        table's lane made for the next request if it has none (lanes go with every configuration)."""
        state = self._state(table, now)
        lanes = self._lanes[kind]
        if table not in lanes:  # kept as None when not plain: charge_one then comes here at once
            lane = Lane(state, kind)
            lanes[table] = lane if lane.plain else None
        throttle = self._one(state, kind, None, h, units, units, pk, sk, now)
        if throttle is not None:
            raise throttle.error()

    def _second(self, state: TableThroughput, resource: Resource, part: Partition, h: int, share: float, now: float):
        """The fast path's slower turn, at most once a second per partition outside heat: Partition.served (and a
        split for heat), and the size looked at again every SIZE_RECHECK_S."""
        if part.served(h, share, now):
            resource.split_for_heat(part, now)
        if now - state.sized_at >= SIZE_RECHECK_S:
            self._resize_by_size(state, self.tables_by_name[state.name], now)

    def try_charge(self, charge: Charge) -> Throttle | None:
        """Draw `charge` and return None, or draw nothing and return why not."""
        if len(charge.places) == 1:
            now = self.clock.monotonic()
            state = self._state(charge.table, now)
            name, h, units, pk, sk = charge.places[0]
            return self._one(state, charge.kind, name, h, units, charge.total, pk, sk, now)
        state, now, draws = self._draws(charge)
        throttle = self._refused(state, charge, draws, now)
        if throttle is None:
            self._draw(state, charge, draws, now)
        else:
            self._count_throttle(state, charge.kind, charge.places, throttle, now)
        return throttle

    def _one(
        self, state: TableThroughput, kind: str, name: str | None, h: int, units: float, total: float,
        pk: bytes | None, sk: bytes | None, now: float,
    ) -> Throttle | None:  # fmt: skip
        """A charge on one partition of one resource (most requests), without the lists: the same limits in the
        same order as `_draws`."""
        resource = state.resources.get(name)
        if resource is None:
            return None
        cap = resource.caps.get(kind) if resource.caps else None
        quota = state.quota.get(kind) if state.quota else None
        provisioned = resource.provisioned.get(kind) if resource.provisioned else None
        part = resource.parts[partitions.place(h, resource.count, resource.starts)] if resource.count else None
        share = units * _SHARE[kind]
        limit = None
        refused = resource
        if cap is not None and not cap.admits(units, now):
            limit = MAX_ON_DEMAND
        elif quota is not None and not quota.admits(total, now):
            limit, refused = ACCOUNT_LIMIT, state.resources[None]
        elif provisioned is not None and not provisioned.admits(units, now):
            limit = PROVISIONED
        elif part is not None and not part.admits(share, now):
            limit = KEY_RANGE
        if limit is not None:
            throttle = Throttle(
                refused.resource_type, _OPERATION[kind], limit, refused.arn, state.resources[None].peaks is not None
            )
            self._count_throttle(state, kind, ((name, h, units, pk, sk),), throttle, now, refused)
            return throttle
        if cap is not None:
            cap.draw(units)
        if quota is not None:
            quota.draw(total)
        if provisioned is not None:
            provisioned.draw(units)
        if part is not None:
            part.draw(share)
            if part.served(h, share, now):
                resource.split_for_heat(part, now)
        resource.consumed[kind] += units
        if resource.insights is not None and pk is not None:
            resource.insights.accessed(pk, sk, units * 3.0 if kind == "write" else units, now)
        peaks = resource.peaks
        if peaks is not None and peaks[kind].record(now, units, resource.count * _PER_PARTITION[kind]):
            resource.resize(now)
        return None

    # ------------------------------------------------------------------------------ replicated writes (rWCU)

    def try_replicated(self, charge: Charge) -> Throttle | None:
        """A replicated write arriving from another region (engine/replica.py): drawn from the same buckets as a
        local write of the same units (rWCU are write units, facts §1), but only from what lies above a reserve
        kept for the region's own clients (REPLICATION_RESERVE_S of each bucket's rate, at most half its depth):
        replication yields to local requests and falls behind, rather than making clients throttle. Refused: the
        throttle of the first bucket short; the caller defers the record, it is never dropped (docs/capacity.md,
        decision 16). A draw larger than what a bucket holds above its reserve needs a full bucket (decision 8)."""
        state, now, draws = self._draws(charge)
        for bucket, cost, resource, limit, _h in draws:
            bucket.refill(now)
            reserve = min(bucket.rate * REPLICATION_RESERVE_S, bucket.depth / 2)
            if bucket.level < min(cost + reserve, bucket.depth):
                on_demand = state.resources[None].peaks is not None
                return Throttle(resource.resource_type, "Write", limit, resource.arn, on_demand)
        self._draw(state, charge, draws, now)
        return None

    def force(self, charge: Charge) -> None:
        """Draw `charge` whatever the buckets hold (an MRSC commit a member applies, docs/capacity.md decision 21):
        a bucket it overdraws is in debt, and the requests of the region's own clients wait for the refill."""
        state, now, draws = self._draws(charge)
        self._draw(state, charge, draws, now)

    # ------------------------------------------------------------------------------------------------ batches

    def charge_all(self, charges: list[Charge]) -> list[Throttle | None] | None:
        """All or nothing (a transaction): draw every charge and return None, or draw nothing and return, per
        charge, its throttle or None."""
        planned = [(charge, *self._draws(charge)) for charge in charges]
        throttles = [self._refused(state, charge, draws, now) for charge, state, now, draws in planned]
        if any(throttles):
            for (charge, state, now, _draws), throttle in zip(planned, throttles, strict=True):
                if throttle is not None:
                    self._count_throttle(state, charge.kind, charge.places, throttle, now)
            return throttles
        for charge, state, now, draws in planned:
            self._draw(state, charge, draws, now)
        return None

    def check(self, charge: Charge) -> Throttle | None:
        """The first limit `charge` would hit, or None; draws nothing and counts nothing."""
        state, now, draws = self._draws(charge)
        return self._refused(state, charge, draws, now)

    def _draws(self, charge: Charge) -> tuple[TableThroughput, float, list[tuple]]:
        """(bucket, what it would draw, its resource, the limit it stands for, the partition hash of a partition's
        draw or None) for every bucket `charge` draws from, in the order limits are tried: maxima the user set
        (quick throttles), the table's quota, provisioned capacity, partitions; within each, the table before its
        indexes."""
        now = self.clock.monotonic()
        state = self._state(charge.table, now)
        kind = charge.kind
        resources = state.resources
        first: list[tuple] = []
        provisioned: list[tuple] = []
        parts: list[tuple] = []
        for name, h, units, _pk, _sk in charge.places:
            resource = resources.get(name)
            if resource is None:  # an index dropped since the charge was made
                continue
            bucket = resource.caps.get(kind)
            if bucket is not None:
                first.append((bucket, units, resource, MAX_ON_DEMAND, None))
            bucket = resource.provisioned.get(kind)
            if bucket is not None:
                provisioned.append((bucket, units, resource, PROVISIONED, None))
            parts.append((resource.partition(h), partitions.share(kind, units), resource, KEY_RANGE, h))
        quota = state.quota.get(kind)
        if quota is not None:
            first.append((quota, charge.total, resources[None], ACCOUNT_LIMIT, None))
        return state, now, first + provisioned + parts

    def _refused(self, state: TableThroughput, charge: Charge, draws: list, now: float) -> Throttle | None:
        for bucket, cost, resource, limit, _h in draws:
            if not bucket.admits(cost, now):
                operation = "Read" if charge.kind == "read" else "Write"
                on_demand = state.resources[None].peaks is not None
                return Throttle(resource.resource_type, operation, limit, resource.arn, on_demand)
        return None

    def _draw(self, state: TableThroughput, charge: Charge, draws: list, now: float) -> None:
        for bucket, cost, resource, _limit, h in draws:
            bucket.refill(now)
            bucket.draw(cost)
            if h is not None and bucket.served(h, cost, now):
                resource.split_for_heat(bucket, now)
        kind = charge.kind
        weight = 3.0 if kind == "write" else 1.0
        on_demand = state.resources[None].peaks is not None
        for name, _h, units, pk, sk in charge.places:
            resource = state.resources.get(name)
            if resource is None:
                continue
            resource.consumed[kind] += units
            if resource.insights is not None and pk is not None:
                resource.insights.accessed(pk, sk, units * weight, now)
            peaks = resource.peaks if on_demand else None
            if peaks is not None and peaks[kind].record(now, units, resource.count * _PER_PARTITION[kind]):
                resource.resize(now)  # a new peak splits partitions, 30 minutes on

    def _count_throttle(
        self, state: TableThroughput, kind: str, places, throttle: Throttle, now: float, refused: Resource | None = None
    ) -> None:
        """What CloudWatch counts for a refused charge (capacity-facts §6; docs/capacity.md, decision 16): one
        Read/WriteThrottleEvent on the table and on each GSI the charge would have drawn from, one event of the
        refusing limit's type on the refusing resource, one ThrottleCount for the key on the refusing resource's
        Contributor Insights (so a table write a GSI refused is not blamed on the table's key)."""
        self.throttled.add(state.name)
        if refused is None:
            refused = next(r for r in state.resources.values() if r.arn == throttle.resource)
        seen: set = set()
        for name, _h, _units, pk, sk in places:
            resource = state.resources.get(name)
            if resource is None:
                continue
            if name not in seen:
                seen.add(name)
                resource.events[kind] += 1
            if resource is refused and resource.insights is not None and pk is not None:
                resource.insights.throttled(pk, sk, now)
        key = (kind, throttle.limit)
        refused.reasons[key] = refused.reasons.get(key, 0) + 1

    def take_throttled(self, operation: str) -> None:
        """The request that just ended failed with a throttle: one ThrottledRequests for `operation` on each table
        it was throttled on."""
        for name in self.throttled:
            state = self.tables.get(name)
            if state is not None:
                state.throttled_requests[operation] = state.throttled_requests.get(operation, 0) + 1
        self.throttled.clear()

    # ------------------------------------------------------------------------------------------------- the tables

    def _state(self, name: str, now: float) -> TableThroughput:
        table = self.tables_by_name[name]
        state = self.tables.get(name)
        if state is None or state.table_id != table.table_id:  # a new table, or one deleted and made again
            state = self.tables[name] = TableThroughput(table)
        if state.definition is not table:  # created, or changed by UpdateTable: the new rates apply from now
            self._configure(state, table, now)
        if now - state.sized_at >= SIZE_RECHECK_S:
            self._resize_by_size(state, table, now)
        return state

    def _configure(self, state: TableThroughput, table, now: float) -> None:
        state.definition = table
        on_demand = table.billing_mode == "PAY_PER_REQUEST"
        wanted: dict[str | None, object] = {None: table, **{index.name: index for index in table.gsis}}
        for name in [n for n in state.resources if n not in wanted]:
            del state.resources[name]
        for name, spec in wanted.items():
            resource = state.resources.get(name)
            if resource is None:
                arn = table.arn if name is None else table.index_arn(name)
                has_sort_key = (table.key if name is None else spec.key).range_name is not None
                resource = Resource("Table" if name is None else "Index", arn, name, has_sort_key)
                state.resources[name] = resource
                if self.insights is not None:
                    resource.insights = self.insights.tracker(table.name, name)
            resource.configure(on_demand, spec, now)
        self._forget_lanes(state.name)  # new buckets: looked up again
        if not on_demand:
            state.quota = {}
        elif not state.quota:
            limits = {"read": self.settings.table_max_read_units, "write": self.settings.table_max_write_units}
            state.quota = {kind: Bucket(rate, rate, rate, now) for kind, rate in limits.items()}

    def _resize_by_size(self, state: TableThroughput, table, now: float) -> None:
        state.sized_at = now
        sizes = self.sizes(table)
        for name, resource in state.resources.items():
            resource.size = sizes.get(name, 0)
            resource.resize(now)

    def table_saved(self, table) -> None:
        """A table created or changed (Engine.save_table): its buckets start, or take the new rates, now."""
        self._forget_lanes(table.name)
        if table.status != "DELETING":
            self._state(table.name, self.clock.monotonic())

    def forget(self, name: str) -> None:
        self.tables.pop(name, None)
        self._forget_lanes(name)

    def _forget_lanes(self, name: str) -> None:
        for lanes in self._lanes.values():
            lanes.pop(name, None)

    def _attach_insights(self, name: str) -> None:
        """Contributor Insights changed on table `name`: its resources take the trackers now configured."""
        state = self.tables.get(name)
        if state is None and name in self.tables_by_name:
            state = self._state(name, self.clock.monotonic())
        if state is None:
            return
        for index, resource in state.resources.items():
            resource.insights = self.insights.tracker(name, index)
        self._forget_lanes(name)  # `Lane.plain` changes with the tracker

    def state(self, name: str) -> TableThroughput | None:
        """The table's throughput state (for its metrics), made now if it has none yet; None for a table being
        created or deleted."""
        table = self.tables_by_name.get(name)
        if table is None or table.status in ("CREATING", "DELETING"):
            return self.tables.get(name)
        return self._state(name, self.clock.monotonic())


def model_for(capacity, clock, tables, sizes, insights=None) -> ThroughputModel | None:
    """The engine's model for its `capacity` option: "modelled" (DynamoDB's limits), "unlimited" (no model), or
    CapacitySettings (modelled, with other quotas)."""
    if isinstance(capacity, CapacitySettings):
        return ThroughputModel(clock, tables, sizes, capacity, insights)
    if capacity == MODELLED:
        return ThroughputModel(clock, tables, sizes, insights=insights)
    if capacity == UNLIMITED:
        return None
    raise ValueError(f"capacity must be one of {', '.join(CAPACITY_OPTIONS)}, not {capacity!r}")
