"""Running the fuzzers against a region process and judging every answer.

What is asserted, for every request:
- no 5xx, except those `allowed_5xx` names (a standalone region documents none; MRSC isolation would be one);
- every error answer is DynamoDB-shaped: a JSON object with `__type` (`namespace#Name`) and a string message if any,
  with a matching `x-amz-crc32`; or the one documented XML body, 404 `<UnknownOperationException/>`, for a request
  that picks no JSON protocol (wire.py);
- every 200 answer to a DynamoDB POST is a JSON object;
- no hang: a complete request is answered (or its connection closed), a half-closed connection is closed.
And at the end: the region process is alive and answers, and the canary table's items are exactly as written.

A 5xx is a bug somewhere in the region; its site (file, line, function and exception of the innermost project
frame) is read from the traceback the region logs for every internal error, so a failure names where to look.
"""

from __future__ import annotations

import json
import random
import re
import socket
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from fuzz.model_requests import FUZZ_TABLES, RequestFuzzer
from fuzz.wire_bytes import ByteCase, ByteFuzzer, request_bytes

ANSWER_TIMEOUT_S = 30.0  # a generous bound on one answer (2 shared cores); a hang is far longer than any answer
CLOSE_TIMEOUT_S = 10.0
MORE_ANSWERS_IDLE_S = 0.3  # after the first answer of a pipelined case, how long to wait for the next
ERROR_TYPE = re.compile(r"[A-Za-z0-9_.]+#[A-Za-z0-9_]+")
NOT_FOUND_BODY = b"<UnknownOperationException/>\n"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:200]!r}>"


@dataclass
class Failure:
    kind: str
    request: str
    answer: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.request[:400]} -> {self.answer[:300]}"


@dataclass
class FuzzReport:
    seed: int
    requests: int = 0
    byte_cases: int = 0
    statuses: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)
    # Where the region logged tracebacks: every internal error (each 5xx) logs one; nothing else should.
    sites: Counter = field(default_factory=Counter)
    log_bytes: int = 0
    alive: bool = True
    canaries_intact: bool = True
    seconds: float = 0.0

    def count(self, kind: str) -> int:
        return sum(1 for failure in self.failures if failure.kind == kind)

    def problems(self) -> list[str]:
        out = []
        kinds = Counter(failure.kind for failure in self.failures)
        for kind, n in sorted(kinds.items()):
            example = next(f for f in self.failures if f.kind == kind)
            out.append(f"{n} x {kind}, e.g. {example}")
        if self.sites:
            out.append("traceback sites in the region log: " + "; ".join(f"{site} (x{n})" for site, n in self.sites.items()))
        if not self.alive:
            out.append("the region process is not alive / not answering")
        if not self.canaries_intact:
            out.append("canary items changed")
        return out

    def assert_clean(self) -> None:
        problems = self.problems()
        assert not problems, f"fuzz seed {self.seed}: " + "\n".join(problems)

    def summary(self) -> str:
        fivexx = sum(n for status, n in self.statuses.items() if status >= 500)
        lines = [
            f"seed {self.seed}: {self.requests} requests ({self.byte_cases} byte-level cases) in {self.seconds:.1f} s",
            "statuses: " + ", ".join(f"{status}: {n}" for status, n in sorted(self.statuses.items())),
            (
                f"5xx answers: {fivexx}; undocumented 5xx: {self.count('5xx')}; non-DynamoDB error bodies: "
                f"{self.count('not DynamoDB-shaped')}; bad checksums: {self.count('bad crc32')}; "
                f"hangs: {self.count('hang')}"
            ),
            f"distinct traceback (5xx) sites in the region log: {len(self.sites)}"
            + "".join(f"\n  {site} (x{n})" for site, n in self.sites.items()),
            f"region alive: {self.alive}; canaries intact: {self.canaries_intact}; region log: {self.log_bytes} bytes",
        ]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- the client


