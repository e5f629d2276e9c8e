"""The staleness checker measures how far behind eventually consistent reads were, and fails when asked to bound it:
on a read that missed acknowledged writes for longer than the bound, and on a read of a value nobody wrote."""

from __future__ import annotations

from globaltables.chaos.checkers.staleness import check_staleness
from globaltables.chaos.history import History


def version(physical: int, region: str) -> str:
    return f"{physical:016d}.{0:06d}/{region}"


def history_with_a_stale_read(read_value: str) -> History:
    history = History()
    first = history.invoke(1, "us-east-1", "put", "T", "k", "v1", mono=0.0)
    history.ok(first, version=version(1000, "us-east-1"), mono=0.010)
    second = history.invoke(1, "us-east-1", "put", "T", "k", "v2", mono=0.020)
    history.ok(second, version=version(1020, "us-east-1"), mono=0.030)
    # eu-west-1 reads 0.5 s after v2 was acknowledged
    read = history.invoke(2, "eu-west-1", "get", "T", "k", mono=0.530)
    history.ok(read, value=read_value, mono=0.531)
    return history


def test_a_read_of_the_latest_value_is_not_stale():
    result, stats = check_staleness(history_with_a_stale_read("v2"), max_ms=100)
    assert result.passed
    assert stats["eu-west-1"]["stale_reads"] == 0 and stats["eu-west-1"]["max_versions"] == 0


def test_a_read_that_missed_a_write_for_too_long_fails_and_names_the_key():
    result, stats = check_staleness(history_with_a_stale_read("v1"), max_ms=100)
    assert not result.passed
    assert stats["eu-west-1"]["max_versions"] == 1
    assert abs(stats["eu-west-1"]["max_ms"] - 500.0) < 1e-6  # from v2's acknowledgement to the read
    (finding,) = result.offending
    assert finding.problem == "too-stale" and finding.key == "k"
    # Without a bound the checker only measures.
    assert check_staleness(history_with_a_stale_read("v1"))[0].passed


def test_a_read_of_a_value_never_written_fails():
    result, _ = check_staleness(history_with_a_stale_read("v-never"))
    assert not result.passed
    assert [f.problem for f in result.offending] == ["unknown-value"]
