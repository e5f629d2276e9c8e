"""replication/ is sans-I/O (ARCHITECTURE.md §8): it must run unchanged under the deterministic simulator, so it
reads no clock, draws no randomness and knows no event loop or web framework; hosts inject all of those."""

from __future__ import annotations

from test_layers import PACKAGE, SRC, imports_of

FORBIDDEN = {"aiohttp", "asyncio", "socket", "time", "random", "uvloop", "threading", "http"}
ALLOWED_SIBLINGS = {"replication", "engine", "runtime"}


def test_replication_imports_no_io_time_or_randomness_and_no_higher_layer():
    violations = []
    for path in sorted((PACKAGE / "replication").rglob("*.py")):
        for line, module in imports_of(path):
            parts = module.split(".")
            where = f"{path.relative_to(SRC)}:{line} imports {module}"
            if parts[0] in FORBIDDEN or (
                parts[0] == "globaltables" and parts[1:2] and parts[1] not in ALLOWED_SIBLINGS
            ):
                violations.append(where)
    assert not violations, "\n".join(violations)
