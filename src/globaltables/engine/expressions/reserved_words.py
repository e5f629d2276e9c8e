"""DynamoDB's reserved words: a bare attribute name in any expression must not be one of them (case-insensitive).

The list ships beside this module as `reserved_words.txt` (one word per line, upper case), copied from DynamoDB's
documentation. Names that clash must be written through an ExpressionAttributeNames placeholder (`#status`).
"""

from __future__ import annotations

from importlib import resources


def _load() -> frozenset[str]:
    text = resources.files(__package__).joinpath("reserved_words.txt").read_text(encoding="utf-8")
    return frozenset(line.strip().upper() for line in text.splitlines() if line.strip())


RESERVED_WORDS: frozenset[str] = _load()


def is_reserved(name: str) -> bool:
    return name.upper() in RESERVED_WORDS
