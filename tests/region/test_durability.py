"""Crash safety and clean shutdown of a region process on a data dir.

An acknowledged write is durable: it survives `kill -9` of the region at any moment after the acknowledgement,
and a restart on the same data dir serves it. SIGTERM and SIGINT stop the region cleanly (exit 0, port closed).
"""

from __future__ import annotations

import re
import signal
import threading
import urllib.request

import pytest
from botocore.exceptions import BotoCoreError

from region_process import RegionProcess, make_client, port_open, wait_until

ITEMS = 200


def create_table(client, name: str) -> None:
    client.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 50})


def item(i: int) -> dict:
    return {
        "pk": {"S": f"p{i % 17}"},
        "sk": {"N": str(i)},
        "payload": {"S": "x" * (i % 100)},
        "nested": {"M": {"list": {"L": [{"N": str(i)}, {"BOOL": i % 2 == 0}, {"NULL": True}]}}},
        "tags": {"SS": [f"t{i}", "all"]},
    }


def key(i: int) -> dict:
    return {"pk": {"S": f"p{i % 17}"}, "sk": {"N": str(i)}}


def read_back(client, table: str, keys: list[int]) -> dict[int, dict | None]:
    return {i: client.get_item(TableName=table, Key=key(i), ConsistentRead=True).get("Item") for i in keys}


def normalised(value: dict) -> dict:
    """Sets come back in no particular order."""
    return {k: ({"SS": sorted(v["SS"])} if "SS" in v else v) for k, v in value.items()}


def test_acknowledged_writes_survive_kill_9(region_factory, tmp_path, unique_table_name):
    data_dir = tmp_path / "data"
    region = region_factory(data_dir=data_dir)
    client = make_client(region.start())
    table = unique_table_name("durable")
    create_table(client, table)
    big = {**item(-1), "payload": {"S": "y" * 350_000}}  # one item near the 400 KB limit
    client.put_item(TableName=table, Item=big)
    for i in range(ITEMS):
        client.put_item(TableName=table, Item=item(i))
    client.put_item(TableName=table, Item={**item(5), "payload": {"S": "overwritten"}})
    client.delete_item(TableName=table, Key=key(7))
    endpoint = region.endpoint
    region.kill()  # right after the last acknowledgement: nothing gets a chance to flush

    assert region.restart() == endpoint  # the port is free again at once
    client = make_client(endpoint)
    assert client.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"
    expected = {i: item(i) for i in range(ITEMS)}
    expected[5] = {**item(5), "payload": {"S": "overwritten"}}
    expected[7] = None
    expected[-1] = big
    got = read_back(client, table, list(expected))
    missing = [i for i in expected if (got[i] and normalised(got[i])) != (expected[i] and normalised(expected[i]))]
    assert not missing, f"items lost or wrong after kill -9: {missing[:20]}"


def test_writes_acknowledged_under_load_survive_kill_9(region_factory, tmp_path, unique_table_name):
    # The kill lands while writes are in flight: every acknowledged one must be there after the restart; the
    # write in flight at the moment of the kill may or may not be.
    region = region_factory(data_dir=tmp_path / "data")
    endpoint = region.start()
    table = unique_table_name("load")
    create_table(make_client(endpoint), table)
    acknowledged: list[int] = []
    enough = threading.Event()

    def writer() -> None:
        client = make_client(endpoint)
        try:
            for i in range(100_000):
                client.put_item(TableName=table, Item=item(i))
                acknowledged.append(i)
                if len(acknowledged) >= 150:
                    enough.set()
        except BotoCoreError:  # the connection died with the region: expected
            return
        finally:
            enough.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    assert enough.wait(timeout=60), "the writer made no progress"
    region.kill()
    thread.join(timeout=60)
    assert not thread.is_alive()

    client = make_client(region.start())
    got = read_back(client, table, list(acknowledged))
    lost = [i for i in acknowledged if got[i] is None]
    assert len(acknowledged) >= 150 and not lost, f"lost {len(lost)} of {len(acknowledged)}: {lost[:20]}"


def group_commit_largest(endpoint: str) -> int:
    """The most writes one group commit of the region held so far (its /metrics)."""
    with urllib.request.urlopen(endpoint + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    match = re.search(r"^globaltables_group_commit_largest (\d+)$", text, re.MULTILINE)
    assert match, "the region reports no group commits"
    return int(match.group(1))


def test_kill_9_during_grouped_commits_keeps_every_acknowledged_write(region_factory, tmp_path, unique_table_name):
    # Many concurrent writers, so writes are committed in groups (region/group_commit.py); the kill lands while
    # groups are being committed. Every acknowledged write must survive: a write is acknowledged only once the
    # group holding it committed, so what was acknowledged is a subset of what survived.
    region = region_factory(data_dir=tmp_path / "data")
    endpoint = region.start()
    table = unique_table_name("grouped")
    create_table(make_client(endpoint), table)
    writers = 16
    acknowledged: list[int] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(slot: int) -> None:
        client = make_client(endpoint)
        try:
            for n in range(100_000):
                if stop.is_set():
                    return
                i = n * writers + slot
                client.put_item(TableName=table, Item=item(i))
                with lock:
                    acknowledged.append(i)
        except BotoCoreError:  # the connection died with the region: expected
            return

    threads = [threading.Thread(target=writer, args=(slot,), daemon=True) for slot in range(writers)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(acknowledged) >= 400 and group_commit_largest(endpoint) > 1, 120,
                   "writes committed in groups of more than one", interval=0.2)
        region.kill()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    with lock:
        acked = list(acknowledged)

    client = make_client(region.start())
    got = read_back(client, table, acked)
    lost = [i for i in acked if got[i] is None]
    assert not lost, f"lost {len(lost)} of {len(acked)} acknowledged writes: {lost[:20]}"
    wrong = [i for i in acked if normalised(got[i]) != normalised(item(i))]
    assert not wrong, f"acknowledged writes read back wrong: {wrong[:20]}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_stops_cleanly(region_factory, tmp_path, unique_table_name, sig):
    region = region_factory(data_dir=tmp_path / "data")
    client = make_client(region.start())
    table = unique_table_name("stop")
    create_table(client, table)
    client.put_item(TableName=table, Item=item(1))
    address = region.address

    assert region.stop(sig) == 0, region.log_tail()
    assert not port_open(*address)

    client = make_client(region.start())  # the data dir is free again and the data is there
    assert client.get_item(TableName=table, Key=key(1), ConsistentRead=True)["Item"]["sk"] == {"N": "1"}


def test_one_data_dir_serves_one_region_process(region_factory, tmp_path):
    data_dir = tmp_path / "data"
    first = region_factory(data_dir=data_dir)
    first.start()
    second = region_factory(data_dir=data_dir)
    with pytest.raises(RuntimeError, match="in use by another region process"):
        second.start()
    assert second.process.returncode == 1
    wait_until(lambda: port_open(*first.address), 10, "the first region to keep answering")
    assert isinstance(first, RegionProcess)
