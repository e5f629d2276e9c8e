"""PartiQL writes on an MREC global table (real processes, `globaltables up`, boto3): they are the item operations'
writes, so they replicate, carry versions and converge like them.

The topology's `Items` table has the hash key `id`; each test writes its own keys.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from botocore.exceptions import ClientError

from globaltables.runtime.transport import VERSION_HEADER
from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(180)

TABLE = "Items"
CONVERGE_TIMEOUT_S = 30.0


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def select(cluster: Cluster, region: str, name: str) -> list[dict]:
    """The item as a PartiQL SELECT in `region` answers it (local, eventually consistent)."""
    statement = f'SELECT * FROM "{TABLE}" WHERE id = ?'
    return cluster.clients[region].execute_statement(Statement=statement, Parameters=[{"S": name}])["Items"]


def everywhere(cluster: Cluster, name: str, expected: list[dict]) -> None:
    for region in cluster.regions:
        wait_until(lambda region=region: select(cluster, region, name) == expected, CONVERGE_TIMEOUT_S,
                   f"{name} as {expected} in {region}")  # fmt: skip


def test_partiql_insert_update_and_delete_arrive_in_every_other_region(cluster: Cluster):
    # Why: a PartiQL write in one region must replicate as its item-API form would, to every replica.
    first, second = cluster.regions[0], cluster.regions[1]
    name = fresh("pql")
    answer = cluster.clients[first].execute_statement(
        Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{name}', 'n': 1, 'tags': <<'a'>>}}"
    )
    versioned = answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION_HEADER)
    assert versioned, "a PartiQL write on a global table is versioned"
    everywhere(cluster, name, [{"id": {"S": name}, "n": {"N": "1"}, "tags": {"SS": ["a"]}}])

    cluster.clients[second].execute_statement(
        Statement=f"UPDATE \"{TABLE}\" SET n = n + 1 SET tags = set_add(tags, <<'b'>>) WHERE id = '{name}'"
    )
    everywhere(cluster, name, [{"id": {"S": name}, "n": {"N": "2"}, "tags": {"SS": ["a", "b"]}}])

    cluster.clients[cluster.regions[-1]].execute_statement(Statement=f"DELETE FROM \"{TABLE}\" WHERE id = '{name}'")
    everywhere(cluster, name, [])


def test_a_partiql_transaction_replicates_every_write(cluster: Cluster):
    # Why: ExecuteTransaction is a TransactWriteItems, whose writes replicate once committed.
    names = [fresh("pqltx") for _ in range(3)]
    cluster.clients[cluster.regions[0]].execute_transaction(
        TransactStatements=[{"Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{n}'}}"} for n in names]
    )
    for n in names:
        everywhere(cluster, n, [{"id": {"S": n}}])


def test_partiql_inserts_raced_in_two_regions_converge_on_one_item(cluster: Cluster):
    # Why: an INSERT's "key must not exist" is checked in the region that runs it (MREC is eventually consistent), so
    # both may succeed; last writer wins then leaves one and the same item in every region.
    name = fresh("pqlrace")
    first, second = cluster.regions[0], cluster.regions[1]
    barrier = threading.Barrier(2)
    codes: dict[str, str | None] = {}

    def insert(region: str) -> None:
        barrier.wait(timeout=10)
        try:
            cluster.clients[region].execute_statement(
                Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': '{name}', 'by': '{region}'}}"
            )
            codes[region] = None
        except ClientError as error:
            codes[region] = error.response["Error"]["Code"]

    threads = [threading.Thread(target=insert, args=(region,)) for region in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert set(codes.values()) <= {None, "DuplicateItemException"} and None in codes.values(), codes

    def same_everywhere():
        seen = [select(cluster, region, name) for region in cluster.regions]
        return seen[0] if seen[0] and all(s == seen[0] for s in seen) else None

    (item,) = wait_until(same_everywhere, CONVERGE_TIMEOUT_S, f"{name} converged")
    assert item["by"]["S"] in (first, second)
    if codes[first] is not None or codes[second] is not None:  # one lost locally: the winner is the one that wrote
        assert item["by"]["S"] == (first if codes[first] is None else second)
