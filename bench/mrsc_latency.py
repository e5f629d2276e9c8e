"""The price of strong mode: write and read latency under MRSC against MREC, on the same three regions.

What it does: `globaltables up` on a topology written to a temporary dir (us-east-1, us-east-2 and us-west-2, every
link 30 ms one way, no jitter, one table), first with `mode: mrsc` (us-west-2 a witness), then `mode: mrec` (three
replicas). From one client per region, sequentially (latency, not throughput): --count PutItems from us-east-1,
then as many strongly consistent and eventually consistent GetItems from us-east-2 of the keys written. It prints
p50 and p99 of each, the round trip to the nearest other member (2 x the link latency) and the target.

The target (issue #20): MRSC write and strong read p50 at most the round trip + 3 ms, and never below it (a strong
operation that beat the round trip would not have heard the other member). The 3 ms hold everything a strong
operation does besides the two link delays: the HTTP request and answer, the coordinator's and the voter's
processing and commits (or the Sync and its answer), the messages' encoding and transport. Eventual reads and MREC
writes are local: their p50 is that HTTP and engine part alone.

The client (--client raw, the default) is a blocking keep-alive HTTP/1.1 client on one socket per region, its
requests signed as bench/_sigv4.py does (dated and scoped, no key store): boto3 spends 1.5 ms or more of its own CPU
per call (several on a busy machine), which is the load generator's cost, not the testbed's, and would hide the
milliseconds this measures. `--client boto3` measures through boto3 instead.

Usage: python bench/mrsc_latency.py [--count N] [--latency-ms MS] [--client raw|boto3]
       [--baseline-rev REV [--baseline-rounds N]]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _baseline
import orjson
from _sigv4 import Signer

REGIONS = ("us-east-1", "us-east-2", "us-west-2")


def topology(mode: str, latency_ms: float) -> str:
    witness = "\n    role: witness" if mode == "mrsc" else ""
    return f"""name: bench-{mode}
mode: {mode}
regions:
  - name: us-east-1
  - name: us-east-2
  - name: us-west-2{witness}
links:
  default: {{latency_ms: {latency_ms}, jitter_ms: 0}}
tables:
  - TableName: Items
    AttributeDefinitions: [{{AttributeName: id, AttributeType: S}}]
    KeySchema: [{{AttributeName: id, KeyType: HASH}}]
"""


def start(workdir: Path, text: str) -> tuple[subprocess.Popen, dict[str, str]]:
    path = workdir / "topology.yaml"
    path.write_text(text)
    env = dict(os.environ, PYTHONPATH=_baseline.child_pythonpath())  # the package under test (_baseline.py)
    out = workdir / "up.stdout"
    with open(out, "wb") as stdout, open(workdir / "up.stderr", "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "globaltables.cli.main", "up", str(path), "--data-dir", str(workdir / "state")],
            stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=env, cwd=workdir,
        )  # fmt: skip
    deadline = time.monotonic() + 90
    while True:
        lines = [json.loads(line) for line in out.read_text().splitlines() if line.endswith("}")]
        if lines and lines[-1] == {"ready": True}:
            return process, {line["region"]: line["endpoint"] for line in lines if "region" in line}
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"`up` did not start:\n{(workdir / 'up.stderr').read_text()}")
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()


class RawClient:
    """DynamoDB calls to one region over one keep-alive HTTP/1.1 socket (TCP_NODELAY), signed for that region at the
    second they are sent (a region refuses a stale date or a scope naming another region, as DynamoDB does)."""

    def __init__(self, region: str, endpoint: str, connect: bool = True) -> None:
        host, port = endpoint.removeprefix("http://").rstrip("/").rsplit(":", 1)
        self.host = f"{host}:{port}"
        self.signer = Signer(region)
        self.buffer = b""
        if connect:
            self.sock = socket.create_connection((host, int(port)), timeout=60)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def frame(self, operation: str, request: dict) -> bytes:
        """The request's bytes, signed now."""
        body = orjson.dumps(request)
        head = (
            f"POST / HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"X-Amz-Target: DynamoDB_20120810.{operation}\r\n"
        ).encode()
        return head + self.signer.lines() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body

    def call(self, operation: str, request: dict) -> dict:
        self.sock.sendall(self.frame(operation, request))
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        end = self.buffer.index(b"\r\n\r\n") + 4
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        while len(self.buffer) < end + length:
            self._read()
        answer, self.buffer = self.buffer[end : end + length], self.buffer[end + length :]
        if status != 200:
            raise RuntimeError(f"{operation} answered {status}: {answer[:300]!r}")
        return orjson.loads(answer)

    def _read(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the region closed the connection")
        self.buffer += data


class Boto3Client:
    """The same calls through boto3, which must sign for the region it calls; botocore dates every request."""

    def __init__(self, region: str, endpoint: str) -> None:
        import boto3
        from botocore.config import Config

        config = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)
        self.client = boto3.client(
            "dynamodb", region_name=region, endpoint_url=endpoint,
            aws_access_key_id="bench", aws_secret_access_key="bench", config=config,
        )  # fmt: skip

    def call(self, operation: str, request: dict) -> dict:
        method = {"PutItem": self.client.put_item, "GetItem": self.client.get_item}[operation]
        return method(**request)


