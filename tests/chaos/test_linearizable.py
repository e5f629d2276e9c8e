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


def wide_search() -> Script:
    """Twelve concurrent writes whose outcome is unknown, then two reads: a search a budget of 5 steps cannot
    finish (though it is linearizable)."""
    s = Script()
    ops = [s.start(p, "put", f"v{p}") for p in range(12)]
    for op in ops:
        s.history.info(op)
    s.get(100, "v3")
    s.get(100, "v5")
    return s


def test_budget_exhausted_is_unknown_never_pass():
    # Many concurrent info writes make the search wide; a budget of a few steps cannot finish it.
    s = wide_search()
    result = s.check(budget=5)
    assert not result.passed and "unknown" in result.detail, result
    assert s.check().passed


# ------------------------------------------------------------------------- verdicts, reductions, CAS, proofs


def test_an_exhausted_search_is_unknown_and_lists_its_keys_even_beside_an_invalid_key():
    s = wide_search()
    unknown = s.check(budget=5)
    assert unknown.verdict == "unknown" and not unknown.passed
    assert unknown.undecided == ["Items[k]"], unknown
    # A second key that is plainly not linearizable: the verdict is invalid, and the open key is still named.
    op = s.history.invoke(200, "r", "put", T, "other", "x")
    s.history.ok(op)
    op = s.history.invoke(201, "r", "get", T, "other")
    s.history.ok(op, value=None)
    both = s.check(budget=5)
    assert both.verdict == "invalid" and both.undecided == ["Items[k]"], both
    assert [finding.key for finding in both.offending] == ["other"]
    assert "Items[k]" in both.detail and "Items[k]" in str(both)


def test_unobserved_in_doubt_writes_are_dropped_before_the_search():
    s = Script()
    # Forty in-doubt writes no read ever returned, all open to the end: today's search tries each at every step.
    ops = [s.start(p, "put", f"lost{p}") for p in range(40)]
    for op in ops:
        s.history.info(op)
    s.put(100, "a")
    s.get(100, "a")
    s.put(100, "b")
    s.get(101, "b")
    result = s.check(budget=2_000)
    assert result.verdict == "valid", result
    assert result.stats["dropped_info_writes"] == 40
    assert result.stats["steps_max"] < 100


def test_an_observed_in_doubt_write_is_closed_at_the_first_read_of_its_value():
    s = Script()
    w = s.start(1, "put", "a")
    s.history.info(w)  # timed out, but a read returned its value: it took effect before that read returned
    s.get(2, "a")
    s.put(3, "b")
    s.get(2, "b")
    result = s.check()
    assert result.passed and result.stats["closed_info_writes"] == 1, result
    # Reading "a" again after "b" was read is still caught.
    s.get(2, "a")
    assert s.check().verdict == "invalid"


def conditional(s, process, f, value, exists, outcome):
    op = s.history.invoke(process, "r", f, T, K, value, condition={"exists": exists})
    if outcome == "ok":
        s.history.ok(op)
    elif outcome == "ccf":
        s.history.fail(op, "ConditionalCheckFailedException")
    else:
        s.history.info(op)


def test_a_conditional_check_failed_is_a_read_that_found_the_condition_false():
    s = Script()
    s.put(1, "a")
    conditional(s, 2, "update", "b", True, "ccf")  # attribute_exists refused though "a" was acknowledged
    result = s.check()
    assert result.verdict == "invalid", result
    assert "ConditionalCheckFailed" in result.offending[0].detail
    s = Script()
    conditional(s, 2, "update", "b", True, "ccf")  # nothing written yet: a correct refusal
    s.put(1, "a")
    conditional(s, 2, "put", "c", False, "ccf")  # attribute_not_exists refused: the item exists, correct
    assert s.check().passed


def test_a_conditional_write_takes_effect_only_where_its_condition_holds():
    s = Script()
    conditional(s, 1, "update", "b", True, "ok")  # attribute_exists on a register that never held an item
    assert s.check().verdict == "invalid"
    s = Script()
    s.put(1, "a")
    conditional(s, 2, "put", "b", False, "ok")  # attribute_not_exists acknowledged though "a" exists
    assert s.check().verdict == "invalid"
    s = Script()
    s.put(1, "a")
    conditional(s, 2, "update", "b", True, "ok")
    s.get(3, "b")
    assert s.check().passed


