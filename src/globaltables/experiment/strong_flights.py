"""Requests in flight at a simulated strong-mode (MRSC) member: one driver for the experiment runner's clients
(experiment/simulated_run.py) and the pytest kit's harness (testing/simulated_mrsc.py).

A strong-mode request is answered by the region process's own request path, region/mrsc_requests.py: a generator
that yields the node operations it waits for and ends with the answer. A `Flight` is one such request; `advance`
sends it the outcomes of what it waited for (None to start it), submits the next operations on the cluster with
the region process's guard, and stops when one of them has not completed yet (the completion callbacks resume the
flight later) or when the path ends (its StopIteration, with the answer as its value, reaches the caller). The two
hosts differ only in how an answer is delivered and when a ready flight is resumed, so those stay with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..region.mrsc_requests import GUARD_S


class Flight:
    """One request in flight at a member: its request path (`steps`), the outcomes of the node operations it waits
    for (`missing` still to come; -1 once a submission failed and they no longer matter), whether it is still
    submitting them (a completion meanwhile must not resume it), and whether its region crashed under it."""

    __slots__ = ("crashed", "missing", "outcomes", "region", "steps", "submitting")

    def __init__(self, region: str, steps: Any) -> None:
        self.region = region
        self.steps = steps
        self.outcomes: list[Any] = []
        self.missing = 0
        self.crashed = False
        self.submitting = False


def advance(
    flight: Flight,
    outcomes: list | None,
    host: Callable[..., Any],
    completion: Callable[[Any, int], Callable[[str, Any], None]],
    passthrough: tuple[type[BaseException], ...] = (),
) -> None:
    """Run `flight`'s request path to its next wait or to its end (StopIteration propagates). `host(region, submit,
    on_done, guard_s=...)` submits one node operation (MrscCluster.host); `completion(flight, index)` makes its
    callback. An exception of a submission goes into the path, which answers it (a bug under the node is a 500),
    unless it is one of `passthrough`, which the caller answers itself."""
    steps = flight.steps
    waits = next(steps) if outcomes is None else steps.send(outcomes)
    while True:
        flight.outcomes = [None] * len(waits)
        flight.missing = len(waits)
        flight.submitting = True
        try:
            for index, wait in enumerate(waits):
                host(flight.region, wait.submit, completion(flight, index), guard_s=wait.timeout_ms / 1000 + GUARD_S)
        except passthrough:
            raise
        except Exception as error:  # noqa: BLE001 - a bug under the node: the request path answers 500
            flight.missing = -1  # the outcomes of what was submitted no longer matter
            waits = steps.throw(error)
            continue
        finally:
            flight.submitting = False
        if flight.missing or flight.crashed:
            return
        waits = steps.send(flight.outcomes)  # everything completed at once (e.g. a refused write)
