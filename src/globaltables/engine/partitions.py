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
"""

from __future__ import annotations

import math

from .storage.records import HASH_SPACE

PARTITION_READ_UNITS = 3000.0
PARTITION_WRITE_UNITS = 1000.0
PARTITION_BYTES = 10 * 1024**3


def provisioned_count(read_units: float, write_units: float, size_bytes: int) -> int:
    by_throughput = math.ceil(read_units / PARTITION_READ_UNITS + write_units / PARTITION_WRITE_UNITS)
    return max(1, by_throughput, math.ceil(size_bytes / PARTITION_BYTES))


def on_demand_count(peak_read: float, peak_write: float, size_bytes: int) -> int:
    by_peak = max(math.ceil(2 * peak_read / PARTITION_READ_UNITS), math.ceil(2 * peak_write / PARTITION_WRITE_UNITS))
    return max(1, by_peak, math.ceil(size_bytes / PARTITION_BYTES))


def partition_of(h: int, count: int) -> int:
    """The partition (0 .. count-1) holding partition hash `h`."""
    return h * count // HASH_SPACE


def share(kind: str, units: float) -> float:
    """The fraction of one partition's one-second throughput that `units` of `kind` ("read"/"write") use."""
    return units / (PARTITION_READ_UNITS if kind == "read" else PARTITION_WRITE_UNITS)
