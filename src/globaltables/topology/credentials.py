"""Access keys a topology (`credentials:`) or a credentials file (`globaltables region --credentials FILE`) declares:
key id -> secret, optionally bound to some regions. The schema lives here, beside the rest of the topology file's;
region/signing.py verifies requests with the keys.

Errors name the file and the entry, never the secret (an AccessKey's repr hides it too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..runtime.yaml_documents import load_yaml


@dataclass(frozen=True)
class AccessKey:
    """One access key's secret and the regions it may sign for (None: every region)."""

    secret: str
    regions: frozenset[str] | None = None

    def __repr__(self) -> str:  # never show a secret, not even in a traceback or a debug log
        return f"AccessKey(secret=<hidden>, regions={sorted(self.regions) if self.regions else None})"


class CredentialsError(ValueError):
    pass


def parse_credentials(document: Any, source: str) -> dict[str, AccessKey]:
    """Access keys from a mapping `key id -> secret` or `key id -> {secret: ..., regions: [...]}`; errors name the
    entry and `source` (the file), never the secret."""
    if not isinstance(document, dict) or not document:
        raise CredentialsError(f"{source}: credentials must be a non-empty mapping of access key id to secret")
    keys: dict[str, AccessKey] = {}
    for key_id, entry in document.items():
        where = f"{source}: credentials.{key_id}"
        if not isinstance(key_id, str) or not key_id or any(c in key_id for c in "/, =\n"):
            raise CredentialsError(f"{source}: credentials: {key_id!r} is not a valid access key id")
        regions = None
        if isinstance(entry, dict):
            unknown = set(entry) - {"secret", "regions"}
            if unknown:
                raise CredentialsError(f"{where}: unknown field {sorted(unknown)[0]!r} (allowed: secret, regions)")
            secret = entry.get("secret")
            if "regions" in entry:
                listed = entry["regions"]
                if not isinstance(listed, list) or not listed or not all(isinstance(r, str) and r for r in listed):
                    raise CredentialsError(f"{where}.regions: expected a non-empty list of region names")
                regions = frozenset(listed)
        else:
            secret = entry
        if not isinstance(secret, str) or not secret:
            raise CredentialsError(f"{where}: the secret must be a non-empty string")
        keys[key_id] = AccessKey(secret, regions)
    return keys


def load_credentials(path: str | Path) -> dict[str, AccessKey]:
    """The access keys of a credentials file (YAML or JSON, loaded safely)."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise CredentialsError(f"{path}: cannot read the credentials file ({error.strerror})") from None
    try:
        document = load_yaml(text)
    except yaml.YAMLError:
        raise CredentialsError(f"{path}: not valid YAML or JSON") from None
    if isinstance(document, dict) and set(document) == {"credentials"}:
        document = document["credentials"]
    return parse_credentials(document, str(path))
