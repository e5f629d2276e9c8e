"""Deterministic hand-off between a test's concurrent calls and the simulator (`concurrently` in simulated mode).

A boto3 call is synchronous, and in strong mode a write takes virtual time: it waits for another member. So that
two calls can both be in flight at one virtual instant, each runs in a thread of its own ("a caller"); so that the
run stays a pure function of the seed, the threads never run at the same time.

Rules
1. One baton. Exactly one thread runs at a time: the conductor (the thread that called `run`) or one caller. A
   thread runs only when it was handed the baton, and the thread that handed it blocks until it comes back. So the
   simulator is touched by one thread at a time, and the order of everything the threads do is decided by the
   hand-offs alone, never by the operating system's scheduling of threads.
2. Start. The callers start in the order given (drawn from the seed by the harness) at the same virtual instant;
   each runs until it parks or returns. A caller parks (`park`) when it waits for the simulator: its request has
   been submitted and awaits its answer, or it lets virtual time pass. Whoever ends the wait calls `wake(caller)`.
3. Run. Then the conductor resumes woken callers one at a time, in the order they were woken, each until it parks
   or returns again; when none is woken it advances the simulation by one step (`step()`, the harness's: resume a
   request whose node operations have completed, else run the next event). It stops when every caller returned.
4. Bounded. A caller that does not hand the baton back within HANDOFF_TIMEOUT_S of real time (blocked on something
   outside the simulator) fails the run instead of hanging it; a simulation with parked callers and nothing left to
   run is a deadlock and fails too. Callers still parked when the run fails are released with `Released` (a
   BaseException, so no `except Exception` in test code swallows it) and the threads end.
A call's result is its return value, or the Exception it raised (as in process mode); anything else it raises
(e.g. pytest's `fail`) is raised again in the conductor once every caller has ended.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

HANDOFF_TIMEOUT_S = 120.0


class Released(BaseException):  # not an error of the call: the run it belonged to was abandoned
    """Raised in a parked caller whose run was abandoned (the conductor failed)."""


class Caller:
    """One concurrent call, on its own thread."""

    def __init__(self, conductor: Conductor, call: Callable[[], Any], index: int) -> None:
        self.conductor = conductor
        self.call = call
        self.index = index
        self.result: Any = None
        self.started = False
        self.finished = False
        self._go = threading.Event()
        self.thread = threading.Thread(target=self._main, name=f"globaltables-concurrently-{index}", daemon=True)

    def _main(self) -> None:
        conductor = self.conductor
        conductor._local.caller = self
        try:
            self.result = self.call()
        except BaseException as error:  # noqa: BLE001 - handed to the conductor (rule 4)
            self.result = error
        finally:
            self.finished = True
            conductor._back.set()

    def __repr__(self) -> str:
        state = "finished" if self.finished else "started" if self.started else "new"
        return f"Caller({self.index}, {state})"


class Conductor:
    """Runs calls as callers (module docstring). `step()` advances the simulation by one step and says whether it
    did anything."""

    def __init__(self, step: Callable[[], bool]) -> None:
        self._step = step
        self._local = threading.local()
        self._back = threading.Event()
        self._woken: deque[Caller] = deque()
        self._abandoned = False

    def caller(self) -> Caller | None:
        """The caller running on this thread; None on any other thread (the conductor's, or outside a run)."""
        return getattr(self._local, "caller", None)

    # ---------------------------------------------------------------------------------------- the conductor

    def run(self, calls: Sequence[Callable[[], Any]], order: Sequence[int]) -> list[Any]:
        """Run every call (rules 2 and 3), starting them in `order` (indexes into `calls`); their results in the
        order of `calls`."""
        if self.caller() is not None:
            raise RuntimeError("concurrently() cannot run inside a call that runs concurrently")
        callers = [Caller(self, call, index) for index, call in enumerate(calls)]
        self._woken.clear()
        self._abandoned = False
        try:
            for index in order:
                self._hand(callers[index])
            while not all(caller.finished for caller in callers):
                if self._woken:
                    self._hand(self._woken.popleft())
                elif not self._step():
                    waiting = [caller.index for caller in callers if not caller.finished]
                    raise RuntimeError(
                        f"concurrent calls {waiting} wait for the simulation, but nothing is left to run in it"
                    )
        finally:
            self._release([caller for caller in callers if caller.started and not caller.finished])
        for caller in callers:
            caller.thread.join(HANDOFF_TIMEOUT_S)
        for caller in callers:
            if isinstance(caller.result, BaseException) and not isinstance(caller.result, Exception):
                raise caller.result
        return [caller.result for caller in callers]

    def _hand(self, caller: Caller) -> None:
        """Give `caller` the baton; return when it has parked or returned (rule 1)."""
        self._back.clear()
        if not caller.started:
            caller.started = True
            caller.thread.start()
        else:
            caller._go.set()
        if not self._back.wait(HANDOFF_TIMEOUT_S):
            raise RuntimeError(
                f"a concurrent call did not hand back within {HANDOFF_TIMEOUT_S:g} s of real time: is it blocked "
                "on something outside the simulation?"
            )

    def _release(self, parked: list[Caller]) -> None:
        if not parked:
            return
        self._abandoned = True
        for caller in parked:
            self._back.clear()
            caller._go.set()
            self._back.wait(HANDOFF_TIMEOUT_S)

    # --------------------------------------------------------------------------------------------- callers

    def park(self) -> None:
        """On a caller's thread: hand the baton back and wait until woken and handed it again."""
        caller = self.caller()
        if caller is None:
            raise RuntimeError("park() is for concurrent calls; the conductor runs the simulation itself")
        caller._go.clear()
        self._back.set()
        caller._go.wait()
        if self._abandoned:
            raise Released("the concurrent run this call belonged to was abandoned")

    def wake(self, caller: Caller) -> None:
        """A parked caller's wait is over: it runs again next, after those woken before it (rule 3)."""
        self._woken.append(caller)
