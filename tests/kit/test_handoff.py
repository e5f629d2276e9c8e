"""The deterministic hand-off behind simulated `concurrently` (testing/handoff.py), on a toy "simulation": a queue of
events, each waking a parked caller. No boto3, no cluster: just the rules of the baton."""

from __future__ import annotations

import threading
import time
from collections import deque

import pytest

from globaltables.testing.handoff import Conductor, Released

pytestmark = pytest.mark.timeout(60)


class Toy:
    """Events are callables run one per step; `wait(label)` parks the calling caller until its event ran."""

    def __init__(self) -> None:
        self.events: deque = deque()
        self.log: list[str] = []
        self.conductor = Conductor(self.step)
        self.running = 0
        self.most_running = 0
        self._count = threading.Lock()

    def step(self) -> bool:
        if not self.events:
            return False
        self.events.popleft()()
        return True

    def wait(self, label: str) -> None:
        caller = self.conductor.caller()
        self.events.append(lambda: (self.log.append(f"event {label}"), self.conductor.wake(caller)))
        self.leave()
        self.conductor.park()
        self.enter()

    def enter(self) -> None:
        with self._count:
            self.running += 1
            self.most_running = max(self.most_running, self.running)

    def leave(self) -> None:
        with self._count:
            self.running -= 1

    def call(self, name: str, waits: int, nap: float = 0.0):
        def run() -> str:
            self.enter()
            try:
                for n in range(waits):
                    self.log.append(f"{name} submits {n}")
                    time.sleep(nap)  # real time spent outside the simulation: must change nothing
                    self.wait(f"{name}.{n}")
                    self.log.append(f"{name} resumes {n}")
                return name
            finally:
                self.leave()

        return run


def test_callers_start_in_the_given_order_and_resume_in_the_order_their_waits_end():
    toy = Toy()
    results = toy.conductor.run([toy.call("a", 2), toy.call("b", 1), toy.call("c", 0)], order=[2, 0, 1])
    assert results == ["a", "b", "c"]  # in the order of the calls, whatever order they ran in
    assert toy.log == [
        "a submits 0", "b submits 0",  # c ran first and returned at once; a and b started and parked
        "event a.0", "a resumes 0", "a submits 1",  # a's wait ended first: it runs, alone, until it parks again
        "event b.0", "b resumes 0",
        "event a.1", "a resumes 1",
    ]  # fmt: skip


def test_only_one_thread_runs_at_a_time_and_real_time_changes_nothing():
    logs = []
    for nap in (0.0, 0.002, 0.0):
        toy = Toy()
        calls = [toy.call(name, 3, nap=nap * (i + 1)) for i, name in enumerate("pqrs")]
        assert toy.conductor.run(calls, order=[1, 3, 0, 2]) == list("pqrs")
        assert toy.most_running == 1
        logs.append(toy.log)
    assert logs[0] == logs[1] == logs[2]


def test_an_exception_is_the_result_of_its_call_and_other_calls_go_on():
    toy = Toy()

    def failing():
        toy.wait("f")
        raise KeyError("boom")

    results = toy.conductor.run([failing, toy.call("ok", 1)], order=[0, 1])
    assert isinstance(results[0], KeyError) and results[1] == "ok"


def test_a_base_exception_is_raised_again_once_every_call_has_ended():
    toy = Toy()

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        toy.conductor.run([interrupted, toy.call("ok", 2)], order=[0, 1])
    assert toy.log[-1] == "ok resumes 1"  # the other call still ran to its end


def test_a_deadlock_fails_the_run_and_releases_the_parked_callers():
    toy = Toy()
    released: list[BaseException] = []

    def stuck():
        try:
            toy.conductor.park()  # nobody will ever wake it, and nothing is scheduled
        except BaseException as error:
            released.append(error)
            raise

    with pytest.raises(RuntimeError, match=r"concurrent calls \[0\] wait for the simulation"):
        toy.conductor.run([stuck], order=[0])
    assert len(released) == 1 and isinstance(released[0], Released)
    assert not any(t.name.startswith("globaltables-concurrently") for t in threading.enumerate() if t.is_alive())


def test_concurrently_cannot_nest_and_park_is_for_callers_only():
    toy = Toy()
    results = toy.conductor.run([lambda: toy.conductor.run([lambda: 1], order=[0])], order=[0])
    assert isinstance(results[0], RuntimeError)
    with pytest.raises(RuntimeError, match="park"):
        toy.conductor.park()