def test_an_invalid_key_is_explained_by_a_closed_minimal_set_of_operations():
    s = Script()
    for n in range(30):  # plenty of unrelated, linearizable traffic first
        s.put(1, f"x{n}")
        s.get(2, f"x{n}")
    s.put(1, "a")
    s.put(1, "b")
    s.get(2, "a")  # stale: b was acknowledged before this read began
    result = s.check()
    (finding,) = result.offending
    invocations = [op for op in finding.operations if op.type == "invoke"]
    assert [(op.f, op.value) for op in invocations] == [("put", "a"), ("put", "b"), ("get", None)], finding
    assert finding.detail.startswith("no order of these 3 operations is linearizable")
    assert (
        "returned 'a'" in finding.detail and "(1) before (2)" in finding.detail and "(2) before (3)" in finding.detail
    )


def test_in_doubt_writes_conditions_cannot_see_are_dropped_on_a_key_nothing_deletes():
    s = Script()
    s.put(1, "a")  # acknowledged: from here on the item exists, whatever else takes effect
    in_doubt = [s.start(p, "put", f"lost{p}") for p in range(40)]
    for op in in_doubt:
        s.history.info(op)
    conditional(s, 2, "update", "b", True, "ok")
    s.get(3, "b")
    result = s.check(budget=5_000)
    assert result.verdict == "valid" and result.stats["dropped_info_writes"] == 40, result
    # A delete anywhere on the key keeps them: existence could then depend on them.
    s.history.ok(s.start(4, "delete"))
    assert s.check(budget=5_000).stats["dropped_info_writes"] == 0
    s = Script()
    s.put(1, "a")
    s.history.ok(s.start(2, "delete"))
    s.history.info(s.start(3, "put", "unread"))  # only this write can make the item exist again ...
    conditional(s, 4, "update", "b", True, "ok")  # ... for this attribute_exists write to succeed
    assert s.check().passed and s.check(reductions=False).passed


def test_the_reductions_never_change_a_verdict():
    """Seeded small histories of puts, conditional writes, deletes and reads with every kind of outcome: the reduced
    search and the search of the history as recorded agree on each, and both kinds of verdict occur."""
    import random

    verdicts, disagreements = [], []
    for seed in range(1500):
        rng = random.Random(seed)
        s = Script()
        pending: list = []
        invoked: list[str] = []
        for process in range(rng.randint(3, 9)):
            kind = rng.choice(["put", "put", "update", "delete", "get", "get"])
            if kind == "get":
                pending.append((s.start(process, "get"), kind))
            elif kind == "delete":
                pending.append((s.start(process, "delete"), kind))
            else:
                condition = {"exists": rng.random() < 0.7} if kind == "update" else None
                value = f"v{process}"
                invoked.append(value)
                pending.append((s.history.invoke(process, "r", kind, T, K, value, condition=condition), kind))
            while pending and rng.random() < 0.6:  # complete some, in any order
                op, done_kind = pending.pop(rng.randrange(len(pending)))
                if done_kind == "get":
                    s.history.ok(op, value=rng.choice([None, "never", *invoked]))
                    continue
                outcome = rng.choice(["ok", "ok", "info", "ccf"] if op.condition else ["ok", "ok", "info"])
                if outcome == "ok":
                    s.history.ok(op)
                elif outcome == "ccf":
                    s.history.fail(op, "ConditionalCheckFailedException")
                else:
                    s.history.info(op)
        for op, _ in pending:
            s.history.info(op)
        reduced, recorded = s.check(budget=200_000), s.check(budget=200_000, reductions=False)
        assert "unknown" not in (reduced.verdict, recorded.verdict)
        verdicts.append(recorded.verdict)
        if reduced.verdict != recorded.verdict:
            disagreements.append(seed)
    assert not disagreements
    assert {"valid", "invalid"} <= set(verdicts)