class Connection:
    """A raw HTTP/1.1 client connection: bytes out, answers (status, headers, body) parsed back."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=ANSWER_TIMEOUT_S)
        self.buffer = b""
        self.closed = False

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError:  # the server closed first (it may refuse before reading everything): read what it said
            self.closed = True

    def half_close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def answers(self, wanted: int, first_timeout: float, idle_timeout: float) -> tuple[list[Answer], bool]:
        """Up to `wanted` answers; (answers, whether the wait timed out with the connection still open)."""
        got: list[Answer] = []
        while len(got) < wanted:
            answer = self._parse()
            if answer is not None:
                if 100 <= answer.status < 200:
                    continue
                got.append(answer)
                continue
            if self.closed:
                return got, False
            self.sock.settimeout(first_timeout if not got else idle_timeout)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return got, True
            except OSError:
                self.closed = True
                continue
            if not data:
                self.closed = True
            self.buffer += data
        return got, False

    def wait_closed(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except TimeoutError:
                return False
            except OSError:
                return True
            if not data:
                return True
        return True

    def _parse(self) -> Answer | None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return None
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if 100 <= status < 200:
            self.buffer = self.buffer[end + 4 :]
            return Answer(status, headers, b"")
        length = headers.get("content-length")
        if length is None or not length.isdigit():
            if not self.closed:
                return None  # the body runs to the close
            body, self.buffer = self.buffer[end + 4 :], b""
            return Answer(status, headers, body)
        stop = end + 4 + int(length)
        if len(self.buffer) < stop:
            return None
        body, self.buffer = self.buffer[end + 4 : stop], self.buffer[stop:]
        return Answer(status, headers, body)

    def close(self) -> None:
        self.sock.close()


def call(address: tuple[str, int], operation: str, body: dict, service: str = "DynamoDB_20120810") -> tuple[int, dict]:
    """One well-formed DynamoDB (or Streams) call on its own connection (setup and checks, not fuzz)."""
    connection = Connection(address)
    try:
        connection.send(request_bytes(f"{service}.{operation}", json.dumps(body).encode()))
        (answer,), _ = connection.answers(1, ANSWER_TIMEOUT_S, ANSWER_TIMEOUT_S)
        return answer.status, json.loads(answer.body)
    finally:
        connection.close()


# --------------------------------------------------------------------------------------------------- judging


# Operations DynamoDB answers with an empty 200 body (conformance-notes R13).
EMPTY_ANSWERS = frozenset({"TagResource", "UntagResource"})


def judge(request: object, answer: Answer, allowed_5xx: frozenset[str], dynamodb_post: bool) -> list[Failure]:
    failures = []
    shown = repr(request)
    error_type = None
    if answer.status >= 400:
        shaped = answer.status == 404 and answer.body == NOT_FOUND_BODY
        if not shaped:
            try:
                document = json.loads(answer.body)
            except ValueError:
                document = None
            if isinstance(document, dict) and isinstance(document.get("__type"), str):
                error_type = document["__type"]
                messages = [document[k] for k in ("message", "Message") if k in document]
                shaped = bool(ERROR_TYPE.fullmatch(error_type)) and all(isinstance(m, str) for m in messages)
        if not shaped:
            failures.append(Failure("not DynamoDB-shaped", shown, repr(answer)))
        elif "x-amz-crc32" not in answer.headers or answer.headers["x-amz-crc32"] != str(zlib.crc32(answer.body)):
            failures.append(Failure("bad crc32", shown, f"{answer!r} {answer.headers}"))
    elif answer.status == 200 and dynamodb_post and not (
        answer.body == b"" and str(getattr(request, "target", "")).rpartition(".")[2] in EMPTY_ANSWERS
    ):
        try:
            document = json.loads(answer.body)
        except ValueError:
            document = None
        if not isinstance(document, dict):
            failures.append(Failure("200 without a JSON object", shown, repr(answer)))
    if answer.status >= 500 and (error_type or "").rsplit("#", 1)[-1] not in allowed_5xx:
        failures.append(Failure("5xx", shown, repr(answer)))
    return failures


def sites_in_log(text: str) -> Counter:
    """The innermost project frame and the exception of every traceback in a region log."""
    found: Counter = Counter()
    for block in text.split("Traceback (most recent call last):")[1:]:
        lines = []
        for line in block.splitlines()[1:]:
            if re.match(r"\d{4}-\d\d-\d\d ", line):
                break
            lines.append(line)
        frames = re.findall(r'File "([^"]*globaltables/[^"]*)", line (\d+), in (\S+)', "\n".join(lines))
        exception = next((line for line in reversed(lines) if line.strip() and not line.startswith(" ")), "?")
        if exception.startswith(("During handling of the above exception", "The above exception was")):
            continue  # the context of a chained exception: its last block is the one that reached the server
        if frames:
            path, line, function = frames[-1]
            where = path.split("globaltables/", 1)[1]
            found[f"{where}:{line} in {function}: {exception.split(':', 1)[0]}"] += 1
        else:
            found[f"(no project frame): {exception[:120]}"] += 1
    return found


# ---------------------------------------------------------------------------------------------------- canaries


def canary_items() -> list[dict]:
    items = []
    for i in range(20):
        items.append({
            "pk": {"S": f"canary-{i:02d}"},
            "n": {"N": str(i * 7)},
            "s": {"S": "é" * i or "x"},
            "l": {"L": [{"N": str(i)}, {"M": {"deep": {"BOOL": i % 2 == 0}}}]},
            "ss": {"SS": [f"a{i}", f"b{i}"]},
        })  # fmt: skip
    return items


def prepare(address: tuple[str, int], canary_table: str | None) -> None:
    """The fuzz tables (the generator names them; they may exist already) and the canary table (it never does).
    Without `canary_table`: the fuzz tables again, if fuzz requests deleted them."""
    hash_key = {"KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}]}
    definitions = [{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "v")]
    tables = {
        canary_table: {**hash_key, "AttributeDefinitions": definitions[:1]},
        FUZZ_TABLES[0]: {**hash_key, "AttributeDefinitions": definitions[:1],
                         "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}},
        FUZZ_TABLES[1]: {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": definitions,
            "GlobalSecondaryIndexes": [{"IndexName": "byV", "KeySchema": [{"AttributeName": "v", "KeyType": "HASH"}],
                                        "Projection": {"ProjectionType": "ALL"}}],
            "LocalSecondaryIndexes": [{"IndexName": "local", "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "v", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
        },
    }  # fmt: skip
    for name, definition in tables.items():
        if name is None:
            continue
        status, answer = call(address, "CreateTable", {"TableName": name, "BillingMode": "PAY_PER_REQUEST", **definition})
        assert status == 200 or (name != canary_table and "ResourceInUse" in answer["__type"]), answer
    if canary_table is None:
        return
    for item in canary_items():
        assert call(address, "PutItem", {"TableName": canary_table, "Item": item})[0] == 200
    for i in range(10):
        call(address, "PutItem", {"TableName": FUZZ_TABLES[0], "Item": {"pk": {"S": "a" if i == 0 else f"k{i}"},
                                                                          "v": {"N": str(i)}}})  # fmt: skip
        call(address, "PutItem", {"TableName": FUZZ_TABLES[1], "Item": {"pk": {"S": "a"}, "sk": {"S": f"s{i}"},
                                                                          "v": {"S": f"v{i % 3}"}}})  # fmt: skip


def stream_values(address: tuple[str, int]) -> dict[str, str]:
    """A real stream ARN, shard id and shard iterator of the fuzz tables, for Streams requests to reach records."""
    status, answer = call(address, "DescribeTable", {"TableName": FUZZ_TABLES[0]})
    arn = answer.get("Table", {}).get("LatestStreamArn") if status == 200 else None
    if arn is None:
        return {}
    streams = "DynamoDBStreams_20120810"
    status, answer = call(address, "DescribeStream", {"StreamArn": arn}, streams)
    shards = answer.get("StreamDescription", {}).get("Shards", []) if status == 200 else []
    if not shards:
        return {"StreamArn": arn}
    shard = shards[0]["ShardId"]
    request = {"StreamArn": arn, "ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}
    status, answer = call(address, "GetShardIterator", request, streams)
    values = {"StreamArn": arn, "ShardId": shard, "ExclusiveStartShardId": shard}
    if status == 200:
        values["ShardIterator"] = answer["ShardIterator"]
    sequence = shards[0].get("SequenceNumberRange", {}).get("StartingSequenceNumber")
    if sequence:
        values["SequenceNumber"] = sequence
    return values


def canaries_intact(address: tuple[str, int], canary_table: str) -> bool:
    status, answer = call(address, "Scan", {"TableName": canary_table, "ConsistentRead": True})
    if status != 200:
        return False
    items = sorted(answer["Items"], key=lambda item: item["pk"]["S"])
    expected = canary_items()
    for item in expected:
        item["ss"]["SS"].sort()
    for item in items:
        item.get("ss", {}).get("SS", []).sort()
    return items == expected


def alive(address: tuple[str, int]) -> bool:
    try:
        connection = Connection(address)
        try:
            connection.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            got, _ = connection.answers(1, ANSWER_TIMEOUT_S, ANSWER_TIMEOUT_S)
            return bool(got) and got[0].status == 200 and call(address, "ListTables", {})[0] == 200
        finally:
            connection.close()
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------------- a run


def run_fuzz(
    address: tuple[str, int],
    seed: int,
    count: int,
    log_path: Path | None = None,
    byte_share: float = 0.2,
    allowed_5xx: frozenset[str] = frozenset(),
    process_alive=lambda: True,
    progress=None,
) -> FuzzReport:
    """Send `count` fuzz requests (a `byte_share` of them byte-level cases), seeded by `seed`; judge everything."""
    started = time.monotonic()
    rng = random.Random(seed)
    requests = RequestFuzzer(random.Random(rng.getrandbits(64)))

    def plausible() -> tuple[str, bytes]:
        made = requests.request()
        return made.target, made.body

    cases = ByteFuzzer(random.Random(rng.getrandbits(64)), plausible)
    report = FuzzReport(seed)
    canary_table = f"canary-{seed}-{time.time_ns()}"  # a name no fuzz request can draw
    prepare(address, canary_table)
    requests.known.update(stream_values(address))
    connection: Connection | None = None
    for n in range(count):
        if progress is not None and n and n % 5000 == 0:
            progress(n)
        if n and n % 250 == 0:
            prepare(address, None)
        report.requests += 1
        if rng.random() < byte_share:
            report.byte_cases += 1
            run_byte_case(address, cases.case(), report, allowed_5xx)
            continue
        request = requests.request()
        if connection is None or connection.closed:
            if connection is not None:
                connection.close()
            connection = Connection(address)
        connection.send(request_bytes(request.target, request.body))
        got, timed_out = connection.answers(1, ANSWER_TIMEOUT_S, ANSWER_TIMEOUT_S)
        if not got:
            if timed_out:
                report.failures.append(Failure("hang", repr(request), "no answer"))
            else:
                report.failures.append(Failure("closed without an answer", repr(request), ""))
            connection.close()
            connection = None
            if not process_alive():
                break
            continue
        report.statuses[got[0].status] += 1
        report.failures.extend(judge(request, got[0], allowed_5xx, dynamodb_post=True))
    if connection is not None:
        connection.close()
    report.alive = process_alive() and alive(address)
    report.canaries_intact = report.alive and canaries_intact(address, canary_table)
    if log_path is not None:
        text = Path(log_path).read_text(errors="replace")
        report.log_bytes = len(text.encode())
        report.sites = sites_in_log(text)
    report.seconds = time.monotonic() - started
    return report


def run_byte_case(address: tuple[str, int], case: ByteCase, report: FuzzReport, allowed_5xx: frozenset[str]) -> None:
    connection = Connection(address)
    try:
        for i, chunk in enumerate(case.chunks):
            if i:
                time.sleep(0.002)
            connection.send(chunk)
        if not case.complete:
            connection.half_close()
            got, _ = connection.answers(64, CLOSE_TIMEOUT_S, MORE_ANSWERS_IDLE_S)
            if not connection.closed and not connection.wait_closed(CLOSE_TIMEOUT_S):
                report.failures.append(Failure("hang", repr(case), "half-closed connection left open"))
        else:
            wanted = max(1, b"".join(case.chunks).count(b" HTTP/"))
            got, timed_out = connection.answers(wanted, ANSWER_TIMEOUT_S, MORE_ANSWERS_IDLE_S)
            if not got and timed_out:
                report.failures.append(Failure("hang", repr(case), "no answer and still open"))
        for answer in got:
            report.statuses[answer.status] += 1
            report.failures.extend(judge(case, answer, allowed_5xx, dynamodb_post=False))
    finally:
        connection.close()

