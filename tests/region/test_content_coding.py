"""The content-coding rules both HTTP paths share (region/content_coding.py), as pure functions: the edges a wire
test cannot reach cheaply (the exact 16 MiB boundary, bytes after a gzip member, codings applied twice).

Over the wire, against a region process and any other endpoint: tests/conformance/test_http_edges.py.
"""

from __future__ import annotations

import gzip
import zlib

import pytest

from globaltables.engine.errors import InternalServerError
from globaltables.region import wire
from globaltables.region.content_coding import COMPRESS_OVER_BYTES, decode_request_body, encode_answer, negotiate

LIMIT = wire.MAX_REQUEST_BYTES


def test_a_body_of_exactly_16_mib_decoded_passes_and_one_byte_more_is_413():
    exact = b"x" * LIMIT
    assert decode_request_body(gzip.compress(exact), "gzip") == exact
    with pytest.raises(wire.RequestEntityTooLargeException) as caught:
        decode_request_body(gzip.compress(exact + b"x"), "gzip")
    assert caught.value.status == 413


def test_the_limit_counts_every_member_together():
    half = gzip.compress(b"y" * (LIMIT // 2 + 1))
    with pytest.raises(wire.RequestEntityTooLargeException):
        decode_request_body(half + half, "gzip")


def test_bytes_after_a_complete_gzip_member_are_ignored_as_dynamodb_ignores_them():
    assert decode_request_body(gzip.compress(b"{}") + b"trailing junk", "gzip") == b"{}"


def test_a_second_member_that_is_corrupt_is_refused():
    with pytest.raises(InternalServerError):
        decode_request_body(gzip.compress(b"{}") + b"\x1f\x8b\x08\x00junk", "gzip")


def test_codings_are_undone_right_to_left_and_identity_or_empty_items_are_no_ops():
    body = b'{"Limit": 1}'
    assert decode_request_body(zlib.compress(gzip.compress(body)), "gzip, identity,, deflate") == body
    assert decode_request_body(body, "") == body
    assert decode_request_body(body, "Identity") == body


@pytest.mark.parametrize("coding", ["br", "x-gzip", "zstd", "compress", "gzip;q=1"])
def test_any_other_coding_is_500(coding):
    with pytest.raises(InternalServerError) as caught:
        decode_request_body(b"{}", coding)
    assert caught.value.status == 500


def test_answers_are_compressed_only_over_4096_bytes_and_only_when_negotiated():
    small, large = b"s" * COMPRESS_OVER_BYTES, b"l" * (COMPRESS_OVER_BYTES + 1)
    assert encode_answer(small, "gzip") == (small, None)
    assert encode_answer(large, None) == (large, None)
    assert encode_answer(large, "identity") == (large, None)
    sent, coding = encode_answer(large, "gzip")
    assert coding == "gzip" and gzip.decompress(sent) == large
    sent, coding = encode_answer(large, "deflate")
    assert coding == "deflate" and zlib.decompress(sent) == large
    assert encode_answer(large, "gzip") == encode_answer(large, "gzip")  # the same bytes every time


@pytest.mark.parametrize(
    "accept, chosen",
    [("gzip;q=1e-3, deflate;q=1E-4", "gzip"), ("*;q=0.5, deflate;q=0.4", "gzip"), ("gzip;q=0, *", "deflate"),
     ("deflate;q=0, gzip;q=0, *", None)],
)  # fmt: skip
def test_negotiation_beyond_the_observed_table(accept, chosen):
    """Readings the observed table implies (q-values are decimal numbers; `*` covers only the codings not named)."""
    assert negotiate(accept) == chosen
