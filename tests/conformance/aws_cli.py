"""The aws CLI (awscli, run as `python -m awscli dynamodb ...`) against one endpoint, as a user types it.

Only the keys given reach it: the machine's own aws configuration (profiles, retry settings) stays out, so a test
sees the first answer of the endpoint it names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_aws_cli(
    endpoint: str, tmp_path: Path, *args: str, key: str = "testing", secret: str = "testing"
) -> subprocess.CompletedProcess:
    """`aws dynamodb <args> --endpoint-url <endpoint> --output json`, signed with `key`/`secret`; the finished
    process (its return code and output), whatever it answered."""
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
        "AWS_MAX_ATTEMPTS": "1",
    }
    env.pop("AWS_PROFILE", None)
    command = [sys.executable, "-m", "awscli", "dynamodb", *args, "--endpoint-url", endpoint, "--output", "json"]
    return subprocess.run(
        command, check=False, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def aws_cli(endpoint: str, tmp_path: Path, *args: str) -> dict:
    """The JSON answer of a command that must succeed (`{}` when it prints nothing); the test fails otherwise."""
    result = run_aws_cli(endpoint, tmp_path, *args)
    assert result.returncode == 0, f"{' '.join(args)}: {result.stderr}"
    return json.loads(result.stdout) if result.stdout.strip() else {}
