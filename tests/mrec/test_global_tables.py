"""MREC global tables with real processes (`globaltables up`) and boto3: what issue 5 says they must show.

Every test writes its own keys (a per-test prefix) into the topology's `Items` table (hash key `id`). The test
topology links are 20 ms (+ up to 2 ms jitter) one way, 40 ms between us-east-1 and ap-southeast-1.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid

import aiohttp
import pytest
from botocore.exceptions import BotoCoreError, ClientError

from globaltables.runtime.transport import VERSION_HEADER
from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(180)

TABLE = "Items"
CONVERGE_TIMEOUT_S = 30.0
MIN_LATENCY_S = {("us-east-1", "eu-west-1"): 0.020, ("us-east-1", "ap-southeast-1"): 0.040}


def key(name: str) -> dict:
    return {"id": {"S": name}}


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def read(cluster: Cluster, region: str, name: str) -> tuple[dict | None, str | None]:
    """(item or None, version header or None) of one item in one region (eventually consistent, local)."""
    answer = cluster.clients[region].get_item(TableName=TABLE, Key=key(name))
    return answer.get("Item"), answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION_HEADER)


def version_of(answer: dict) -> str:
    version = answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION_HEADER)
    assert version, f"no {VERSION_HEADER} header in {answer['ResponseMetadata']['HTTPHeaders']}"
    return version


def converged(cluster: Cluster, name: str) -> tuple[dict | None, str | None] | None:
    """The common (item, version) when every region holds the same version of the item (or none has it)."""
    states = [read(cluster, region, name) for region in cluster.regions]
    return states[0] if all(state == states[0] for state in states) else None


def wait_converged(cluster: Cluster, name: str, expected_version: str):
    """Wait until every region holds `expected_version` of the item; (item, version)."""

    def done():
        state = converged(cluster, name)
        return state if state is not None and state[1] == expected_version else None

    return wait_until(done, CONVERGE_TIMEOUT_S, f"{name} to converge on {expected_version}")


def race(*calls):
    """Run the calls at (nearly) the same moment on threads; their results (or exceptions), in order."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(index, call):
        barrier.wait()
        try:
            results[index] = call()
        except Exception as error:  # noqa: BLE001 - the test inspects it
            results[index] = error

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


# ---------------------------------------------------------------------------------------------------- basics


def test_up_reports_every_region_and_tables_are_global(cluster: Cluster):
    assert sorted(cluster.regions) == ["ap-southeast-1", "eu-west-1", "us-east-1"]
    assert set(cluster.roles.values()) == {"replica"}
    state = cluster.state()
    for region, entry in state["regions"].items():
        assert entry["running"] and entry["endpoint"] == cluster.endpoints[region] and entry["pid"] > 0
        assert entry["port"] == int(cluster.endpoints[region].rsplit(":", 1)[1])
    assert state["supervisor"]["control_url"].startswith("http://127.0.0.1:")
    assert os.stat(cluster.data_dir / "secret").st_mode & 0o777 == 0o600
    for region in cluster.regions:
        table = cluster.clients[region].describe_table(TableName=TABLE)["Table"]
        assert table["GlobalTableVersion"] == "2019.11.21"
        assert sorted(r["RegionName"] for r in table["Replicas"]) == sorted(cluster.regions)
        assert {r["ReplicaStatus"] for r in table["Replicas"]} == {"ACTIVE"}


def test_write_is_readable_elsewhere_after_at_least_the_link_latency(cluster: Cluster):
    lags = {}
    for (source, target), latency in MIN_LATENCY_S.items():
        name = fresh("lag")
        started = time.monotonic()
        answer = cluster.clients[source].put_item(TableName=TABLE, Item={**key(name), "v": {"S": "hello"}})
        version = version_of(answer)
        # A read that certainly finished before the latency elapsed must not see the write yet.
        early_item, _ = read(cluster, target, name)
        if time.monotonic() - started < latency:
            assert early_item is None, "visible in another region before the link latency"
        item, seen_version = wait_until(
            lambda target=target, name=name: (state := read(cluster, target, name))[0] and state,
            CONVERGE_TIMEOUT_S,
            f"{name} in {target}",
            interval=0.002,
        )
        lags[(source, target)] = elapsed = time.monotonic() - started
        assert elapsed >= latency  # the floor
        assert item["v"] == {"S": "hello"} and seen_version == version
    print(f"observed replication lag (put start to first read showing it): {lags}")


