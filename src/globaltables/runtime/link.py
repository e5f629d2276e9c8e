"""The link vocabulary: what a directed replication link can be told to do, and the draws that decide a message's
fate on it. One record for the simulated network (sim/network.py), the region processes' links
(region/link_faults.py, region/http_transport.py) and chaos's link faults (chaos/faults.py), so one schedule means
the same thing on either target.

`LinkSettings` (all times in milliseconds):
- delay = `latency_ms` + extra, extra >= 0 drawn per message with scale `jitter_ms` from `distribution`:
  `constant` (extra = 0: jitter ignored), `uniform` U(0, jitter), `normal` |N(0, jitter)| (half-normal),
  `exponential` with mean jitter, `pareto` jitter * (Pareto(`pareto_alpha`) - 1) (heavy tail; mean = jitter at 2).
  So `latency_ms` is a hard floor: no message arrives sooner.
- `loss`: the long-run fraction of messages lost. `loss_burst` > 1 makes losses come in bursts of that many
  messages on average (Gilbert-Elliott: a good state that loses nothing and a bad state that loses everything, left
  with probability 1 / burst and entered so that the stationary share of the bad state is `loss`).
- `duplicate`: probability a second copy is delivered, with its own delay and outside the lane order.
- `reorder`: probability a message is held back an extra `reorder_ms` outside the lane order, so later messages of
  its lane overtake it.
- `fifo`: jitter never reorders a lane (the simulator's switch; the region processes' links are always FIFO).
- `bandwidth_kbps`: kilobytes per second shared by every message of the link; each waits for the ones before it to
  be transmitted (size / bandwidth each), so a backlog builds under load. 0: unlimited.
- `stalled`: every message is held until the stall ends, then they go in the order they were sent.

Determinism: the draws here are the only ones a link makes for delay and loss, in a fixed order and number per
message (no draw at all for a constant delay or zero jitter, none for loss 0), from the caller's seeded source.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from .specs import Bool, Choice, Field, Invalid, Number, Probability, Problem, Struct, check_members, render

DISTRIBUTIONS = ("constant", "uniform", "normal", "exponential", "pareto")

FIELDS: dict[str, Field] = {
    "latency_ms": Number(minimum=0),
    "jitter_ms": Number(minimum=0),
    "distribution": Choice(DISTRIBUTIONS, kind="string"),
    "pareto_alpha": Number(positive=True),
    "loss": Probability(),
    "loss_burst": Number(minimum=1),
    "duplicate": Probability(),
    "reorder": Probability(),
    "reorder_ms": Number(minimum=0),
    "fifo": Bool(),
    "bandwidth_kbps": Number(minimum=0),
    "stalled": Bool(),
}
DELAY_FIELDS = ("latency_ms", "jitter_ms")  # a region's links take these apart, as a latency override
FAULT_FIELDS = tuple(name for name in FIELDS if name not in (*DELAY_FIELDS, "fifo"))  # what a link fault may set


class RandomSource(Protocol):
    def random(self) -> float: ...
    def expovariate(self, lambd: float) -> float: ...
    def normalvariate(self, mu: float, sigma: float) -> float: ...
    def paretovariate(self, alpha: float) -> float: ...


def problems_of(fields: dict[str, Any], path: str = "", allowed: tuple[str, ...] = tuple(FIELDS)) -> list[Problem]:
    """Every problem of link fields (a subset of `allowed`), each naming its field under `path`."""
    _, problems = check_members(fields, {name: FIELDS[name] for name in allowed}, path, noun="field")
    if not problems and fields.get("loss", 0) >= 1 and fields.get("loss_burst", 1) > 1:
        problems.append((f"{path}.loss_burst" if path else "loss_burst", "a loss of 1 is not bursty"))
    return problems


@dataclasses.dataclass(frozen=True, slots=True)
class LinkSettings:
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    distribution: str = "uniform"
    pareto_alpha: float = 2.0
    loss: float = 0.0
    loss_burst: float = 1.0  # mean burst length in messages; 1: independent losses
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_ms: float = 0.0
    fifo: bool = True
    bandwidth_kbps: float = 0.0  # 0: unlimited
    stalled: bool = False

    def __post_init__(self) -> None:
        problems = problems_of({name: getattr(self, name) for name in FIELDS})
        if problems:
            raise ValueError("; ".join(render(problems)))

    def replace(self, **changes: Any) -> LinkSettings:
        return dataclasses.replace(self, **changes)

    def fault_fields(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FAULT_FIELDS}


def settings_field(allowed: tuple[str, ...] = FAULT_FIELDS, **kw: Any) -> Field:
    """A document field holding link settings — by default a link fault's fields, no delay and no fifo — parsed to
    `LinkSettings` (the rules joining fields, such as a bursty loss of 1, included)."""

    def parse(fields: dict[str, Any]) -> LinkSettings:
        try:
            return LinkSettings(**fields)
        except ValueError as error:
            raise Invalid(str(error)) from None

    return Struct({name: FIELDS[name] for name in allowed}, noun="field", parse=parse, **kw)


def sample_extra_ms(settings: LinkSettings, rng: RandomSource, jitter_ms: float | None = None) -> float:
    """One message's delay above the link's latency floor, in ms (`jitter_ms` overrides the settings' scale). The
    caller adds it to the floor in its own time unit, rounding each part as it always has."""
    jitter = settings.jitter_ms if jitter_ms is None else jitter_ms
    distribution = settings.distribution
    if not jitter or distribution == "constant":
        return 0.0  # no draw: a no-op setting leaves the stream unchanged
    if distribution == "uniform":
        return rng.random() * jitter
    if distribution == "exponential":
        return rng.expovariate(1.0 / jitter)
    if distribution == "normal":
        return abs(rng.normalvariate(0.0, jitter))
    return jitter * (rng.paretovariate(settings.pareto_alpha) - 1.0)  # shifted so the minimum extra is 0


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
