"""A simulated network over the discrete-event `Scheduler`, implementing `runtime.transport.Transport`.

Theory of operation (after Maelstrom's net and TigerBeetle's PacketSimulator): each directed (src, dest) link has
settings — a latency floor plus a random extra delay from a named distribution, loss, duplication, reordering and
FIFO lanes. `send` decides a message's fate at once with the link's own seeded `Rng` fork and schedules its
delivery on the scheduler; delivery calls the handler registered for `dest`. Every send, delivery and drop goes into
a journal with its virtual time, which `trace_lines` renders as a deterministic text trace.

Link settings are `runtime.link.LinkSettings` (latency floor plus a drawn extra delay, loss and its bursts,
duplication, reordering, bandwidth, stalls), the vocabulary the region processes' links share. Here:
- `fifo`: lanes are FIFO — a message's delivery time is max(sampled time, last delivery time on its lane), so jitter
  never reorders a lane (rule 2 of runtime.transport). Lanes are (src, dest, envelope.lane).
- `bandwidth_kbps` and `stalled` act as on the region processes' links: a cap shared by every message of the
  directed link, and a stall holding every message until it ends, then letting them go in the order they were sent.

Partitions are grudges held by the receiver (Jepsen): `grudges[receiver]` is the set of senders it refuses to hear.
A grudge drops messages at send and also drops messages already in flight when they arrive, so a partition cuts a
link cleanly. `heal()` ends every fault: no grudges, and every link back to its baseline (the topology's) settings.

Determinism rules: all randomness comes from `Rng` forks named after the link (`link/<src>/<dest>`), so traffic on
one link never perturbs another's draws; nothing iterates a set or dict whose order could vary (grudges are
journalled sorted); ties in delivery time are broken by the scheduler's global sequence number.
Performance: the per-message path uses precomputed per-link fields, no copies of envelopes and no allocation beyond
one journal tuple and one heap entry per event; `journal=False` turns the journal off for long runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from ..runtime.link import DISTRIBUTIONS, LinkSettings, lose, sample_extra_ms
from ..runtime.rng import Rng
from ..runtime.transport import Envelope, ReceiveHandler
from .loop import Scheduler

__all__ = ["DISTRIBUTIONS", "LinkSettings", "SimNetwork", "body_digest", "body_size"]


class _Link:
    """One directed link's compiled settings, its random stream and its lanes' last delivery times."""

    __slots__ = (
        "bad",
        "bandwidth_kbps",
        "busy_until_us",
        "duplicate",
        "fifo",
        "held",
        "lane_last",
        "latency_us",
        "loss",
        "loss_burst",
        "reorder",
        "reorder_us",
        "rng",
        "settings",
        "stalled",
    )

    def __init__(self, settings: LinkSettings, rng: Rng) -> None:
        self.rng = rng
        self.lane_last: dict[int, int] = {}
        self.bad = False  # in the bursty-loss model's losing state
        self.busy_until_us = 0  # when the bandwidth cap has transmitted everything queued so far
        self.held: list[Envelope] = []  # sent while the link is stalled, in order
        self.apply(settings)

    def transmitted_us(self, now: int, size: int) -> int:
        """When a message of `size` bytes sent at `now` has gone through the bandwidth cap."""
        start = max(now, self.busy_until_us)
        self.busy_until_us = start + round(size * 1000 / self.bandwidth_kbps)
        return self.busy_until_us

    def apply(self, settings: LinkSettings) -> None:
        self.settings = settings
        self.latency_us = round(settings.latency_ms * 1000)
        self.loss = settings.loss
        self.loss_burst = settings.loss_burst
        self.duplicate = settings.duplicate
        self.reorder = settings.reorder
        self.reorder_us = round(settings.reorder_ms * 1000)
        self.fifo = settings.fifo
        self.bandwidth_kbps = settings.bandwidth_kbps
        self.stalled = settings.stalled

    def sample_delay_us(self) -> int:
        # The floor and the drawn extra are rounded to microseconds separately (replays depend on it).
        return self.latency_us + round(sample_extra_ms(self.settings, self.rng) * 1000)


def body_size(body: bytes | dict[str, Any] | None) -> int:
    """Bytes a message body takes on the wire (a dict body: its JSON)."""
    if body is None:
        return 0
    if isinstance(body, (bytes, bytearray)):
        return len(body)
    return len(orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS))


def body_digest(body: bytes | dict[str, Any] | None) -> str:
    """A short stable fingerprint of a message body for traces (dict keys sorted, so hashing order never leaks)."""
    if body is None:
        return "-"
    if not isinstance(body, (bytes, bytearray)):
        body = orjson.dumps(body, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.blake2b(body, digest_size=8).hexdigest()


class SimNetwork:
    """Transport for regions living in one process, over virtual time."""

    def __init__(
        self,
        scheduler: Scheduler,
        rng: Rng,
        default: LinkSettings | None = None,
        *,
        journal: bool = True,
    ) -> None:
        self.scheduler = scheduler
        self._rng = rng
        self._default = default or LinkSettings()
        self._baseline: dict[tuple[str, str], LinkSettings] = {}
        self._faults: dict[tuple[str, str], LinkSettings] = {}
        self._links: dict[str, dict[str, _Link]] = {}
        self._handlers: dict[str, ReceiveHandler] = {}
        self._grudges: dict[str, frozenset[str]] = {}
        self.journal: list[tuple[int, str, Envelope | None, Any]] | None = [] if journal else None
        self.sent = 0
        self.delivered = 0
        self.duplicated = 0
        self.dropped: dict[str, int] = {"loss": 0, "partition": 0, "down": 0}

    # -- Transport ----------------------------------------------------------------------------------------------

    def register(self, region: str, handler: ReceiveHandler) -> None:
        self._handlers[region] = handler

    def unregister(self, region: str) -> None:
        self._handlers.pop(region, None)

    def send(self, envelope: Envelope) -> None:
        src = envelope.src
        dest = envelope.dest
        self.sent += 1
        links = self._links.get(src)
        link = links.get(dest) if links is not None else None
        if link is None:
            link = self._new_link(src, dest)
        self._transmit(envelope, link)

    def _transmit(self, envelope: Envelope, link: _Link) -> None:
        src = envelope.src
        dest = envelope.dest
        scheduler = self.scheduler
        now = scheduler.now_us
        journal = self.journal
        grudge = self._grudges.get(dest)
        if grudge is not None and src in grudge:
            self.dropped["partition"] += 1
            if journal is not None:
                journal.append((now, "drop-partition", envelope, None))
            return
        if link.stalled:
            link.held.append(envelope)
            if journal is not None:
                journal.append((now, "hold-stalled", envelope, None))
            return
        rng = link.rng
        if link.loss and self._lost(link):
            self.dropped["loss"] += 1
            if journal is not None:
                journal.append((now, "drop-loss", envelope, None))
            return
        when = (
            link.transmitted_us(now, body_size(envelope.body)) if link.bandwidth_kbps else now
        ) + link.sample_delay_us()
        if link.reorder and rng.random() < link.reorder:
            # Held back outside the lane order: later messages of the lane may overtake it.
            when += link.reorder_us
            tag = "send-reordered"
        elif link.fifo:
            lanes = link.lane_last
            last = lanes.get(envelope.lane, 0)
            when = max(when, last)
            lanes[envelope.lane] = when
            tag = "send"
        else:
            tag = "send"
        if journal is not None:
            journal.append((now, tag, envelope, when))
        scheduler.call_at_us(when, self._deliver, envelope)
        if link.duplicate and rng.random() < link.duplicate:
            self.duplicated += 1
            copy_when = now + link.sample_delay_us()
            if journal is not None:
                journal.append((now, "duplicate", envelope, copy_when))
            scheduler.call_at_us(copy_when, self._deliver, envelope)

    @staticmethod
    def _lost(link: _Link) -> bool:
        lost, link.bad = lose(link.rng, link.loss, link.loss_burst, link.bad)
        return lost

    def _deliver(self, envelope: Envelope) -> None:
        journal = self.journal
        grudge = self._grudges.get(envelope.dest)
        if grudge is not None and envelope.src in grudge:
            self.dropped["partition"] += 1
            if journal is not None:
                journal.append((self.scheduler.now_us, "drop-partition", envelope, None))
            return
        handler = self._handlers.get(envelope.dest)
        if handler is None:
            self.dropped["down"] += 1
            if journal is not None:
                journal.append((self.scheduler.now_us, "drop-down", envelope, None))
            return
        self.delivered += 1
        if journal is not None:
            journal.append((self.scheduler.now_us, "deliver", envelope, None))
        handler(envelope)

    # -- link settings ------------------------------------------------------------------------------------------

    def set_baseline(self, src: str, dest: str, settings: LinkSettings, *, bidirectional: bool = False) -> None:
        """The topology's settings for a link: what `heal()` returns to."""
        for pair in ((src, dest), (dest, src)) if bidirectional else ((src, dest),):
            self._baseline[pair] = settings
            self._refresh(*pair)

    def set_link(self, src: str, dest: str, settings: LinkSettings, *, bidirectional: bool = False) -> None:
        """A fault: replace a link's settings until `heal()`."""
        for pair in ((src, dest), (dest, src)) if bidirectional else ((src, dest),):
            self._faults[pair] = settings
            self._refresh(*pair)
            self._note("link", f"{pair[0]}->{pair[1]} {settings}")

    def update_link(self, src: str, dest: str, *, bidirectional: bool = False, **changes: Any) -> None:
        """A fault changing some fields of a link's current settings (e.g. `loss=0.2`) until `heal()`."""
        for pair in ((src, dest), (dest, src)) if bidirectional else ((src, dest),):
            self.set_link(*pair, self.link_settings(*pair).replace(**changes))

    def link_settings(self, src: str, dest: str) -> LinkSettings:
        pair = (src, dest)
        return self._faults.get(pair) or self._baseline.get(pair) or self._default

    def _new_link(self, src: str, dest: str) -> _Link:
        link = _Link(self.link_settings(src, dest), self._rng.fork(f"link/{src}/{dest}"))
        self._links.setdefault(src, {})[dest] = link
        return link

    def _refresh(self, src: str, dest: str) -> None:
        link = self._links.get(src, {}).get(dest)
        if link is not None:
            link.apply(self.link_settings(src, dest))
            if not link.stalled and link.held:
                held, link.held = link.held, []
                for envelope in held:  # the stall is over: what it held goes now, in the order it was sent
                    self._transmit(envelope, link)

    # -- partitions ---------------------------------------------------------------------------------------------

    def set_grudges(self, grudges: Mapping[str, Iterable[str]]) -> None:
        """Replace all partitions: `grudges[receiver]` = senders the receiver refuses to hear from."""
        self._grudges = {receiver: frozenset(senders) for receiver, senders in grudges.items() if senders}
        self._note("grudges", self.grudges_text())

    def add_grudge(self, receiver: str, senders: Iterable[str]) -> None:
        self._grudges[receiver] = self._grudges.get(receiver, frozenset()) | frozenset(senders)
        self._note("grudges", self.grudges_text())

    def partition(self, a: str, b: str, *, one_way: bool = False) -> None:
        """Cut a -> b (b stops hearing a); both directions unless `one_way`."""
        self.add_grudge(b, [a])
        if not one_way:
            self.add_grudge(a, [b])

    def grudges(self) -> dict[str, list[str]]:
        return {receiver: sorted(self._grudges[receiver]) for receiver in sorted(self._grudges)}

    def grudges_text(self) -> str:
        return " ".join(f"{r}<-x-{','.join(s)}" for r, s in self.grudges().items()) or "none"

    def heal_partitions(self) -> None:
        self._grudges = {}
        self._note("grudges", "none")

    def heal_links(self) -> None:
        pairs = sorted(self._faults)
        self._faults = {}
        for pair in pairs:
            self._refresh(*pair)
        self._note("links", "baseline")

    def heal(self) -> None:
        """End every network fault: no partitions, every link back to its baseline settings."""
        self.heal_partitions()
        self.heal_links()

    # -- observation --------------------------------------------------------------------------------------------

    def statistics(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "duplicated": self.duplicated,
            "dropped": dict(self.dropped),
            "in_flight_or_queued": self.scheduler.pending(),
        }

    def _note(self, event: str, detail: str) -> None:
        if self.journal is not None:
            self.journal.append((self.scheduler.now_us, event, None, detail))

    def trace_lines(self) -> Iterator[str]:
        """The journal as text, one event per line: `time_us event src dest kind msg_id in_reply_to lane body
        detail` (detail: the scheduled delivery time for sends); fault notes are `time_us event detail`."""
        for now, event, envelope, detail in self.journal or ():
            if envelope is None:
                yield f"{now:012d} {event} {detail}"
                continue
            reply = "-" if envelope.in_reply_to is None else envelope.in_reply_to
            tail = "" if detail is None else f" @{detail:012d}"
            yield (
                f"{now:012d} {event} {envelope.src} {envelope.dest} {envelope.kind} {envelope.msg_id} {reply}"
                f" {envelope.lane} {body_digest(envelope.body)}{tail}"
            )

    def write_trace(self, stream: Any) -> None:
        """Write the trace to a text stream (a file opened with newline='\\n' for byte-identical output)."""
        for line in self.trace_lines():
            stream.write(line)
            stream.write("\n")
