"""PartiQL writes on an MREC global table (real processes, `globaltables up`, boto3): they are the item operations'
writes, so they replicate, carry versions and converge like them.

The topology's `Items` table has the hash key `id`; each test writes its own keys.
"""

from __future__ import annotations

import uuid

import pytest

from mrec_cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(180)

TABLE = "Items"
VERSION = "x-globaltables-version"
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
    assert answer["ResponseMetadata"]["HTTPHeaders"].get(VERSION), "a PartiQL write on a global table is versioned"
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