def test_concurrent_writes_to_one_item_converge_on_the_greater_version(cluster: Cluster):
    for round_ in range(5):
        name = fresh("lww")
        results = race(
            lambda name=name: cluster.clients["us-east-1"].put_item(
                TableName=TABLE, Item={**key(name), "v": {"S": "us"}}
            ),
            lambda name=name: cluster.clients["eu-west-1"].put_item(
                TableName=TABLE, Item={**key(name), "v": {"S": "eu"}}
            ),
        )
        versions = {value: version_of(result) for value, result in zip(("us", "eu"), results, strict=True)}
        winner = max(versions, key=versions.get)
        item, version = wait_converged(cluster, name, versions[winner])
        assert version == versions[winner], (round_, versions, version)
        assert item["v"] == {"S": winner}


def test_delete_racing_an_update_converges_the_same_way_everywhere(cluster: Cluster):
    outcomes = set()
    for _ in range(6):
        name = fresh("del")
        first = cluster.clients["us-east-1"].put_item(TableName=TABLE, Item={**key(name), "v": {"N": "0"}})
        wait_converged(cluster, name, version_of(first))
        deleted, updated = race(
            lambda name=name: cluster.clients["eu-west-1"].delete_item(TableName=TABLE, Key=key(name)),
            lambda name=name: cluster.clients["ap-southeast-1"].update_item(
                TableName=TABLE, Key=key(name), UpdateExpression="SET v = :v",
                ExpressionAttributeValues={":v": {"N": "1"}},
            ),
        )  # fmt: skip
        delete_version, update_version = version_of(deleted), version_of(updated)
        expect_deleted = delete_version > update_version

        def settled(name=name, expect_deleted=expect_deleted, update_version=update_version):
            states = [read(cluster, region, name) for region in cluster.regions]
            if expect_deleted:
                return all(item is None for item, _ in states)
            return all(item is not None and version == update_version for item, version in states)

        wait_until(settled, CONVERGE_TIMEOUT_S, f"{name} to converge")
        for region in cluster.regions:
            item, _ = read(cluster, region, name)
            assert (item is None) if expect_deleted else (item["v"] == {"N": "1"})
        outcomes.add("delete" if expect_deleted else "update")
    print(f"delete/update race winners seen: {sorted(outcomes)}")


def test_put_if_absent_raced_in_two_regions_succeeds_in_both_and_converges(cluster: Cluster):
    name = fresh("pia")

    def put_if_absent(region: str):
        return cluster.clients[region].put_item(
            TableName=TABLE, Item={**key(name), "v": {"S": region}}, ConditionExpression="attribute_not_exists(id)"
        )

    results = race(lambda: put_if_absent("us-east-1"), lambda: put_if_absent("ap-southeast-1"))
    for result in results:
        assert not isinstance(result, Exception), result  # conditions are regional: both succeed
    versions = {
        region: version_of(result) for region, result in zip(("us-east-1", "ap-southeast-1"), results, strict=True)
    }
    winner = max(versions, key=versions.get)
    item, version = wait_converged(cluster, name, versions[winner])
    assert version == versions[winner] and item["v"] == {"S": winner}
    # Now present everywhere: the condition fails in every region.
    for region in cluster.regions:
        with pytest.raises(ClientError) as failed:
            put_if_absent(region)
        assert failed.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


# -------------------------------------------------------------------------------------------------- security


