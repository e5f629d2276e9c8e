"""DescribeLimits: the default capacity quotas of an account in a Region.

globaltables does not throttle (throughput limits are out of scope), so these are reported, not enforced.
"""

from __future__ import annotations

ACCOUNT_MAX_CAPACITY_UNITS = 80_000
TABLE_MAX_CAPACITY_UNITS = 40_000


def handle(engine, request: dict) -> dict:
    return {
        "AccountMaxReadCapacityUnits": ACCOUNT_MAX_CAPACITY_UNITS,
        "AccountMaxWriteCapacityUnits": ACCOUNT_MAX_CAPACITY_UNITS,
        "TableMaxReadCapacityUnits": TABLE_MAX_CAPACITY_UNITS,
        "TableMaxWriteCapacityUnits": TABLE_MAX_CAPACITY_UNITS,
    }