# ------------------------------------------------------------------- pruning the search (rule 8): contended keys


def contended(seed: int, *, plant=None, at: float = 0.5, clients: int = 24, rounds: int = 12) -> Script:
    """A register under MRSC-like contention, as its clients record it: each client's operations one after another,
    each taking effect at a random point within its span; strong reads are long (they wait for a quorum) and return
    what the register held at their point; half the writes are refused at once (RWCE) and many reads time out.
    Linearizable by construction, unless `plant(script)` adds operations when a fraction `at` of the timeline is
    recorded."""
    import random

    rng = random.Random(seed)
    spans = []  # (point, n, kind, start, end, process)
    n = 0
    for process in range(clients):
        t = rng.uniform(0, 5)
        for _ in range(rounds):
            n += 1
            if rng.random() < 0.3:
                kind, span = "get", rng.uniform(20, 80)
            else:
                kind, span = ("refused" if rng.random() < 0.5 else "put"), rng.uniform(5, 20)
            spans.append((rng.uniform(t, t + span), n, kind, t, t + span, process))
            t += span + rng.uniform(0, 1)
    register, read = None, {}
    for _point, n, kind, *_ in sorted(spans):
        if kind == "put":
            register = f"w{n}"
        elif kind == "get":
            read[n] = register
    timeline = sorted(
        [(start, 1, n, kind, process) for _p, n, kind, start, _e, process in spans]
        + [(end, 0, n, kind, process) for _p, n, kind, _s, end, process in spans]
    )
    s, started = Script(), {}
    for index, (_time, is_call, n, kind, process) in enumerate(timeline):
        if plant is not None and index == int(at * (len(timeline) - 1)):
            plant(s)
        if is_call:
            started[n] = s.start(process, "get") if kind == "get" else s.start(process, "put", f"w{n}")
        elif kind == "get":
            if rng.random() < 0.4:
                s.history.info(started[n], "InternalServerError")
            else:
                s.history.ok(started[n], value=read[n])
        elif kind == "refused":
            s.history.fail(started[n], "ReplicatedWriteConflictException")
        else:
            s.history.ok(started[n])
    return s


def test_a_contended_key_is_decided_only_with_the_pruning():
    # Seed 0: the search as recorded runs out of 2,000,000 steps; pruned, it decides in a few thousand.
    s = contended(0)
    as_recorded = s.check(budget=2_000_000, reductions=False)
    assert as_recorded.verdict == "unknown", as_recorded
    pruned = s.check(budget=20_000)
    assert pruned.verdict == "valid" and pruned.stats["steps_max"] < 20_000, pruned


def test_the_pruning_decides_contended_keys_in_few_steps():
    for seed in range(1, 8):
        result = contended(seed).check(budget=20_000)
        assert result.verdict == "valid", (seed, result)


PLANTED = {
    # an acknowledged write, then (after it returned) a read of the value it overwrote
    "stale read after an acknowledged write": lambda s: (s.put(900, "old"), s.put(900, "new"), s.get(901, "old")),
    "read of a value never written": lambda s: s.get(901, "never-written"),
    "read of a refused (RWCE) write's value": lambda s: (
        s.history.fail(s.start(900, "put", "refused-value"), "ReplicatedWriteConflictException"),
        s.get(901, "refused-value"),
    ),
}


def test_planted_violations_in_contended_traffic_are_still_found():
    # Each one in the middle of the traffic, overlapping its long reads and racing writes, and once near its end.
    for name, plant in PLANTED.items():
        for seed in (0, 3):
            for at in (0.5, 1.0):
                result = contended(seed, plant=plant, at=at).check(budget=200_000)
                assert result.verdict == "invalid", (name, seed, at, result)
                # The proof names the planted read (process 901), not some of the honest traffic.
                assert any(op.process == 901 for f in result.offending for op in f.operations), (name, result)


