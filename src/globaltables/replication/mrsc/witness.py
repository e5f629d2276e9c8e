"""The witness: a member that votes and keeps committed images for the replicas, but serves no client requests.

It runs the same node (member.py answers its votes; store.py keeps its images beside its versions), never
coordinates a write and never reads for a client; a region host answers client data-plane requests to a witness
with ResourceNotFoundException.
"""

from __future__ import annotations

from typing import Any

from .node import MrscNode


class MrscWitness(MrscNode):
    def submit_write(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a witness coordinates no writes")

    def submit_read(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a witness serves no reads")

    def submit_range_read(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a witness serves no reads")
