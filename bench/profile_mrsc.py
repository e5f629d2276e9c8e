"""Where a strong-mode (MRSC) write and strong read spend their own time, in process (no HTTP, no link delay): µs
per step on the critical path, then a cProfile of the whole run.

A profiling aid for bench/mrsc_latency.py, which measures the same operations through real processes and links:
its latency is two link delays plus the steps measured here (and the HTTP and the link transport around them).

What it does: three members in one process (replicas us-east-1 and us-east-2, each an engine on SQLite on disk,
and witness us-west-2), driven by the region's own request path (region/mrsc_requests.py, with the region's
signature checks) and node (replication/mrsc/node.py); envelopes go through the transport's codec
(region/http_transport.py) and are delivered at once. For a PutItem from us-east-1 the critical path is: the
coordinator's request up to its Propose, the nearer voter's Propose to Vote, and the coordinator's Vote to the
client's answer; for a strongly consistent GetItem at us-east-2: request to Sync, the member's Sync to Synced,
Synced to answer.

Usage: python bench/profile_mrsc.py [--count N] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import orjson  # noqa: E402
from _sigv4 import header_lines  # noqa: E402

from globaltables.engine.engine import Engine  # noqa: E402
from globaltables.engine.storage.sqlite_store import SqliteStore  # noqa: E402
from globaltables.engine.strong import make_strong  # noqa: E402
from globaltables.region.http_transport import decode_envelope, encode_envelope  # noqa: E402
from globaltables.region.mrsc_requests import MrscRequests  # noqa: E402
from globaltables.region.signing import RequestSigning  # noqa: E402
from globaltables.replication.mrsc.config import MrscConfig  # noqa: E402
from globaltables.replication.mrsc.node import MrscNode  # noqa: E402
from globaltables.replication.mrsc.store import StrongStore  # noqa: E402
from globaltables.replication.mrsc.witness import MrscWitness  # noqa: E402
from globaltables.runtime.clock import SystemClock  # noqa: E402

REPLICAS = ("us-east-1", "us-east-2")
WITNESS = "us-west-2"
TABLE = {
    "TableName": "Items",
    "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
    "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
    "BillingMode": "PAY_PER_REQUEST",
}


class Member:
    def __init__(self, region: str, workdir: Path) -> None:
        others = [name for name in (*REPLICAS, WITNESS) if name != region]
        store = SqliteStore(str(workdir / f"{region}.db"))
        clock = SystemClock()
        self.witness = region == WITNESS
        engine = Engine(store, clock, region=region)
        if not self.witness:
            engine.handle("CreateTable", dict(TABLE))
            make_strong(engine, "Items", list(REPLICAS), WITNESS)
        config = MrscConfig()
        strong = StrongStore(store, None if self.witness else engine, region)
        self.node = (MrscWitness if self.witness else MrscNode)(region, others, strong, config)
        self.node.start(time.monotonic())
        self.requests = MrscRequests(engine, self.node, config, witness=self.witness, signing=RequestSigning(region, clock))
        self.region = region

    def headers(self, operation: str) -> dict[str, str]:
        lines = header_lines(self.region, time.time()).decode().strip().split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines)
        headers["X-Amz-Target"] = f"DynamoDB_20120810.{operation}"
        headers["Content-Type"] = "application/x-amz-json-1.0"
        return headers


class Cluster:
    """Three members; `wire` carries envelopes through the transport codec."""

    def __init__(self, workdir: Path) -> None:
        self.members = {name: Member(name, workdir) for name in (*REPLICAS, WITNESS)}
        self.next_op = 0
        self.steps: dict[str, list[float]] = {}

    def note(self, step: str, started: float) -> None:
        self.steps.setdefault(step, []).append((time.perf_counter() - started) * 1e6)

    def request(self, region: str, operation: str, body: dict, first: str, hops: list[str], last: str) -> tuple:
        """One request at `region`: the steps up to its first envelopes (`first`), each member's answer to what
        arrives (`hops`: names of the steps, in order of the critical path) and the answer (`last`)."""
        member = self.members[region]
        started = time.perf_counter()
        raw = orjson.dumps(body)
        steps = member.requests.answer(member.headers(operation), "", raw)
        try:
            waits = next(steps)
        except StopIteration as done:
            return done.value
        ops = []
        envelopes = []
        for wait in waits:
            self.next_op += 1
            ops.append(self.next_op)
            envelopes += wait.submit(self.next_op, time.monotonic())
        self.note(first, started)
        outcomes: dict[int, tuple] = {}
        hop = 0
        answered = 0.0
        while len(outcomes) < len(ops):
            if not envelopes:
                raise RuntimeError("the request did not complete")
            # Deliver the first envelope for the nearest member first (the critical path), the rest afterwards.
            envelope = envelopes.pop(0)
            data = encode_envelope(envelope)
            started = time.perf_counter()
            target = self.members[envelope.dest]
            more = target.node.on_message(decode_envelope(data), time.monotonic())
            done = dict((op, (outcome, detail)) for op, outcome, detail in target.node.take_completions())
            if envelope.dest == region and done:
                outcomes.update(done)
                answered = started  # the answer's step runs from here to the client's response
            else:
                if hop < len(hops) and envelope.dest != region and envelope.dest != WITNESS:
                    self.note(hops[hop], started)
                    hop += 1
            envelopes += more
        try:
            steps.send([outcomes[op] for op in ops])
        except StopIteration as done:
            self.note(last, answered)
            for envelope in envelopes:  # the rest (Commit, Held, the witness's votes), off the critical path
                self.members[envelope.dest].node.on_message(decode_envelope(encode_envelope(envelope)), time.monotonic())
            return done.value
        raise RuntimeError("the request waited twice")


def run(cluster: Cluster, count: int, tag: str) -> None:
    for i in range(count):
        item = {"id": {"S": f"{tag}{i}"}, "v": {"S": "x" * 100}}
        status, body = cluster.request(
            "us-east-1", "PutItem", {"TableName": "Items", "Item": item},
            "put: request to Propose", ["put: voter Propose to Vote"], "put: Vote to answer",
        )  # fmt: skip
        assert status == 200, body
    for i in range(count):
        status, body = cluster.request(
            "us-east-2", "GetItem", {"TableName": "Items", "Key": {"id": {"S": f"{tag}{i}"}}, "ConsistentRead": True},
            "get: request to Sync", ["get: member Sync to Synced"], "get: Synced to answer",
        )  # fmt: skip
        assert status == 200 and b"xxx" in body, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of a second run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="profile-mrsc-") as tmp:
        cluster = Cluster(Path(tmp))
        run(cluster, 200, "warm-")
        cluster.steps.clear()
        run(cluster, args.count, "k")
        total = {"put": 0.0, "get": 0.0}
        for step, samples in cluster.steps.items():
            median = statistics.median(samples)
            total[step[:3]] += median
            print(f"{step:32} p50 {median:7.1f} µs   p99 {sorted(samples)[int(len(samples) * 0.99)]:7.1f} µs")
        for kind, value in total.items():
            print(f"{kind}: critical path {value:.1f} µs (sum of p50s)")
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            run(cluster, args.count, "p")
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
