"""Byte-level fuzz cases: HTTP/1.1 framing as an attacker or a broken client writes it.

A case is the chunks one connection writes (each written, then a short pause, so the server sees them apart), and
whether the last request is complete (the client then waits for answers) or not (the client half-closes and only
the close is awaited: a request missing its end can get no answer). Cases cover: bad, negative, huge and repeated
Content-Length; Content-Length shorter or longer than the body; chunked bodies with bad, huge or missing sizes and
bad trailers; header lines without a colon, with NUL or other control bytes, obsolete folding, bad names; HTTP
versions 0.9 to 3, the HTTP/2 preface, TLS bytes; oversized and numerous headers; truncation anywhere; pipelining
of several requests in one write, some malformed; writes split at random byte offsets; other methods, paths,
media types and Expect: 100-continue.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass



def auth() -> bytes:
    """A well-formed signature for us-east-1 at this moment: the region checks the signing date against a 5-minute
    window by its own clock, so it is taken when a request is framed (the seed decides everything else)."""
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()).encode()
    return (
        b"Authorization: AWS4-HMAC-SHA256 Credential=testing/" + date[:8] + b"/us-east-1/dynamodb/aws4_request, "
        b"SignedHeaders=host;x-amz-date;x-amz-target, Signature=0000\r\nX-Amz-Date: " + date + b"\r\n"
    )


def request_bytes(target: str, body: bytes, extra: bytes = b"", content_type: bytes = b"application/x-amz-json-1.0",
                  method: bytes = b"POST", path: bytes = b"/", version: bytes = b"HTTP/1.1",
                  length: bytes | None = None) -> bytes:  # fmt: skip
    """One DynamoDB request as a client frames it (with Content-Length `length`, default the body's)."""
    declared = str(len(body)).encode() if length is None else length
    head = (
        method + b" " + path + b" " + version + b"\r\nHost: 127.0.0.1\r\nX-Amz-Target: " + target.encode()
        + b"\r\nContent-Type: " + content_type + b"\r\n" + auth() + extra
    )  # fmt: skip
    if declared != b"-":
        head += b"Content-Length: " + declared + b"\r\n"
    return head + b"\r\n" + body


@dataclass
class ByteCase:
    chunks: list[bytes]
    complete: bool  # whether every request in it is whole (answers are awaited) or the client half-closes
    description: str

    def __repr__(self) -> str:
        joined = b"".join(self.chunks)
        return f"<{self.description}: {len(joined)} bytes {joined[:240]!r}>"


class ByteFuzzer:
    """Seeded byte-level cases around plausible requests (`body_of` gives a target and a JSON body)."""

    def __init__(self, rng: random.Random, body_of) -> None:
        self.rng = rng
        self.body_of = body_of

    def case(self) -> ByteCase:
        rng = self.rng
        target, body = self.body_of()
        good = request_bytes(target, body)
        kind = rng.randrange(24)
        if kind == 0:
            return ByteCase([request_bytes(target, body, length=rng.choice(
                (b"abc", b"-1", b"+2", b"0x10", b"1 2", b"99999999999999999999", b"", b" 2", b"2,2")))], True,
                "bad Content-Length")  # fmt: skip
        if kind == 1:
            return ByteCase([request_bytes(target, body, extra=b"Content-Length: %d\r\n" % rng.choice(
                (len(body), len(body) + 1)))], True, "repeated Content-Length")  # fmt: skip
        if kind == 2:
            short = max(0, len(body) - rng.randrange(1, 5))
            return ByteCase([request_bytes(target, body, length=str(short).encode())], True, "Content-Length short")
        if kind == 3:
            return ByteCase([request_bytes(target, body, length=str(len(body) + 7).encode())], False,
                            "Content-Length long (truncated body)")  # fmt: skip
        if kind == 4:
            return ByteCase([self.chunked(target, body, good=True)], True, "chunked")
        if kind == 5:
            return ByteCase([self.chunked(target, body, good=False)], True, "bad chunked")
        if kind == 6:
            line = rng.choice((b"BogusHeader", b"Bad Name: x", b": novalue", b"X-A:\x00", b"X-\x01: a", b"X-A: a\x00b",
                               b"X-A: \x7f", b"\xff\xfe: x", b"X-A: a\rb", b"X-A"))  # fmt: skip
            return ByteCase([request_bytes(target, body, extra=line + b"\r\n")], True, "bad header line")
        if kind == 7:
            return ByteCase([request_bytes(target, body, extra=b"X-A: a\r\n\tfolded\r\n")], True, "obsolete folding")
        if kind == 8:
            version = rng.choice((b"HTTP/0.9", b"HTTP/1.0", b"HTTP/1.2", b"HTTP/1.7", b"HTTP/2.0", b"HTTP/3",
                                  b"HTTP/1.1.1", b"http/1.1", b"HTTP/11", b"HTTPS/1.1", b""))  # fmt: skip
            return ByteCase([request_bytes(target, body, version=version)], True, f"version {version!r}")
        if kind == 9:
            return ByteCase([b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + rng.randbytes(rng.randrange(0, 64))], True,
                            "HTTP/2 preface")  # fmt: skip
        if kind == 10:
            return ByteCase([b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + rng.randbytes(40)], True, "TLS hello")
        if kind == 11:
            size = rng.choice((8000, 8190, 8191, 9000, 70_000))
            return ByteCase([request_bytes(target, body, extra=b"X-Big: " + b"a" * size + b"\r\n")], True,
                            f"header of {size} bytes")  # fmt: skip
        if kind == 12:
            count = rng.choice((100, 127, 128, 129, 500))
            extra = b"".join(b"X-%d: v\r\n" % i for i in range(count))
            return ByteCase([request_bytes(target, body, extra=extra)], True, f"{count} headers")
        if kind == 13:
            cut = rng.randrange(1, len(good))
            return ByteCase([good[:cut]], False, f"truncated at byte {cut}")
        if kind == 14:
            requests = [good if rng.random() < 0.7 else self.mangle(good) for _ in range(rng.randrange(2, 6))]
            return ByteCase([b"".join(requests)], True, f"{len(requests)} pipelined")
        if kind == 15:
            data = b"".join(good for _ in range(rng.randrange(1, 4)))
            cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(1, 6))))
            chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
            return ByteCase(chunks, True, f"split in {len(chunks)} writes")
        if kind == 16:
            method = rng.choice((b"GET", b"PUT", b"DELETE", b"OPTIONS", b"PATCH", b"post", b"BREW", b"P\x00ST"))
            return ByteCase([request_bytes(target, body, method=method)], True, f"method {method!r}")
        if kind == 17:
            path = rng.choice((b"/x", b"//", b"/?X-Amz-Algorithm=AWS4-HMAC-SHA256", b"http://127.0.0.1/", b"*",
                               b"/%00", b"/" + b"a" * 9000, b"/control/status", b"/replication", b"/metrics"))  # fmt: skip
            return ByteCase([request_bytes(target, body, path=path)], True, f"path {path[:30]!r}")
        if kind == 18:
            media = rng.choice((b"application/json", b"text/plain", b"application/x-amz-json-1.1",
                                b"application/json; charset=utf-8", b"APPLICATION/JSON", b""))  # fmt: skip
            return ByteCase([request_bytes(target, body, content_type=media)], True, f"media type {media!r}")
        if kind == 19:
            head, _, rest = request_bytes(target, body, extra=b"Expect: 100-continue\r\n").partition(b"\r\n\r\n")
            return ByteCase([head + b"\r\n\r\n", rest], True, "Expect: 100-continue")
        if kind == 20:
            return ByteCase([request_bytes(target, body, extra=b"Connection: close\r\n")], True, "Connection: close")
        if kind == 21:
            return ByteCase([rng.randbytes(rng.randrange(1, 200))], False, "random bytes")
        if kind == 22:
            return ByteCase([request_bytes(target, body, length=b"-", extra=rng.choice(
                (b"", b"Transfer-Encoding: identity\r\n", b"Transfer-Encoding: gzip, chunked\r\n")))], False,
                "no Content-Length")  # fmt: skip
        return ByteCase([good], True, "plain")

    def chunked(self, target: str, body: bytes, good: bool) -> bytes:
        rng = self.rng
        head = request_bytes(target, b"", length=b"-", extra=b"Transfer-Encoding: chunked\r\n")
        pieces = []
        rest = body
        while rest:
            size = rng.randrange(1, max(2, len(rest) + 1))
            pieces.append(b"%x\r\n%s\r\n" % (size, rest[:size]))
            rest = rest[size:]
        ending = b"0\r\n\r\n"
        if not good:
            broken = rng.choice((b"zz\r\n", b"ffffffffffffffffffff\r\n", b"-1\r\n", b"5\r\nabcdefgh\r\n", b"1;ext=\x00\r\na\r\n",
                                 b"0\r\nTrailer\r\n\r\n", b"2 \r\nab\r\n", b"\r\n"))  # fmt: skip
            pieces.insert(rng.randrange(len(pieces) + 1), broken)
        return head + b"".join(pieces) + ending

    def mangle(self, request: bytes) -> bytes:
        rng = self.rng
        at = rng.randrange(len(request))
        return request[:at] + rng.choice((b"\x00", b"\r\n", b" ", b":", b"\xff", b"")) + request[at + 1 :]