def test_replication_and_control_without_the_secret_are_refused_and_change_nothing(cluster: Cluster):
    import asyncio

    from globaltables.runtime.transport import REGION_HEADER, SECRET_HEADER

    target = cluster.endpoints["eu-west-1"]
    before = cluster.status("eu-west-1")["transport"]["rejected_requests"]

    async def attempt(headers):
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(target + "/replication", headers=headers)
            return refused.value.status

    for headers in ({REGION_HEADER: "us-east-1"}, {REGION_HEADER: "us-east-1", SECRET_HEADER: "not-the-secret"}):
        assert asyncio.run(attempt(headers)) == 401
    # The control API too: no fault is set without the secret.
    code, _ = cluster.control(f"{target}/control/faults", {"grudges": ["us-east-1"]}, secret=None)
    assert code == 401
    code, _ = cluster.control(f"{target}/control/status", secret="wrong")
    assert code == 401
    code, _ = cluster.control(cluster.state()["supervisor"]["control_url"] + "/control/regions/eu-west-1/crash", {},
                              secret=None)  # fmt: skip
    assert code == 401
    status = cluster.status("eu-west-1")
    assert status["transport"]["grudges"] == []
    assert status["transport"]["rejected_requests"] == before + 4
    assert cluster.state()["regions"]["eu-west-1"]["running"]
    # Replication still works (nothing was broken by the refused attempts).
    name = fresh("after-refusal")
    cluster.clients["us-east-1"].put_item(TableName=TABLE, Item={**key(name), "v": {"S": "x"}})
    wait_until(lambda: read(cluster, "eu-west-1", name)[0], CONVERGE_TIMEOUT_S, "replication after refusals")


def test_a_secret_header_that_is_not_utf8_is_a_wrong_secret_on_regions_and_the_supervisor(cluster: Cluster):
    # aiohttp keeps such bytes as surrogate escapes; comparing them once raised (500). It is a 401 like any wrong
    # secret, on the replication endpoint, the region's control API and the supervisor's.
    import http.client
    from urllib.parse import urlsplit

    from globaltables.runtime.transport import REGION_HEADER, SECRET_HEADER

    target = cluster.endpoints["eu-west-1"]
    supervisor = cluster.state()["supervisor"]["control_url"]
    for url, method in (
        (target + "/replication", "GET"),
        (target + "/control/status", "GET"),
        (target + "/control/faults", "POST"),
        (supervisor + "/control/regions/eu-west-1/crash", "POST"),
    ):
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            # http.client sends str header values as latin-1: these are the raw bytes ff fe 80, not UTF-8.
            connection.request(method, parts.path, body=b"{}", headers={SECRET_HEADER: "\xff\xfe\x80",
                                                                        REGION_HEADER: "us-east-1"})  # fmt: skip
            assert connection.getresponse().status == 401, url
        finally:
            connection.close()
    assert cluster.state()["regions"]["eu-west-1"]["running"]


# ---------------------------------------------------------------------------------------------------- faults


def test_partition_grudge_holds_writes_back_until_heal(cluster: Cluster):
    cluster.faults("eu-west-1", {"grudges": ["us-east-1"]})
    try:
        name = fresh("part")
        answer = cluster.clients["us-east-1"].put_item(TableName=TABLE, Item={**key(name), "v": {"S": "p"}})
        version = version_of(answer)
        wait_until(lambda: read(cluster, "ap-southeast-1", name)[0], CONVERGE_TIMEOUT_S, "the unpartitioned region")
        time.sleep(0.3)  # well past the 20 ms link: the partitioned region must still not have it
        assert read(cluster, "eu-west-1", name)[0] is None
        assert cluster.status("eu-west-1")["transport"]["peers"]["us-east-1"]["refused_by_grudge"] > 0
    finally:
        cluster.faults("eu-west-1", {"heal": True})
    wait_converged(cluster, name, version)
    assert read(cluster, "eu-west-1", name)[1] == version


def test_faults_with_unknown_regions_are_refused_whole(cluster: Cluster):
    code, answer = cluster.control(
        f"{cluster.endpoints['us-east-1']}/control/faults",
        {"grudges": ["eu-west-1"], "latency": {"mars-north-1": {"latency_ms": 5}}},
    )
    assert code == 400 and "mars-north-1" in answer["error"]
    assert cluster.status("us-east-1")["transport"]["grudges"] == []


# ----------------------------------------------------------------------------------------------------- crash


