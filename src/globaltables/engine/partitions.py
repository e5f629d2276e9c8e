"""How many partitions a table or global secondary index has, and which one holds a partition key.

- A partition serves at most 3,000 read units and 1,000 write units per second, or a linear combination of both
  (r/3000 + w/1000 <= 1), and holds at most 10 GB (capacity-facts §2).
- Count (docs/capacity.md, decision 2): provisioned, max(ceil(RCU/3000 + WCU/1000), ceil(size/10 GB), 1); on demand,
  enough partitions to serve twice the previous peak, max(ceil(2 peak_r/3000), ceil(2 peak_w/1000), ceil(size/10 GB)),
  which for a new table (previous peak 6,000 RRU / 2,000 WRU) is 4. Partitions are split, never merged: a count
  never goes down.
- Placement: a partition is a contiguous range of the 32-bit partition hash (storage/records.py `partition_hash`,
  a stable blake2b digest of the encoded partition key, the same for every process); partition i of n holds the
  hashes [i * 2^32 / n, (i + 1) * 2^32 / n). Doubling the count splits every partition in two.
- Split for heat (decision 4): a partition whose served throughput stays at or above HEAT_SHARE of its limit for
  HEAT_SPLIT_S seconds in a row is cut in two at a hash chosen from the keys it served meanwhile (`heat_cut`), so the
  ranges stop being equal: a resource then keeps its partitions' first hashes (`starts`) and places a hash by
  bisection. A cut always falls between two partition hashes: one partition key's item collection never spans two
  partitions, so a single hot key, a hot collection written with increasing sort keys, and any collection of a
  table with a local secondary index gain nothing from a split.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from .storage.records import HASH_SPACE

PARTITION_READ_UNITS = 3000.0
PARTITION_WRITE_UNITS = 1000.0
PARTITION_BYTES = 10 * 1024**3

HEAT_SHARE = 0.8  # a second in which a partition served 80 % of its throughput is a hot second
HEAT_SPLIT_S = 120  # hot seconds in a row before a partition splits: "in the order of minutes"
HEAT_KEYS = 512  # distinct partition hashes a hot partition remembers the load of (the first seen in its streak)


def provisioned_count(read_units: float, write_units: float, size_bytes: int) -> int:
    by_throughput = math.ceil(read_units / PARTITION_READ_UNITS + write_units / PARTITION_WRITE_UNITS)
    return max(1, by_throughput, math.ceil(size_bytes / PARTITION_BYTES))


def on_demand_count(peak_read: float, peak_write: float, size_bytes: int) -> int:
    by_peak = max(math.ceil(2 * peak_read / PARTITION_READ_UNITS), math.ceil(2 * peak_write / PARTITION_WRITE_UNITS))
    return max(1, by_peak, math.ceil(size_bytes / PARTITION_BYTES))


def partition_of(h: int, count: int) -> int:
    """The partition (0 .. count-1) holding partition hash `h`."""
    return h * count // HASH_SPACE


def uniform_starts(count: int) -> list[int]:
    """The first hash of each of `count` equal partitions (partition_of's ranges)."""
    return [-(-i * HASH_SPACE // count) for i in range(count)]


def place(h: int, count: int, starts: list[int] | None) -> int:
    """The partition holding hash `h`: by arithmetic while the ranges are equal (`starts` None), else by bisection."""
    return h * count >> 32 if starts is None else bisect_right(starts, h) - 1


def heat_cut(load: dict[int, float]) -> int | None:
    """Where to split a hot partition, from the load its keys drew during the streak (partition hash -> share): the
    cut between two neighbouring hashes that leaves the two halves' loads closest to equal (the lower cut on a tie),
    placed half-way between them so keys not seen spread over both. None when the load is on one hash: one item,
    or one item collection, carries the heat and a split would not serve it faster."""
    if len(load) < 2:
        return None
    hashes = sorted(load)
    total = sum(load.values())
    left = 0.0
    best: tuple[float, int] | None = None
    for j in range(1, len(hashes)):
        left += load[hashes[j - 1]]
        imbalance = abs(2 * left - total)
        if best is None or imbalance < best[0]:
            best = (imbalance, j)
    j = best[1]
    return (hashes[j - 1] + hashes[j]) // 2 + 1


def share(kind: str, units: float) -> float:
    """The fraction of one partition's one-second throughput that `units` of `kind` ("read"/"write") use."""
    return units / (PARTITION_READ_UNITS if kind == "read" else PARTITION_WRITE_UNITS)
