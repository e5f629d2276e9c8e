"""The LWW checker passes on correct outcomes and names the key and the operations on planted bugs."""

from __future__ import annotations

import pytest

from globaltables.chaos.checkers.lww import check_lww, parse_version
from globaltables.chaos.history import History, key_id
from globaltables.runtime.rng import Rng

REGIONS = ("ap-southeast-1", "eu-west-1", "us-east-1")


def version(physical: int, logical: int, region: str) -> str:
    return f"{physical:016d}.{logical:06d}/{region}"


def item(key: str, value: str) -> dict:
    return {"pk": {"S": key}, "value": {"S": value}}


def scenario():
    """Three keys with concurrent writes, a delete winner and an update; plus the correct final states."""
    history = History()
    k1a = history.invoke(1, "us-east-1", "put", "T", "k1", "w1")
    k1b = history.invoke(2, "eu-west-1", "put", "T", "k1", "w2")
    history.ok(k1b, version=version(1000, 0, "eu-west-1"))
    history.ok(k1a, version=version(1000, 0, "us-east-1"))  # same HLC: the region breaks the tie -> w1 wins
    k2 = history.invoke(1, "us-east-1", "put", "T", "k2", "w3")
    history.ok(k2, version=version(1001, 0, "us-east-1"))
    k2d = history.invoke(2, "eu-west-1", "delete", "T", "k2")
    history.ok(k2d, version=version(1002, 0, "eu-west-1"))
    k3 = history.invoke(3, "ap-southeast-1", "put", "T", "k3", "w4")
    history.ok(k3, version=version(1003, 0, "ap-southeast-1"))
    k3u = history.invoke(3, "ap-southeast-1", "update", "T", "k3", "w5")
    history.ok(k3u, version=version(1003, 1, "ap-southeast-1"))
    lost = history.invoke(1, "us-east-1", "put", "T", "k3", "w6")
    history.fail(lost, "ConditionalCheckFailedException")
    final = {region: {"T": {"k1": item("k1", "w1"), "k2": None, "k3": item("k3", "w5")}} for region in REGIONS}
    return history, final


def test_passes_on_a_correct_outcome():
    history, final = scenario()
    result = check_lww(history, final)
    assert result.passed, str(result)
    assert result.offending == []


def test_a_replica_missing_one_write_names_the_key():
    history, final = scenario()
    del final["eu-west-1"]["T"]["k3"]  # eu-west-1 dropped the replicated writes to k3
    result = check_lww(history, final)
    assert not result.passed
    assert result.offending_keys() == [("T", "k3")]
    (finding,) = result.offending
    assert finding.problem == "lost-write" and finding.regions == ["eu-west-1"]
    assert [op.value for op in finding.operations] == ["w5", "w5"]
    assert "k3" in str(result)


def test_a_resurrected_delete_fails():
    history, final = scenario()
    final["ap-southeast-1"]["T"]["k2"] = item("k2", "w3")
    result = check_lww(history, final)
    assert not result.passed
    (finding,) = result.offending
    assert (finding.key, finding.problem, finding.regions) == ("k2", "resurrected", ["ap-southeast-1"])
    assert {op.f for op in finding.operations} == {"put", "delete"}


def test_a_wrong_winner_fails_in_the_regions_that_kept_it():
    history, final = scenario()
    final["us-east-1"]["T"]["k1"] = item("k1", "w2")
    final["eu-west-1"]["T"]["k1"] = item("k1", "w2")
    result = check_lww(history, final)
    assert not result.passed
    (finding,) = result.offending
    assert (finding.key, finding.problem) == ("k1", "wrong-winner")
    assert finding.regions == ["eu-west-1", "us-east-1"]
    assert version(1000, 0, "us-east-1") in finding.detail


def test_a_value_no_write_stored_fails():
    history, final = scenario()
    final["us-east-1"]["T"]["k9"] = item("k9", "ghost")
    result = check_lww(history, final)
    assert [(f.key, f.problem) for f in result.offending] == [("k9", "unknown-value")]


def test_info_writes_may_have_won_and_failed_writes_never_count():
    history, final = scenario()
    maybe = history.invoke(4, "us-east-1", "put", "T", "k1", "w7")
    history.info(maybe, "ReadTimeout")
    unfinished = history.invoke(5, "eu-west-1", "delete", "T", "k3")
    final_with_info = {region: {"T": dict(final[region]["T"])} for region in REGIONS}
    final_with_info["us-east-1"]["T"]["k1"] = item("k1", "w7")  # the timed-out write may have won
    final_with_info["eu-west-1"]["T"]["k3"] = None  # the unfinished delete may have won too
    assert check_lww(history, final_with_info).passed
    assert unfinished.type == "invoke"
    # The failed conditional put w6 never applied: holding it is a value no applied write stored.
    final["us-east-1"]["T"]["k3"] = item("k3", "w6")
    assert [f.problem for f in check_lww(history, final).offending] == ["unknown-value"]


def test_version_key_is_pluggable_and_structured_keys_work():
    history = History()
    key = {"pk": {"S": "a"}, "sk": {"N": "1"}}
    first = history.invoke(1, "r1", "put", "T", key, 1)
    history.ok(first, version=((9, 0), "r1"))  # any comparable: ((physical, logical), region)
    second = history.invoke(1, "r2", "put", "T", key, 2)
    history.ok(second, version=((10, 0), "r2"))
    good = {"r1": {"T": {key_id(key): {"value": {"N": "2"}}}}}
    assert check_lww(history, good, version_key=lambda v: v).passed
    bad = {"r1": {"T": {key_id(key): {"value": {"N": "1"}}}}}
    assert check_lww(history, bad, version_key=lambda v: v).offending_keys() == [("T", key_id(key))]


def test_default_version_parsing_splits_region_for_ties():
    assert parse_version("0001.0002/us-east-1") == ("0001.0002", "us-east-1")
    assert parse_version("0001.0002/eu-west-1") < parse_version("0001.0002/us-east-1")


def test_default_version_parsing_orders_real_headers_like_the_versions_they_encode():
    hlc = pytest.importorskip("globaltables.replication.hlc")
    rng = Rng(3)
    versions = [
        hlc.Version(
            hlc.HlcTimestamp(rng.choice([9, 10, 1_700_000_000_000, 10**30]), rng.randrange(3)), rng.choice(REGIONS)
        )
        for _ in range(300)
    ]
    by_header = sorted(versions, key=lambda v: parse_version(v.encode()))
    assert by_header == sorted(versions)