def brute_force(history: History) -> bool:
    """Whether some order of the history's operations on one register is linearizable, by trying every order (with
    memo): the definition, written apart from the checker. ok writes and refusals (ConditionalCheckFailed) must be
    placed between invocation and completion; in-doubt writes anywhere after their invocation, or never; other
    failed writes never; only ok `get`s are reads."""
    import json

    inf = float("inf")
    ops = []  # (call, ret, kind, value, condition, must)
    for invoke, done in history.pairs():
        if invoke.f == "get":
            if done is not None and done.type == "ok":
                ops.append((invoke.index, done.index, "read", json.dumps(done.value), None, True))
            continue
        value = json.dumps(None if invoke.f == "delete" else invoke.value)
        if done is not None and done.type == "fail":
            if done.error == "ConditionalCheckFailedException" and invoke.condition is not None:
                ops.append((invoke.index, done.index, "refusal", None, invoke.condition["exists"], True))
            continue
        condition = None if invoke.condition is None else invoke.condition["exists"]
        ok = done is not None and done.type == "ok"
        ops.append((invoke.index, done.index if ok else inf, "write", value, condition, ok))
    seen = set()

    def place(left: frozenset, state: str) -> bool:
        if all(not ops[i][5] for i in left):
            return True
        if (left, state) in seen:
            return False
        seen.add((left, state))
        deadline = min(ops[i][1] for i in left)  # the first completion of an operation not yet placed
        for i in left:
            call, _ret, kind, value, condition, _must = ops[i]
            if call > deadline:
                continue  # it began after another one still to be placed had ended
            exists = state != "null"
            if kind == "read" and value == state and place(left - {i}, state):
                return True
            if kind == "refusal" and condition != exists and place(left - {i}, state):
                return True
            if kind == "write" and (condition is None or condition == exists) and place(left - {i}, value):
                return True
        return False

    return place(frozenset(range(len(ops))), "null")


def test_the_pruned_search_agrees_with_trying_every_order():
    """Seeded small histories with long reads, repeated values, deletes, conditional writes and every outcome
    (acknowledged, refused with RWCE or ConditionalCheckFailed, in doubt, reads timing out): the pruned checker's
    verdict is the definition's on each, and both verdicts occur often."""
    import random

    verdicts, disagreements = {"valid": 0, "invalid": 0}, []
    for seed in range(3000):
        rng = random.Random(seed)
        s = Script()
        values = [f"v{n}" for n in range(rng.randint(2, 5))]  # few values: writes of one value are common
        pending: list = []
        deletes = rng.random() < 0.3
        for process in range(rng.randint(3, 9)):
            kind = rng.choice(["put", "put", "update", "get", "get", "get"] + (["delete"] if deletes else []))
            if kind == "get":
                pending.append(s.start(process, "get"))
            elif kind == "delete":
                pending.append(s.start(process, "delete"))
            else:
                condition = {"exists": rng.random() < 0.7} if kind == "update" and rng.random() < 0.5 else None
                pending.append(s.history.invoke(process, "r", kind, T, K, rng.choice(values), condition=condition))
            while pending and rng.random() < 0.5:  # complete some, in any order: reads stay open long
                op = pending.pop(rng.randrange(len(pending)))
                if op.f == "get":
                    if rng.random() < 0.2:
                        s.history.info(op, "InternalServerError")
                    else:
                        s.history.ok(op, value=rng.choice([None, "never", *values]))
                    continue
                outcome = rng.choice(["ok", "ok", "ok", "info", "rwce"] + (["ccf"] if op.condition else []))
                if outcome == "ok":
                    s.history.ok(op)
                elif outcome == "ccf":
                    s.history.fail(op, "ConditionalCheckFailedException")
                elif outcome == "rwce":
                    s.history.fail(op, "ReplicatedWriteConflictException")
                else:
                    s.history.info(op)
        for op in pending:
            s.history.info(op)
        result = s.check(budget=200_000, explain=False)
        assert result.verdict != "unknown", (seed, result)
        verdicts[result.verdict] += 1
        if (result.verdict == "valid") != brute_force(s.history):
            disagreements.append(seed)
    assert not disagreements, disagreements
    assert min(verdicts.values()) > 300, verdicts
