"""How regions talk: an `Envelope` per logical message and a `Transport` that carries it.

Theory of operation (after Maelstrom's `{src, dest, body{type, msg_id, in_reply_to}}`): a region hands an envelope
to its transport and returns at once (`send` never blocks and never raises for network trouble: a lost message is
indistinguishable from a slow one, so the protocol above must time out and retry). The transport calls the
receive handler registered for the envelope's `dest` region, possibly late, twice, out of order or never — what a
real network may do, and what the simulated network (`globaltables.sim.network`) does on purpose.

Rules:
1. Envelopes are immutable once sent. Neither transport copies them (the simulator hands the very same object to a
   duplicate delivery), so a receiver must never mutate `body`.
2. `lane` names an ordered sub-stream of a (src, dest) link: an int, or a string such as replication's channel
   `"<table>/<lane>"`. A transport that offers FIFO lanes never reorders messages within one lane by jitter alone;
   separate lanes are independent (a slow lane does not hold up another).
3. An RPC failure is `definite` only when the request certainly had no effect; timeouts and crashes are indefinite.
   When in doubt, indefinite is always safe.

The wire names of the project's own HTTP headers live here too (the layer every side may import), so a server and
its clients cannot come to spell one differently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

# The topology's shared secret, sent on every call to a control route and on a replication link's upgrade request.
SECRET_HEADER = "x-globaltables-secret"
# The connecting region's name, on a replication link's upgrade request (the secret proves it may claim it).
REGION_HEADER = "x-globaltables-region"
# The version (`<hlc>/<region>`) of the item a data-plane answer wrote or read, when the table is global.
VERSION_HEADER = "x-globaltables-version"


class Envelope:
    """One logical message. `body` is opaque to the transport: bytes on the wire, or a dict in process."""

    # __slots__ and a plain __init__: envelopes are created per message on the hottest path of the simulator.
    __slots__ = ("body", "dest", "in_reply_to", "kind", "lane", "msg_id", "src")

    def __init__(
        self,
        src: str,
        dest: str,
        kind: str,
        msg_id: int,
        in_reply_to: int | None = None,
        body: bytes | dict[str, Any] | None = None,
        lane: int | str = 0,
    ) -> None:
        self.src = src
        self.dest = dest
        self.kind = kind
        self.msg_id = msg_id
        self.in_reply_to = in_reply_to
        self.body = body
        self.lane = lane

    def reply(self, kind: str, msg_id: int, body: bytes | dict[str, Any] | None = None) -> Envelope:
        """The answer to this envelope, addressed back to its sender on the same lane."""
        return Envelope(self.dest, self.src, kind, msg_id, self.msg_id, body, self.lane)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Envelope):
            return NotImplemented
        return (
            self.src == other.src
            and self.dest == other.dest
            and self.kind == other.kind
            and self.msg_id == other.msg_id
            and self.in_reply_to == other.in_reply_to
            and self.body == other.body
            and self.lane == other.lane
        )

    __hash__ = None  # type: ignore[assignment]  # mutable-looking body: not a dict key

    def __repr__(self) -> str:
        reply = f" in_reply_to={self.in_reply_to}" if self.in_reply_to is not None else ""
        return f"Envelope({self.src}->{self.dest} {self.kind} #{self.msg_id}{reply} lane={self.lane})"


ReceiveHandler = Callable[[Envelope], None]


class Transport(Protocol):
    """Carries envelopes between regions; implemented by the simulator and by the aiohttp host."""

    def send(self, envelope: Envelope) -> None:
        """Queue `envelope` for delivery to `envelope.dest`. Never blocks; delivery is not guaranteed."""

    def register(self, region: str, handler: ReceiveHandler) -> None:
        """Deliver envelopes addressed to `region` to `handler` from now on (replacing any earlier handler)."""

    def unregister(self, region: str) -> None:
        """Stop delivering to `region` (a crashed or stopped region); later envelopes to it are dropped."""


class RpcError(Exception):
    """A request/response exchange failed.

    `definite` is True only when the request certainly did not take effect (the peer refused it before acting);
    a timeout, a reset connection or a crashed peer is indefinite (`definite=False`): the request may have applied.
    """

    def __init__(self, message: str, *, definite: bool) -> None:
        super().__init__(message)
        self.definite = definite

    def __repr__(self) -> str:
        return f"RpcError({self.args[0]!r}, definite={self.definite})"
