"""Loading topology files with every check: the topology package's loader (`topology/load.py`, the schema and its
messages) plus the rules it cannot import, which live in higher layers: CreateTable's own rules for each declared
table (the engine's) and the workload's schema (`workload.py`).

Everything that reads a topology file a user wrote (the CLI, the kit, experiments) loads it here, so a file
`globaltables validate` accepts is one every command accepts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..engine.errors import DynamoError
from ..engine.table_validation import CREATE_TABLE_FIELDS, validate_create_table
from ..engine.validation import check_request
from ..topology import load
from ..topology.model import Topology
from .workload import check_workload


def create_table_refusal(request: dict[str, Any]) -> str | None:
    """What CreateTable would answer to `request` ("<error type>: <message>"), or None when it would accept it."""
    try:
        check_request(request, CREATE_TABLE_FIELDS)
        validate_create_table(request)
    except DynamoError as error:
        return f"{error.type_name}: {error.message}"
    return None


CHECKS = load.Checks(table_fields=tuple(CREATE_TABLE_FIELDS), table=create_table_refusal, workload=check_workload)


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file; topology.TopologyError lists every problem found."""
    return load.load_topology(path, CHECKS)


def parse_topology(text: str, source: str | Path = "<topology>") -> Topology:
    """Validate topology YAML given as text; `source` names it in errors (and anchors `secret_file`)."""
    return load.parse_topology(text, source, CHECKS)
