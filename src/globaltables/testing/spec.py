"""Where a kit topology comes from: a YAML file, an inline dict (the same schema), a loaded Topology, or nothing
(the default three-region MREC topology below). Bad input fails with the topology loader's messages, which name
the file (or `<inline topology>`) and the field."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from ..experiment.topology import load_topology, parse_topology
from ..topology.model import Topology

# Three MREC regions with realistic one-way delays and one table, `Orders`, keyed by (customerId, sk).
# The table of the default topology, and of most examples: a customer's orders, one item per (customerId, sk).
ORDERS_TABLE: dict[str, Any] = {
    "TableName": "Orders",
    "AttributeDefinitions": [
        {"AttributeName": "customerId", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ],
    "KeySchema": [
        {"AttributeName": "customerId", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ],
}

DEFAULT_TOPOLOGY: dict[str, Any] = {
    "name": "kit-default",
    "mode": "mrec",
    "regions": [{"name": "us-east-1"}, {"name": "eu-west-1"}, {"name": "ap-southeast-1"}],
    "links": {
        "default": {"latency_ms": 40, "jitter_ms": 2},
        "overrides": [
            {"from": "us-east-1", "to": "ap-southeast-1", "latency_ms": 110, "jitter_ms": 5, "bidirectional": True}
        ],
    },
    "tables": [ORDERS_TABLE],
}


def load_spec(topology: Any = None) -> Topology:
    """A validated Topology from a path, an inline dict, a Topology, or None (DEFAULT_TOPOLOGY)."""
    if topology is None:
        topology = DEFAULT_TOPOLOGY
    if isinstance(topology, Topology):
        return topology
    if isinstance(topology, (str, Path)):
        return load_topology(topology)
    if isinstance(topology, dict):
        document = copy.deepcopy(topology)
        document.setdefault("name", "inline")
        return parse_topology(yaml.safe_dump(document, sort_keys=False), "<inline topology>")
    raise TypeError(f"a topology is a YAML path, a dict or a Topology, not {type(topology).__name__}")


def topology_yaml(topology: Topology) -> str:
    """The topology back as YAML (for `globaltables up`, which reads files)."""
    document: dict[str, Any] = {
        "name": topology.name,
        "mode": topology.mode,
        "regions": [
            {"name": r.name, "host": r.host, "role": r.role, "clock_offset_ms": r.clock_offset_ms}
            | ({"port": r.port} if r.port else {})
            | ({"bind": r.bind} if r.bind != r.host else {})
            | ({"endpoint": r.endpoint} if r.endpoint else {})
            for r in topology.regions
        ],
        "links": {
            "default": {"latency_ms": topology.links.default.latency_ms, "jitter_ms": topology.links.default.jitter_ms},
            "overrides": [
                {"from": o.source, "to": o.target, "latency_ms": o.link.latency_ms, "jitter_ms": o.link.jitter_ms,
                 "bidirectional": o.bidirectional}
                for o in topology.links.overrides
            ],
        },
        "tables": [spec.request() for spec in topology.tables],
        "conflict_clock": topology.conflict_clock,
        "ttl_sweep_interval_s": topology.ttl_sweep_interval_s,
        "max_clock_offset_ms": topology.max_clock_offset_ms,
    }  # fmt: skip
    return yaml.safe_dump(document, sort_keys=False)
