"""The convergence checker: after heal and quiescence, do all replicas hold the same items?

Theory of operation (Dynamo's anti-entropy, flattened): each replica's table is cut into `buckets` key ranges by a
stable hash of the key; each range gets a SHA-256 digest over its items sorted by key, serialised canonically
(orjson, sorted object keys). Replicas are compared range by range; only the ranges whose digests differ are opened
and compared key by key, and those keys are reported with what each region holds. A key whose item is None and a
missing key are the same thing (no item). Pass the history to attach the writes to each differing key as evidence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from ..history import History, Op, key_id
from .result import CheckResult, Finding, ReplicaStates

NAME = "convergence"
DEFAULT_BUCKETS = 64


def bucket_of(key: str, buckets: int) -> int:
    """A stable range number for a key (never Python's salted hash())."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") % buckets


def _canonical(item: Any) -> bytes:
    return orjson.dumps(item, option=orjson.OPT_SORT_KEYS)


def range_digests(items: Mapping[str, Any], buckets: int = DEFAULT_BUCKETS) -> list[str]:
    """The per-range digests of one replica's table (`items`: key_id -> item or None)."""
    ranges: list[list[tuple[str, bytes]]] = [[] for _ in range(buckets)]
    for key, item in items.items():
        if item is not None:
            ranges[bucket_of(key, buckets)].append((key, _canonical(item)))
    digests = []
    for entries in ranges:
        entries.sort()
        digest = hashlib.sha256()
        for key, blob in entries:
            encoded = key.encode()
            # Length-prefixed, so no two different (key, item) sequences can serialise to the same bytes.
            digest.update(len(encoded).to_bytes(4, "big"))
            digest.update(encoded)
            digest.update(len(blob).to_bytes(4, "big"))
            digest.update(blob)
        digests.append(digest.hexdigest())
    return digests


def check_convergence(
    final_states: ReplicaStates,
    *,
    history: History | None = None,
    buckets: int = DEFAULT_BUCKETS,
) -> CheckResult:
    regions = sorted(final_states)
    tables = sorted({table for tables in final_states.values() for table in tables})
    writes_by_key: dict[tuple[str, str], list[Op]] = {}
    if history is not None:
        for op in history.ops:
            if op.is_write:
                writes_by_key.setdefault((op.table, key_id(op.key)), []).append(op)
    offending: list[Finding] = []
    differing_ranges = 0
    for table in tables:
        items_by_region = {region: final_states[region].get(table, {}) for region in regions}
        digests = {region: range_digests(items_by_region[region], buckets) for region in regions}
        for bucket in range(buckets):
            if len({digests[region][bucket] for region in regions}) == 1:
                continue
            differing_ranges += 1
            keys = sorted(
                {
                    key
                    for region in regions
                    for key, item in items_by_region[region].items()
                    if item is not None and bucket_of(key, buckets) == bucket
                }
            )
            for key in keys:
                observed = {region: items_by_region[region].get(key) for region in regions}
                blobs = {region: None if item is None else _canonical(item) for region, item in observed.items()}
                if len(set(blobs.values())) == 1:
                    continue
                missing = [region for region in regions if blobs[region] is None]
                problem = "missing" if missing else "different"
                detail = (
                    f"no item in {', '.join(missing)}" if missing else "regions hold different versions of the item"
                )
                offending.append(
                    Finding(table, key, problem, detail, list(regions), observed, writes_by_key.get((table, key), []))
                )
    if offending:
        detail = (
            f"{len(offending)} keys differ across {len(regions)} regions "
            f"({differing_ranges} of {buckets * len(tables)} ranges)"
        )
    else:
        detail = f"{len(tables)} tables identical in {len(regions)} regions ({buckets} ranges each)"
    return CheckResult(NAME, not offending, detail, offending)