CLIENTS = {"raw": RawClient, "boto3": Boto3Client}


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(samples: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(samples), "p99": percentile(samples, 0.99)}


def measure(mode: str, count: int, latency_ms: float, kind: str) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix=f"mrsc-bench-{mode}-") as tmp:
        process, endpoints = start(Path(tmp), topology(mode, latency_ms))
        try:
            make = CLIENTS[kind]
            writer, reader = make("us-east-1", endpoints["us-east-1"]), make("us-east-2", endpoints["us-east-2"])
            for i in range(5):  # warm up the connections (and the links)
                writer.call("PutItem", {"TableName": "Items", "Item": {"id": {"S": f"warm-{i}"}}})
                reader.call("GetItem", {"TableName": "Items", "Key": {"id": {"S": f"warm-{i}"}}, "ConsistentRead": True})
            keys = [{"id": {"S": f"k{i}"}} for i in range(count)]
            writes = [
                timed(lambda k=k: writer.call("PutItem", {"TableName": "Items", "Item": {**k, "v": {"S": "x" * 100}}}))
                for k in keys
            ]
            strong = [
                timed(lambda k=k: reader.call("GetItem", {"TableName": "Items", "Key": k, "ConsistentRead": True}))
                for k in keys
            ]
            eventual = [timed(lambda k=k: reader.call("GetItem", {"TableName": "Items", "Key": k})) for k in keys]
        finally:
            stop(process)
    return {"write": summary(writes), "strong_read": summary(strong), "eventual_read": summary(eventual)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--client", choices=sorted(CLIENTS), default="raw", help="raw HTTP (default) or boto3")
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    results = {mode: measure(mode, args.count, args.latency_ms, args.client) for mode in ("mrsc", "mrec")}
    rtt = 2 * args.latency_ms
    target = rtt + 3.0
    print(
        f"links {args.latency_ms:g} ms one way: round trip to the nearest member {rtt:g} ms; "
        f"{args.count} operations each, {args.client} client, ms"
    )
    print(f"{'':6} {'write p50':>10} {'p99':>7} {'strong read p50':>16} {'p99':>7} {'eventual read p50':>18} {'p99':>7}")
    for mode, numbers in results.items():
        w, s, e = numbers["write"], numbers["strong_read"], numbers["eventual_read"]
        print(
            f"{mode:6} {w['p50']:10.1f} {w['p99']:7.1f} {s['p50']:16.1f} {s['p99']:7.1f} "
            f"{e['p50']:18.1f} {e['p99']:7.1f}"
        )
    print(f"target: MRSC write and strong read p50 in [{rtt:g}, {target:g}] ms (round trip, round trip + 3 ms)")
    for name in ("write", "strong_read"):
        value = results["mrsc"][name]["p50"]
        verdict = "met" if rtt <= value <= target else "NOT met"
        print(f"  mrsc {name.replace('_', ' ')} p50 {value:.2f} ms = round trip + {value - rtt:.2f} ms: {verdict}")
    print(json.dumps({"latency_ms": args.latency_ms, "client": args.client, **results}))
    _baseline.report(
        {
            f"{mode} {name} {stat} ms": value
            for mode, numbers in results.items()
            for name, stats in numbers.items()
            for stat, value in stats.items()
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
