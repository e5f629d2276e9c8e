"""The per-key linearizability checker: passes honest histories, fails hand-written bad ones, and says unknown (never
pass) when its search budget runs out."""

from __future__ import annotations

from globaltables.chaos.checkers import linearizable
from globaltables.chaos.history import History

T, K = "Items", "k"


class Script:
    """Write histories by hand: `start` returns the invocation, `ok`/`info`/`fail` complete it."""

    def __init__(self) -> None:
        self.history = History()

    def start(self, process, f, value=None):
        return self.history.invoke(process, "r", f, T, K, value)

    def put(self, process, value):
        op = self.start(process, "put", value)
        self.history.ok(op)

    def get(self, process, value):
        op = self.start(process, "get")
        self.history.ok(op, value=value)

    def check(self, **kwargs):
        return linearizable.check(self.history, **kwargs)


def test_sequential_history_passes():
    s = Script()
    s.get(1, None)
    s.put(1, "a")
    s.get(2, "a")
    s.put(2, "b")
    s.get(1, "b")
    op = s.start(1, "delete")
    s.history.ok(op)
    s.get(2, None)
    result = s.check()
    assert result.passed, result


def test_stale_read_after_ack_fails():
    s = Script()
    s.put(1, "a")
    s.put(1, "b")
    s.get(2, "a")  # b was acknowledged before this read began
    result = s.check()
    assert not result.passed and result.offending, result


def test_lost_write_fails():
    s = Script()
    s.put(1, "a")
    s.get(2, None)  # the acknowledged write vanished
    assert not s.check().passed


def test_read_of_a_value_never_written_fails():
    s = Script()
    s.put(1, "a")
    s.get(2, "zzz")
    assert not s.check().passed


def test_read_flapping_between_values_fails():
    s = Script()
    w1 = s.start(1, "put", "a")
    w2 = s.start(2, "put", "b")
    s.get(3, "a")
    s.get(3, "b")
    s.get(3, "a")  # once b followed a, a cannot come back without a new write
    s.history.ok(w1)
    s.history.ok(w2)
    assert not s.check().passed


def test_concurrent_writes_may_be_ordered_either_way():
    s = Script()
    w1 = s.start(1, "put", "a")
    w2 = s.start(2, "put", "b")
    s.get(3, "b")
    s.get(3, "a")
    s.history.ok(w1)
    s.history.ok(w2)
    assert s.check().passed


def test_info_write_may_or_may_not_have_taken_effect():
    s = Script()
    s.put(1, "a")
    maybe = s.start(2, "put", "b")
    s.history.info(maybe, "InternalServerError")
    s.get(3, "a")
    assert s.check().passed  # not applied (yet)
    s.get(3, "b")
    assert s.check().passed  # applied late
    s.get(3, "a")
    assert not s.check().passed  # but not undone


def test_failed_write_never_took_effect():
    s = Script()
    op = s.start(1, "put", "a")
    s.history.fail(op, "ReplicatedWriteConflictException")
    s.get(2, "a")
    assert not s.check().passed


def test_eventual_reads_are_not_checked():
    s = Script()
    s.put(1, "a")
    op = s.history.invoke(2, "r", "get-eventual", T, K)
    s.history.ok(op, value=None)
    assert s.check().passed


def test_budget_exhausted_is_unknown_never_pass():
    s = Script()
    # Many concurrent info writes make the search wide; a budget of a few steps cannot finish it.
    ops = [s.start(p, "put", f"v{p}") for p in range(12)]
    for op in ops:
        s.history.info(op)
    s.get(100, "v3")
    s.get(100, "v5")
    result = s.check(budget=5)
    assert not result.passed and "unknown" in result.detail, result
    assert s.check().passed