def test_region_killed_during_a_write_burst_comes_back_and_converges(cluster: Cluster):
    prefix = fresh("crash")
    acknowledged: dict[str, tuple[str, str]] = {}  # key -> (value, version) of writes acknowledged
    uncertain: set[str] = set()  # writes that failed with the region gone: may or may not have applied
    stop = threading.Event()

    def writer(region: str):
        client = cluster.clients[region]
        for index in range(100_000):
            if stop.is_set():
                return
            name = f"{prefix}-{region}-{index}"
            try:
                answer = client.put_item(TableName=TABLE, Item={**key(name), "v": {"S": name}})
            except (ClientError, BotoCoreError):
                uncertain.add(name)
                time.sleep(0.05)
                continue
            acknowledged[name] = (name, version_of(answer))

    threads = [threading.Thread(target=writer, args=(region,)) for region in ("eu-west-1", "us-east-1")]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 150, 60, "a write burst to get going")
        pid = cluster.state()["regions"]["eu-west-1"]["pid"]
        os.kill(pid, signal.SIGKILL)  # mid-burst, no chance to flush anything
        killed_at = len(acknowledged)
        wait_until(lambda: not cluster.state()["regions"]["eu-west-1"]["running"], 30, "the supervisor to notice")
        time.sleep(0.3)  # us-east-1 keeps writing while eu-west-1 is down
        restarted = cluster.supervise("eu-west-1", "restart")
        assert restarted["running"] and restarted["pid"] != pid
        assert restarted["endpoint"] == cluster.endpoints["eu-west-1"]  # same port
        wait_until(lambda: len(acknowledged) >= killed_at + 100, 60, "writes after the restart")
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert any(name.startswith(f"{prefix}-eu-west-1") for name in acknowledged)
    wait_until(cluster.quiesced, CONVERGE_TIMEOUT_S, "every link to be acknowledged up to its log end")
    # Every acknowledged write is in every region with its version (distinct keys: nothing overwrites them).
    scans = {}
    for region in cluster.regions:
        pages = (
            cluster.clients[region]
            .get_paginator("scan")
            .paginate(
                TableName=TABLE, FilterExpression="begins_with(id, :p)", ExpressionAttributeValues={":p": {"S": prefix}}
            )
        )
        scans[region] = {item["id"]["S"]: item["v"]["S"] for page in pages for item in page["Items"]}
    for region, items in scans.items():
        missing = sorted(set(acknowledged) - set(items))
        assert not missing, f"{region} lost acknowledged writes: {missing[:10]}"
        assert set(items) <= set(acknowledged) | uncertain, f"{region} holds writes nobody made"
    assert scans["us-east-1"] == scans["eu-west-1"] == scans["ap-southeast-1"]
    for name in list(acknowledged)[:: max(1, len(acknowledged) // 50)]:
        assert read(cluster, "ap-southeast-1", name)[1] == acknowledged[name][1]
    print(f"crash test: {len(acknowledged)} acknowledged writes, {len(uncertain)} uncertain, all converged")


def test_a_second_up_on_the_same_data_dir_is_refused(cluster: Cluster):
    import subprocess
    import sys

    from mrec_cluster import SRC, TOPOLOGY

    env = {**os.environ, "PYTHONPATH": str(SRC)}
    command = [sys.executable, "-m", "globaltables.cli.main", "up", str(TOPOLOGY), "--data-dir", str(cluster.data_dir)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert result.returncode == 1
    assert result.stdout == ""  # stdout carries only the JSON lines of a successful start
    assert f"PID {cluster.process.pid}" in result.stderr
    assert all(entry["running"] for entry in cluster.state()["regions"].values())  # nothing was disturbed


def test_the_capacity_route_answers_what_metrics_shows_behind_the_secret(cluster: Cluster):
    """GET /control/capacity (what `globaltables run` writes to results.json `capacity`) is capacity_document, the
    numbers /metrics renders; like every control route it needs the secret."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    target = cluster.endpoints["eu-west-1"]
    code, _ = cluster.control(f"{target}/control/capacity", secret="wrong")
    assert code == 401
    code, answer = cluster.control(f"{target}/control/capacity")
    assert code == 200 and answer["region"] == "eu-west-1"
    assert TABLE in answer["tables"] and "indexes" in answer["tables"][TABLE]
    with urllib.request.urlopen(f"{target}/metrics", timeout=30) as response:
        families = {family.name for family in text_string_to_metric_families(response.read().decode())}
    # mrec-test.yaml leaves capacity modelled: the counters are on both (their values move with replication's writes)
    assert answer["modelled"] is True
    assert {"ConsumedWriteCapacityUnits", "WriteThrottleEvents", "WriteKeyRangeThroughputThrottleEvents"} <= set(
        answer["tables"][TABLE]
    )
    assert {"ConsumedWriteCapacityUnits", "WriteThrottleEvents", "WriteKeyRangeThroughputThrottleEvents"} <= families
