"""Where the shared secret of a topology's regions comes from: a file (`--secret-file`, else the topology's
`secret_file`), else the environment variable $GLOBALTABLES_SECRET (a Kubernetes Secret mounts as one). Never a
command-line argument: arguments are visible to every user of the machine.

A region, `up`, `chaos`, `check` and `run --attach` all find the secret here, so they agree on it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SECRET_ENV = "GLOBALTABLES_SECRET"


class SecretError(ValueError):
    pass


def secret_from(secret_file: Path | None) -> str | None:
    """The secret in `secret_file`, else $GLOBALTABLES_SECRET; None when neither is set (SecretError for a file that
    cannot be read or an empty secret)."""
    if secret_file is not None:
        return read_secret(Path(secret_file))
    if SECRET_ENV in os.environ:
        secret = os.environ[SECRET_ENV].strip()
        if not secret:
            raise SecretError(f"${SECRET_ENV} is set but empty")
        return secret
    return None


def topology_secret(topology: Any, secret_file: Path | None = None) -> str | None:
    """The shared secret of `topology` (a model.Topology or plan.RegionPlan): `secret_file` if given, else the
    topology's secret_file, else $GLOBALTABLES_SECRET (see `secret_from`)."""
    return secret_from(secret_file or topology.secret_file)


def read_secret(path: Path) -> str:
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise SecretError(f"cannot read the secret file {path}: {error}") from None
    if not secret:
        raise SecretError(f"the secret file {path} is empty")
    return secret
