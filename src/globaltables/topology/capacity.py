"""A declared table's capacity settings, checked field by field, and its per-replica read overrides.

A table entry of a topology is a CreateTable request; its capacity members have CreateTable's (and
CloudFormation's `AWS::DynamoDB::Table`) shapes, checked here so a bad value names its field rather than the table:

    BillingMode: PROVISIONED                     # PROVISIONED | PAY_PER_REQUEST
    ProvisionedThroughput: {ReadCapacityUnits: 100, WriteCapacityUnits: 50}   # PROVISIONED only, both >= 1
    OnDemandThroughput: {MaxReadRequestUnits: 500, MaxWriteRequestUnits: 200} # PAY_PER_REQUEST only; >= 1, or -1
    WarmThroughput: {ReadUnitsPerSecond: 12000, WriteUnitsPerSecond: 4000}    # >= 1
    GlobalSecondaryIndexes: [{IndexName: ..., ProvisionedThroughput: ..., OnDemandThroughput: ..., WarmThroughput: ...}]

Global tables (capacity-facts §8): write capacity is global, so the table's write settings hold in every region;
reads may be set per replica with `Replicas`, in the shape of CloudFormation's `AWS::DynamoDB::GlobalTable`
ReplicaSpecification (only its capacity members; this testbed has no other per-replica settings):

    Replicas:
      - Region: eu-west-1
        ReadProvisionedThroughputSettings: {ReadCapacityUnits: 200}     # PROVISIONED tables
        ReadOnDemandThroughputSettings: {MaxReadRequestUnits: 800}      # PAY_PER_REQUEST tables
        GlobalSecondaryIndexes:
          - {IndexName: byStatus, ReadProvisionedThroughputSettings: {ReadCapacityUnits: 50}}

`apply_overrides(request, spec)` gives the CreateTable request a region runs: the table's, with that replica's read
settings in place of the table's (CreateTable's ProvisionedThroughput.ReadCapacityUnits and
OnDemandThroughput.MaxReadRequestUnits, the table's and each named GSI's).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

BILLING_MODES = ("PROVISIONED", "PAY_PER_REQUEST")
PROVISIONED_MEMBERS = ("ReadCapacityUnits", "WriteCapacityUnits")
ON_DEMAND_MEMBERS = ("MaxReadRequestUnits", "MaxWriteRequestUnits")
WARM_MEMBERS = ("ReadUnitsPerSecond", "WriteUnitsPerSecond")
REPLICA_KEYS = ("Region", "ReadProvisionedThroughputSettings", "ReadOnDemandThroughputSettings",
                "GlobalSecondaryIndexes")  # fmt: skip
REPLICA_INDEX_KEYS = ("IndexName", "ReadProvisionedThroughputSettings", "ReadOnDemandThroughputSettings")
READ_PROVISIONED = ("ReadCapacityUnits",)
READ_ON_DEMAND = ("MaxReadRequestUnits",)

Report = Callable[[str, str], None]  # (field path, message)


def _kind(value: Any) -> str:
    return "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else type(value).__name__


def _units(value: Any, path: str, error: Report, *, remove: bool = False) -> bool:
    """A whole number of units, at least 1 (or -1, which removes an on-demand maximum, when `remove`)."""
    if isinstance(value, bool) or not isinstance(value, int) or not (value >= 1 or (remove and value == -1)):
        allowed = "a whole number >= 1, or -1 to remove the maximum" if remove else "a whole number >= 1"
        error(path, f"expected {allowed}, got {value!r}")
        return False
    return True


def _members(value: Any, path: str, members: Sequence[str], error: Report, *, required: bool, remove: bool = False):
    if not isinstance(value, dict):
        error(path, f"expected a mapping with {', '.join(members)}, got {_kind(value)}")
        return
    for key in value:
        if key not in members:
            error(f"{path}.{key}", f"unknown key; allowed keys are {', '.join(members)}")
    if not value:
        error(path, f"give at least one of {', '.join(members)}")
    for member in members:
        if member in value:
            _units(value[member], f"{path}.{member}", error, remove=remove)
        elif required:
            error(f"{path}.{member}", "is required")


def check_throughput(raw: Mapping[str, Any], path: str, mode: str | None, error: Report) -> None:
    """The throughput members of a table or GSI entry (`mode`: the table's billing mode, None when unknown)."""
    if "ProvisionedThroughput" in raw:
        if mode == "PAY_PER_REQUEST":
            error(f"{path}.ProvisionedThroughput", "only applies to BillingMode PROVISIONED; this table is "
                                                    "PAY_PER_REQUEST (use OnDemandThroughput)")  # fmt: skip
        else:
            _members(raw["ProvisionedThroughput"], f"{path}.ProvisionedThroughput", PROVISIONED_MEMBERS, error,
                     required=True)  # fmt: skip
    if "OnDemandThroughput" in raw:
        if mode == "PROVISIONED":
            error(f"{path}.OnDemandThroughput", "only applies to BillingMode PAY_PER_REQUEST; this table is "
                                                "PROVISIONED (use ProvisionedThroughput)")  # fmt: skip
        else:
            _members(raw["OnDemandThroughput"], f"{path}.OnDemandThroughput", ON_DEMAND_MEMBERS, error,
                     required=False, remove=True)  # fmt: skip
    if "WarmThroughput" in raw:
        _members(raw["WarmThroughput"], f"{path}.WarmThroughput", WARM_MEMBERS, error, required=False)


def billing_mode(raw: Mapping[str, Any], path: str, error: Report) -> str | None:
    """The table's billing mode as CreateTable reads it (PROVISIONED unless told), None when it is wrong."""
    mode = raw.get("BillingMode", "PROVISIONED")
    if mode not in BILLING_MODES:
        error(f"{path}.BillingMode", f"{mode!r} is not allowed; use one of {', '.join(BILLING_MODES)}")
        return None
    if mode == "PROVISIONED" and "ProvisionedThroughput" not in raw:
        error(f"{path}.ProvisionedThroughput", "is required when BillingMode is PROVISIONED")
    return mode


def check_table(raw: Mapping[str, Any], path: str, error: Report) -> None:
    """The capacity members of a table entry and of its GSIs."""
    mode = billing_mode(raw, path, error)
    check_throughput(raw, path, mode, error)
    gsis = raw.get("GlobalSecondaryIndexes")
    if isinstance(gsis, list):
        for index, gsi in enumerate(gsis):
            if isinstance(gsi, dict):
                where = f"{path}.GlobalSecondaryIndexes[{index}]"
                check_throughput(gsi, where, mode, error)
                if mode == "PROVISIONED" and "ProvisionedThroughput" not in gsi:
                    error(f"{where}.ProvisionedThroughput", "is required when BillingMode is PROVISIONED")


def check_replicas(
    value: Any, path: str, table: Mapping[str, Any], replicas: Sequence[str], error: Report
) -> dict[str, dict[str, Any]]:
    """`Replicas` (ReplicaSpecification entries) as {region: entry}; every problem reported with its field."""
    found: dict[str, dict[str, Any]] = {}
    if not isinstance(value, list):
        error(path, f"expected a list of replica specifications, got {_kind(value)}")
        return found
    mode = table.get("BillingMode", "PROVISIONED")
    gsi_names = [gsi.get("IndexName") for gsi in table.get("GlobalSecondaryIndexes") or [] if isinstance(gsi, dict)]
    for index, entry in enumerate(value):
        where = f"{path}[{index}]"
        if not isinstance(entry, dict):
            error(where, f"expected a mapping, got {_kind(entry)}")
            continue
        for key in entry:
            if key not in REPLICA_KEYS:
                error(f"{where}.{key}", f"unknown key; allowed keys are {', '.join(REPLICA_KEYS)}")
        region = entry.get("Region")
        if region is None:
            error(f"{where}.Region", "is required")
        elif region not in replicas:
            error(f"{where}.Region", f"{region!r} is not a replica of this topology; use {', '.join(replicas)}")
            region = None
        elif region in found:
            error(f"{where}.Region", f"duplicate replica {region!r}")
            region = None
        _read_settings(entry, where, mode, error)
        indexes = entry.get("GlobalSecondaryIndexes", [])
        if not isinstance(indexes, list):
            error(f"{where}.GlobalSecondaryIndexes", f"expected a list, got {_kind(indexes)}")
            indexes = []
        for position, gsi in enumerate(indexes):
            at = f"{where}.GlobalSecondaryIndexes[{position}]"
            if not isinstance(gsi, dict):
                error(at, f"expected a mapping, got {_kind(gsi)}")
                continue
            for key in gsi:
                if key not in REPLICA_INDEX_KEYS:
                    error(f"{at}.{key}", f"unknown key; allowed keys are {', '.join(REPLICA_INDEX_KEYS)}")
            if gsi.get("IndexName") not in gsi_names:
                error(f"{at}.IndexName", f"no global secondary index {gsi.get('IndexName')!r} in this table; "
                                         f"its indexes: {', '.join(map(str, gsi_names)) or 'none'}")  # fmt: skip
            _read_settings(gsi, at, mode, error)
        if region is not None:
            found[region] = copy.deepcopy(entry)
    return found


def _read_settings(entry: Mapping[str, Any], path: str, mode: str, error: Report) -> None:
    """A replica's read settings: the provisioned one for a provisioned table, the on-demand one otherwise (write
    capacity is global: there is no per-replica write setting, facts §8)."""
    if mode not in BILLING_MODES:
        return  # the table's BillingMode is already reported
    if "ReadProvisionedThroughputSettings" in entry:
        where = f"{path}.ReadProvisionedThroughputSettings"
        if mode != "PROVISIONED":
            error(where, "only applies to BillingMode PROVISIONED (use ReadOnDemandThroughputSettings)")
        else:
            _members(entry["ReadProvisionedThroughputSettings"], where, READ_PROVISIONED, error, required=True)
    if "ReadOnDemandThroughputSettings" in entry:
        where = f"{path}.ReadOnDemandThroughputSettings"
        if mode != "PAY_PER_REQUEST":
            error(where, "only applies to BillingMode PAY_PER_REQUEST (use ReadProvisionedThroughputSettings)")
        else:
            _members(entry["ReadOnDemandThroughputSettings"], where, READ_ON_DEMAND, error, required=True)


def apply_overrides(request: dict[str, Any], replica: Mapping[str, Any] | None) -> dict[str, Any]:
    """`request` (a CreateTable request, changed in place and returned) with one replica's read settings."""
    if not replica:
        return request
    _override(request, replica)
    by_name = {gsi.get("IndexName"): gsi for gsi in replica.get("GlobalSecondaryIndexes") or []}
    for gsi in request.get("GlobalSecondaryIndexes") or []:
        if gsi.get("IndexName") in by_name:
            _override(gsi, by_name[gsi["IndexName"]])
    return request


def _override(target: dict[str, Any], replica: Mapping[str, Any]) -> None:
    provisioned = replica.get("ReadProvisionedThroughputSettings")
    if provisioned and "ProvisionedThroughput" in target:
        target["ProvisionedThroughput"] = {**target["ProvisionedThroughput"], **provisioned}
    on_demand = replica.get("ReadOnDemandThroughputSettings")
    if on_demand:
        target["OnDemandThroughput"] = {**(target.get("OnDemandThroughput") or {}), **on_demand}
