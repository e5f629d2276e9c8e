"""HTTP content-coding of DynamoDB requests and answers: the one place both HTTP paths (the fast front,
http_front.py, and aiohttp, app.py) decide how a body is decoded and whether an answer is compressed.

Why one module: the front and aiohttp must answer the same bytes with the same bytes. aiohttp's own decoding is
switched off (`make_runner` in app.py passes `auto_decompress=False`), so every request body reaches
`decode_request_body` exactly as it was sent, whichever path read it.

Requests (`Content-Encoding`), as DynamoDB treats them:
* `gzip` (RFC 1952; several concatenated members decode to their concatenation; bytes after a complete member
  that do not start another member are ignored, as DynamoDB ignores them), `deflate` (the zlib format of RFC 1950)
  and `identity`; a list (`gzip, deflate`) names codings in the order they were applied, so they are undone from
  the right. Names are case-insensitive. botocore's request compression sends `Content-Encoding: gzip` for the
  operations its model marks `requestcompression` (botocore pull request #2959; the AWS SDKs and Tools reference
  guide, "Request compression").
* Any other coding, a corrupt or truncated stream, or an empty body declared compressed: HTTP 500, and the request
  is not executed.
* DynamoDB's 16 MiB request limit applies to the decoded size (413, like an oversized plain body); decoding stops
  one byte past the limit, so a small "zip bomb" costs no more memory than a legitimate request.

Answers (`Accept-Encoding`), by DynamoDB's observed negotiation:
* Only bodies over 4096 bytes are ever compressed, and only with a coding the request accepts (gzip or deflate,
  the zlib format); the answer then says so in `Content-Encoding`. `x-amz-crc32` is computed over the bytes sent,
  compressed or not (the AWS SDK for Go v2's DynamoDB customizations: "if the response is gzipped the checksum is of
  the gzipped response").
* Items are split on `,`; empty items are ignored; a coding name is the text before the first `;`, trimmed and
  case-insensitive, and must be exactly `gzip`, `deflate`, `identity` or `*` to count (`"gzip"`, `x-gzip`,
  `gzip br` and `gzip:q=1` name nothing supported).
* An item's weight is the value after the first `q=` in its parameters (so `nq=0` counts, `q =0` does not), read
  as a decimal number with surrounding blanks allowed; anything unreadable weighs 1, above 1 counts as 1, and zero
  or below excludes the coding.
* The heaviest coding wins. On equal weight a coding named in the header beats one only covered by `*`, an earlier
  name beats a later one, and `*` prefers gzip to deflate. `identity` never competes.
"""

from __future__ import annotations

import re
import zlib

from ..engine.errors import InternalServerError
from .wire import MAX_REQUEST_BYTES, RequestEntityTooLargeException

# Answers of this size or smaller are never compressed.
COMPRESS_OVER_BYTES = 4096

GZIP = "gzip"
DEFLATE = "deflate"
IDENTITY = "identity"
_GZIP_MAGIC = b"\x1f\x8b"
# zlib window bits: 16 + 15 reads and writes the gzip container, 15 the zlib container.
_WBITS = {GZIP: 31, DEFLATE: 15}
# The order `*` offers codings in.
_WILDCARD_PREFERENCE = (GZIP, DEFLATE)
# A decimal number as DynamoDB reads a q-value (a Java double literal: optional sign, digits with an optional point,
# an optional exponent, an optional f/d suffix).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?")


# ------------------------------------------------------------------------------------------------- requests


def decode_request_body(raw: bytes, content_encoding: str | None, limit: int = MAX_REQUEST_BYTES) -> bytes:
    """The body as the client wrote it before applying `content_encoding` (None or empty: `raw` as it is)."""
    if not content_encoding:
        return raw
    codings = [name.strip().lower() for name in content_encoding.split(",")]
    body = raw
    for coding in reversed(codings):
        if coding in ("", IDENTITY):
            continue
        wbits = _WBITS.get(coding)
        if wbits is None:
            raise InternalServerError(f"Unsupported Content-Encoding: {coding}")
        body = _inflate(body, coding, wbits, limit)
    return body


def _inflate(data: bytes, coding: str, wbits: int, limit: int) -> bytes:
    if not data:
        raise InternalServerError(f"Empty request body declared as {coding}")
    out = bytearray()
    while True:
        inflater = zlib.decompressobj(wbits)
        try:
            out += inflater.decompress(data, limit + 1 - len(out))  # never 0 (which would mean "no limit")
        except zlib.error:
            raise InternalServerError(f"Corrupt {coding} request body") from None
        if len(out) > limit:
            raise RequestEntityTooLargeException(f"Request body must not exceed {limit} bytes once decoded")
        if not inflater.eof:
            raise InternalServerError(f"Truncated {coding} request body")
        data = inflater.unused_data
        if coding != GZIP or not data.startswith(_GZIP_MAGIC):
            return bytes(out)


# -------------------------------------------------------------------------------------------------- answers


def negotiate(accept_encoding: str | None) -> str | None:
    """The coding an answer over COMPRESS_OVER_BYTES gets for this `Accept-Encoding` (None: not compressed)."""
    if not accept_encoding:
        return None
    best: tuple[float, int, int] | None = None  # (weight, -named-first rank, -position): the greatest wins
    chosen = None
    wildcard = 0.0
    named = set()
    for position, item in enumerate(accept_encoding.split(",")):
        name, _, parameters = item.partition(";")
        name = name.strip().lower()
        if name not in _WBITS and name != "*":
            continue  # identity, codings not served, and malformed names
        weight = _weight(parameters)
        if name == "*":
            wildcard = max(wildcard, weight)
            continue
        named.add(name)
        if weight > 0 and (best is None or (weight, 0, -position) > best):
            best, chosen = (weight, 0, -position), name
    if wildcard > 0:
        for rank, name in enumerate(_WILDCARD_PREFERENCE):
            if name not in named and (best is None or (wildcard, -1, -rank) > best):
                best, chosen = (wildcard, -1, -rank), name
    return chosen


def _weight(parameters: str) -> float:
    at = parameters.find("q=")
    if at < 0:
        return 1.0
    text = parameters[at + 2 :].split(";", 1)[0].strip()
    if _NUMBER.fullmatch(text) is None:
        return 1.0
    return min(float(text.rstrip("fFdD")), 1.0)


def encode_answer(body: bytes, accept_encoding: str | None) -> tuple[bytes, str | None]:
    """(bytes to send, their Content-Encoding or None) for an answer body and the request's Accept-Encoding."""
    if len(body) <= COMPRESS_OVER_BYTES:  # first: most answers are small, and then nothing needs negotiating
        return body, None
    coding = negotiate(accept_encoding)
    if coding is None:
        return body, None
    if coding == GZIP:
        # zlib's gzip header has mtime 0 and no file name: an answer compresses to the same bytes on every path
        compressor = zlib.compressobj(wbits=_WBITS[GZIP])
        return compressor.compress(body) + compressor.flush(), GZIP
    return zlib.compress(body), DEFLATE
