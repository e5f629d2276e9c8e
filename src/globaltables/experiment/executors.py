"""Where a sweep's runs execute: a `concurrent.futures.Executor`, local worker processes or a Dask cluster.

`open_executor(None | "local", jobs)` is a `ProcessPoolExecutor` with `jobs` workers (default one per core);
`open_executor("dask://HOST:PORT")` connects a `distributed.Client` to that scheduler and hands out its
`get_executor()`, Dask's own concurrent.futures-compatible executor, so nothing here schedules work across machines.
`distributed` is an optional extra (`pip install 'globaltables[dask]'`), imported only when a Dask address is given.
Each task is a plain picklable function and arguments (experiment/sweep.py `run_seed`); workers on other machines
need the same globaltables installed, nothing else: the topology and schedule travel with the task.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor

DASK_SCHEME = "dask://"


class ExecutorError(ValueError):
    """An executor that cannot be opened; the message says what to do."""


def parse_executor(spec: str | None) -> str | None:
    """None for local processes, or the Dask scheduler's `tcp://HOST:PORT`; ExecutorError for anything else."""
    if spec is None or spec == "local":
        return None
    if spec.startswith(DASK_SCHEME):
        address = spec[len(DASK_SCHEME) :]
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ExecutorError(f"--executor {spec!r}: expected dask://HOST:PORT, e.g. dask://127.0.0.1:8786")
        return f"tcp://{address}"
    raise ExecutorError(f"--executor {spec!r}: use local or dask://HOST:PORT")


@contextlib.contextmanager
def open_executor(spec: str | None = None, jobs: int | None = None) -> Iterator[Executor]:
    address = parse_executor(spec)
    if jobs is not None and jobs < 1:
        raise ExecutorError(f"--jobs {jobs}: must be at least 1")
    if address is None:
        with ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
            yield pool
        return
    try:
        from distributed import Client
    except ImportError:
        raise ExecutorError(
            f"--executor {spec}: Dask's distributed package is not installed; pip install 'globaltables[dask]'"
        ) from None
    try:
        client = Client(address, timeout="10s")
    except OSError as error:
        raise ExecutorError(f"--executor {spec}: cannot reach the Dask scheduler: {error}") from None
    try:
        yield client.get_executor(pure=False)
    finally:
        client.close()
