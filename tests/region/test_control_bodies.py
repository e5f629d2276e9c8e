"""The control API's request bodies, as declared in region/control.py: parsed whole or refused naming every bad field
(the route answers the refusal with 400 JSON and changes nothing)."""

from __future__ import annotations

import pytest

from globaltables.region.control import BadRequest, checked, fault_spec, peers_spec
from globaltables.region.http_transport import LinkDelay
from globaltables.runtime.link import LinkSettings

PEERS = ("eu-west-1", "ap-southeast-1")


def test_a_good_faults_body_is_parsed_to_what_the_host_applies():
    parsed = checked(
        {
            "grudges": ["eu-west-1"],
            "latency": {"eu-west-1": {"latency_ms": 200}, "ap-southeast-1": None},
            "links": {"eu-west-1": {"loss": 0.2, "loss_burst": 4, "stalled": True}, "ap-southeast-1": None},
            "clock_offset_ms": None,
            "clock": {"drift_ppm": 200, "strobe": {"delta_ms": -5, "period_ms": 100}},
        },
        fault_spec(PEERS),
        noun="fault kind",
    )
    assert parsed["heal"] is False and parsed["grudges"] == ["eu-west-1"]
    assert parsed["latency"] == {"eu-west-1": LinkDelay(200.0, 0.0), "ap-southeast-1": None}
    assert parsed["links"] == {"eu-west-1": LinkSettings(loss=0.2, loss_burst=4, stalled=True), "ap-southeast-1": None}
    assert parsed["clock_offset_ms"] is None
    assert parsed["clock"] == {"drift_ppm": 200.0, "strobe": (-5.0, 100.0)}


@pytest.mark.parametrize(
    "body,messages",
    [
        ({"explode": True}, ["explode: unknown fault kind; allowed fault kinds are heal, grudges"]),
        ({"heal": "yes"}, ["heal: expected true or false, got a string"]),
        ({"grudges": ["mars-north-1"]}, ["grudges[0]: unknown region 'mars-north-1'; peers are ap-southeast-1, eu-west-1"]),
        ({"latency": {"eu-west-1": {"latency_ms": -1, "jiter_ms": 2}}},
         ["latency.eu-west-1.jiter_ms: unknown field", "latency.eu-west-1.latency_ms: must be at least 0, got -1"]),
        ({"links": {"eu-west-1": {"loss": 1.5, "latency_ms": 5}}},
         ["links.eu-west-1.latency_ms: unknown field", "links.eu-west-1.loss: must be at most 1, got 1.5"]),
        ({"links": {"eu-west-1": {"loss": 1, "loss_burst": 3}}}, ["links.eu-west-1: loss_burst: a loss of 1 is not bursty"]),
        ({"clock": {"strobe": {"delta_ms": 5, "period_ms": 0}}}, ["clock.strobe.period_ms: must be greater than 0, got 0"]),
        ({"clock": {"strobe": {"delta_ms": 5}}}, ["clock.strobe.period_ms: required"]),
        ({"clock_offset_ms": "soon"}, ["clock_offset_ms: expected a number, got a string"]),
        ({"planted": ["no-such-bug"]}, ["planted[0]: 'no-such-bug' is not allowed; use one of"]),
        ({"held_replication": {"Orders": "eu-west-1"}}, ["held_replication.Orders: expected a list of region names"]),
    ],
)  # fmt: skip
def test_a_bad_faults_body_is_refused_naming_each_field(body, messages):
    with pytest.raises(BadRequest) as refused:
        checked(body, fault_spec(PEERS), noun="fault kind")
    for message in messages:
        assert message in str(refused.value)


def test_peer_endpoints_are_urls_of_known_peers():
    assert checked({"endpoints": {"eu-west-1": "http://127.0.0.1:8001", "ap-southeast-1": None}}, peers_spec(PEERS))
    for body, message in [
        ({}, "endpoints: required"),
        ({"endpoints": {"eu-west-1": "ftp://x"}}, "endpoints.eu-west-1: expected an http:// URL, got 'ftp://x'"),
        ({"endpoints": {"mars-north-1": None}}, "endpoints.mars-north-1: unknown region 'mars-north-1'"),
        ({"endpoints": {}, "extra": 1}, "extra: unknown field"),
    ]:
        with pytest.raises(BadRequest, match=message.replace("(", r"\(").replace(".", r"\.")):
            checked(body, peers_spec(PEERS))
