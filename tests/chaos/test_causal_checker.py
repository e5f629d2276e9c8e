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
