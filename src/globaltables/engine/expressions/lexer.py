"""The one tokenizer for every expression kind (condition, filter, key condition, update, projection).

Tokens carry their character offsets so a syntax error can quote the text around the offending token the way
DynamoDB does ("near" spans from the token before it to the token after it, with the original spacing).

Keywords (AND, OR, NOT, BETWEEN, IN, SET, REMOVE, ADD, DELETE) are lexed as NAME tokens: whether a word is a
keyword depends on where it stands, and a keyword standing where an attribute name is expected is an attribute
name that happens to be reserved ("Attribute name is a reserved keyword"), not a syntax error.
"""

from __future__ import annotations

import re
from typing import NamedTuple

NAME = "NAME"  # an attribute name or keyword: [A-Za-z][A-Za-z0-9_]* (a leading '_' or digit is a syntax error)
NAME_REF = "NAME_REF"  # an ExpressionAttributeNames placeholder: #[A-Za-z0-9_]*
VALUE_REF = "VALUE_REF"  # an ExpressionAttributeValues placeholder: :[A-Za-z0-9_]*
NUMBER = "NUMBER"  # a list index: [0-9]+
PUNCT = "PUNCT"  # ( ) [ ] . , = <> < <= > >= + -
INVALID = "INVALID"  # any other character; the parser reports it as the offending token
EOF = "EOF"

EOF_TEXT = "<EOF>"


class Token(NamedTuple):
    kind: str
    text: str
    start: int
    end: int


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<NAME>[A-Za-z][A-Za-z0-9_]*)
  | (?P<NAME_REF>\#[A-Za-z0-9_]*)
  | (?P<VALUE_REF>:[A-Za-z0-9_]*)
  | (?P<NUMBER>[0-9]+)
  | (?P<PUNCT><>|<=|>=|[=<>()\[\].,+\-])
  | (?P<INVALID>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(text: str) -> list[Token]:
    """All tokens of `text` (whitespace dropped), ending with an EOF token at offset len(text)."""
    tokens = []
    append = tokens.append
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup
        if kind != "ws":
            append(Token(kind, match.group(), match.start(), match.end()))
    append(Token(EOF, EOF_TEXT, len(text), len(text)))
    return tokens


def syntax_error_message(text: str, tokens: list[Token], index: int) -> str:
    """DynamoDB's wording for a syntax error at tokens[index].

    `near` quotes the source from the start of the previous token to the end of the next one (the EOF token ends at
    the end of the text, so trailing spaces are quoted too), e.g. 'SET a = 3' -> token "3", near "= 3".
    """
    token = tokens[index]
    start = tokens[index - 1].start if index > 0 else token.start
    end = tokens[index + 1].end if index + 1 < len(tokens) else token.end
    return f'Syntax error; token: "{token.text}", near: "{text[start:end]}"'
