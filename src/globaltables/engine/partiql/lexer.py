"""The tokenizer of PartiQL statements (ExecuteStatement, BatchExecuteStatement, ExecuteTransaction).

PartiQL's lexical rules as DynamoDB applies them (AWS, "PartiQL - a SQL-compatible query language for DynamoDB"):
- `"Name"` is a quoted identifier (a table, index or attribute name; `""` stands for one `"`), `'text'` a string
  literal (`''` stands for one `'`); unquoted identifiers are [A-Za-z_][A-Za-z0-9_$]* and keywords are unquoted
  identifiers matched without regard to case (SELECT, select).
- Numbers: digits with an optional fraction and exponent (`12`, `1.5`, `.5`, `1e3`); a leading `-` is an operator.
- `?` is a positional parameter, `<<` and `>>` open and close a set (bag) literal, `!=` is a synonym of `<>`.
A character no rule accepts is an INVALID token, so the parser reports it where it stands.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

IDENT = "IDENT"  # an unquoted identifier or keyword
QUOTED = "QUOTED"  # a "double-quoted" identifier (its text is the name, unescaped)
STRING = "STRING"  # a 'single-quoted' string literal (its text is the value, unescaped)
NUMBER = "NUMBER"
PARAM = "PARAM"  # ?
PUNCT = "PUNCT"
INVALID = "INVALID"
EOF = "EOF"


class Token(NamedTuple):
    kind: str
    text: str
    start: int

    def is_keyword(self, word: str) -> bool:
        return self.kind == IDENT and self.text.upper() == word


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|--[^\n]*)
  | (?P<NUMBER>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<IDENT>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<QUOTED>"(?:[^"]|"")*")
  | (?P<STRING>'(?:[^']|'')*')
  | (?P<PARAM>\?)
  | (?P<PUNCT><<|>>|<>|!=|<=|>=|[=<>()\[\]{}.,:*+\-;])
  | (?P<INVALID>.)
    """,
    re.VERBOSE | re.DOTALL,
)


@lru_cache(maxsize=1024)
def tokenize(text: str) -> tuple[Token, ...]:
    """Every token of `text` (whitespace and `--` comments dropped), ending with an EOF token. Cached: applications
    send the same statement text with different `?` parameters."""
    tokens = []
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup
        if kind == "ws":
            continue
        raw = match.group()
        if kind == "QUOTED":
            raw = raw[1:-1].replace('""', '"')
        elif kind == "STRING":
            raw = raw[1:-1].replace("''", "'")
        tokens.append(Token(kind, raw, match.start()))
    tokens.append(Token(EOF, "<EOF>", len(text)))
    return tuple(tokens)
