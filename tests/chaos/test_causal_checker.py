"""The causal checker on hand-made histories: what counts as a causally later write. A run's real histories hold
deletes of items already deleted, which write nothing and answer with the tombstone's version (seen in a signed
two-region run: two deletes of one key at one region, 25 ms apart, with the same version)."""

from __future__ import annotations

from globaltables.chaos.checkers.causal import check_causal
from globaltables.chaos.history import History

KEY = {"pk": {"S": "k"}}
VERSION = "M1796127261431.A0/eu-west-1"


def two_ops_at_one_region(second: str, second_version: str) -> History:
    history = History()
    first = history.invoke("p1", "eu-west-1", "delete", "Orders", KEY)
    history.ok(first, version=VERSION)
    later = history.invoke("p1", "eu-west-1", second, "Orders", KEY, None if second == "delete" else "v2")
    history.ok(later, version=second_version)
    return history


def test_a_delete_of_an_item_already_deleted_orders_nothing():
    result = check_causal(two_ops_at_one_region("delete", VERSION), {})
    assert result.passed, str(result)
    assert result.detail == "0 causally ordered write pairs all in version order"


def test_a_later_delete_with_a_newer_version_is_an_ordered_pair():
    result = check_causal(two_ops_at_one_region("delete", "M1796127261460.A0/eu-west-1"), {})
    assert result.passed and result.detail == "1 causally ordered write pairs all in version order"


def test_a_later_put_that_repeats_the_version_it_follows_is_a_violation():
    # Only a delete may answer with the version it found; a put that does wrote over the item without a new stamp.
    result = check_causal(two_ops_at_one_region("put", VERSION), {})
    assert not result.passed
    assert result.offending_keys() == [("Orders", '{"pk":{"S":"k"}}')]


def test_a_later_delete_with_an_older_version_is_a_violation():
    result = check_causal(two_ops_at_one_region("delete", "M1796127261400.A0/eu-west-1"), {})
    assert not result.passed


def _pairs_by_brute_force(history: History) -> tuple[int, list[tuple[int, int, list[int]]]]:
    """The definition, pair by pair: (ordered pairs, [(first's ack index, second's ack index, proof's indices)])."""
    from globaltables.chaos.checkers.lww import canonical_value, parse_version

    writes, reads = {}, {}
    for invocation, completion in history.pairs():
        if completion is None or completion.type != "ok":
            continue
        if invocation.is_write and completion.version is not None:
            writes.setdefault(invocation.table, []).append((invocation, completion))
        elif invocation.f == "get":
            reads.setdefault(invocation.table, []).append((invocation, completion))
    pairs, violations = 0, []
    for table, key_writes in sorted(writes.items()):
        for first_inv, first in key_writes:
            for second_inv, second in key_writes:
                if second is first:
                    continue
                proof = []
                if not (first.region == second_inv.region and first.index < second_inv.index):
                    found = [read for _, read in reads.get(table, []) if read.region == second_inv.region
                             and first_inv.value is not None
                             and canonical_value(read.value) == canonical_value(first_inv.value)
                             and read.index < second_inv.index]  # fmt: skip
                    if not found:
                        continue
                    proof = [found[0].index]
                if second_inv.is_delete and second.version == first.version:
                    continue
                pairs += 1
                if not parse_version(second.version) > parse_version(first.version):
                    violations.append((first.index, second.index, proof))
    return pairs, violations


def test_the_sweep_finds_exactly_the_pairs_of_the_definition():
    """Seeded histories over three regions: concurrent puts and deletes with versions that sometimes go backwards,
    reads of earlier values (and of deleted items) at any region, on two keys (tables stand in for keys here)."""
    import random

    regions = ["us-east-1", "eu-west-1", "ap-southeast-1"]
    found_violations = found_pairs = 0
    for seed in range(300):
        rng = random.Random(seed)
        history, open_ops, written, stamped, clock = History(), [], {}, {}, 1_796_000_000_000
        for step in range(rng.randint(4, 30)):
            if open_ops and rng.random() < 0.55:
                op = open_ops.pop(rng.randrange(len(open_ops)))
                if op.f == "get":
                    choices = written.get(op.table, []) + [None]
                    history.ok(op, value=rng.choice(choices))
                else:
                    clock += rng.randint(-3, 10)  # a skewed region stamps below what it follows
                    version = f"M{clock}.A0/{op.region}"
                    if op.f == "delete" and stamped.get(op.table) and rng.random() < 0.3:
                        version = stamped[op.table][-1]  # a delete that found the tombstone answers its version
                    stamped.setdefault(op.table, []).append(version)
                    history.ok(op, version=version)
                continue
            table = rng.choice(["A", "B"])
            region = rng.choice(regions)
            kind = rng.choice(["put", "put", "delete", "get", "get"])
            value = f"v{seed}-{step}" if kind == "put" else None
            op = history.invoke(f"{region}/{step}", region, kind, table, KEY, value)
            if value is not None:
                written.setdefault(table, []).append(value)
            open_ops.append(op)
        expected_pairs, expected = _pairs_by_brute_force(history)
        result = check_causal(history, {})
        got = [(f.operations[1].index, f.operations[-1].index, [op.index for op in f.operations[2:-2]])
               for f in result.offending]  # fmt: skip
        assert got == expected, seed
        assert result.detail.startswith(f"{len(expected)} of {expected_pairs} ") or (
            not expected and result.detail == f"{expected_pairs} causally ordered write pairs all in version order"
        ), (seed, result.detail)
        found_violations += len(expected)
        found_pairs += expected_pairs
    assert found_violations > 20 and found_pairs > 300  # the histories exercise both outcomes
