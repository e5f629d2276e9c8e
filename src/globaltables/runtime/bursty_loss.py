"""Message loss, independent or in bursts: the one model of the region processes' links and the simulated ones.

`loss` is the long-run fraction of messages lost. With `burst` > 1 losses come in bursts of `burst` messages on
average (Gilbert-Elliott: a good state that loses nothing and a bad state that loses everything, left with
probability 1 / burst and entered so that the stationary share of the bad state is `loss`).
"""

from __future__ import annotations

from typing import Protocol


class RandomSource(Protocol):
    def random(self) -> float: ...


def lose(rng: RandomSource, loss: float, burst: float, bad: bool) -> tuple[bool, bool]:
    """(whether this message is lost, whether the link is in the bad state after it)."""
    if not loss:
        return False, False
    if burst <= 1 or loss >= 1:
        return rng.random() < loss, False
    leave_bad = 1.0 / burst
    enter_bad = loss * leave_bad / (1.0 - loss)
    bad = (rng.random() >= leave_bad) if bad else (rng.random() < enter_bad)
    return bad, bad
