"""The price of strong mode: write and read latency under MRSC against MREC, on the same three regions.

What it does: `globaltables up` on a topology written to a temporary dir (us-east-1, us-east-2 and us-west-2, every
link 30 ms one way, no jitter, one table), first with `mode: mrsc` (us-west-2 a witness), then `mode: mrec` (three
replicas). From one boto3 client per region, sequentially (latency, not throughput): --count PutItems from
us-east-1, then as many strongly consistent and eventually consistent GetItems from us-east-2 of the keys written.

Expected: MRSC write p50 between 60 and 65 ms (one round trip to the nearest other member, 2 x 30 ms, plus
the local work), strong reads about one round trip, eventual reads and MREC writes local (under 5 ms p50).

Usage: python bench/mrsc_latency.py [--count N] [--latency-ms MS] [--baseline-rev REV [--baseline-rounds N]]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _baseline
import boto3
from botocore.config import Config

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


def client(region: str, endpoint: str):
    """A boto3 client of `region`'s endpoint: it must sign for that region (a region refuses a credential scope that
    names another, as DynamoDB does); botocore dates every request as it sends it."""
    config = Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=60)
    return boto3.client(
        "dynamodb", region_name=region, endpoint_url=endpoint,
        aws_access_key_id="bench", aws_secret_access_key="bench", config=config,
    )  # fmt: skip


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def measure(mode: str, count: int, latency_ms: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"mrsc-bench-{mode}-") as tmp:
        process, endpoints = start(Path(tmp), topology(mode, latency_ms))
        try:
            writer, reader = client("us-east-1", endpoints["us-east-1"]), client("us-east-2", endpoints["us-east-2"])
            for i in range(5):  # warm up the connections (and the links)
                writer.put_item(TableName="Items", Item={"id": {"S": f"warm-{i}"}})
                reader.get_item(TableName="Items", Key={"id": {"S": f"warm-{i}"}}, ConsistentRead=True)
            keys = [{"id": {"S": f"k{i}"}} for i in range(count)]
            writes = [timed(lambda k=k: writer.put_item(TableName="Items", Item={**k, "v": {"S": "x" * 100}})) for k in keys]
            strong = [timed(lambda k=k: reader.get_item(TableName="Items", Key=k, ConsistentRead=True)) for k in keys]
            eventual = [timed(lambda k=k: reader.get_item(TableName="Items", Key=k)) for k in keys]
        finally:
            stop(process)
    return {"write": p50(writes), "strong_read": p50(strong), "eventual_read": p50(eventual)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    _baseline.add_arguments(parser)
    args = parser.parse_args()
    compared = _baseline.baseline_requested(args, __file__)
    if compared is not None:
        return compared
    results = {mode: measure(mode, args.count, args.latency_ms) for mode in ("mrsc", "mrec")}
    rtt = 2 * args.latency_ms
    print(f"links {args.latency_ms:g} ms one way (round trip {rtt:g} ms), {args.count} operations each, p50 in ms")
    print(f"{'':8} {'write':>8} {'strong read':>12} {'eventual read':>14}")
    for mode, numbers in results.items():
        print(f"{mode:8} {numbers['write']:8.1f} {numbers['strong_read']:12.1f} {numbers['eventual_read']:14.1f}")
    print(json.dumps({"latency_ms": args.latency_ms, **results}))
    _baseline.report({f"{mode} {name} p50 ms": value for mode, numbers in results.items() for name, value in numbers.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
