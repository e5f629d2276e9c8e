"""Plain data for expressions, shared by the syntax tree (before resolution) and the resolved tree.

Before resolution a path element may be a `#placeholder` and an operand may be a `ValueRef(":v")`; resolution
(resolve.py) replaces them with attribute names and `Value`s. Literal attribute names can never start with `#`
(the lexer would not produce them), so a syntax path is unambiguous. Nodes are immutable: a syntax tree sits in a
cache shared by all requests, and a resolved tree may be applied more than once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True, slots=True)
class Path:
    """A document path: the top-level attribute name, then map members (str) and list indexes (int)."""

    elements: tuple  # (root: str, *steps: str | int)

    @property
    def root(self) -> str:
        return self.elements[0]

    def __str__(self) -> str:
        """DynamoDB's rendering in error messages: a.b[1] -> [a, b, [1]]."""
        return "[" + ", ".join(f"[{e}]" if isinstance(e, int) else e for e in self.elements) + "]"


@dataclass(frozen=True, slots=True)
class ValueRef:
    """A `:name` placeholder, before resolution."""

    name: str


@dataclass(frozen=True, slots=True, eq=False)
class Value:
    """A constant from ExpressionAttributeValues (already normalised)."""

    value: dict


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """`name(arg, ...)`. Boolean functions stand as conditions; `size`, `if_not_exists`, `list_append` as operands."""

    name: str
    args: tuple


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """`left + right` or `left - right` on the right-hand side of a SET action."""

    op: str
    left: Any
    right: Any


Operand = Union[Path, ValueRef, Value, FunctionCall, Arithmetic]


# ---------------------------------------------------------------------------------------------------- conditions


@dataclass(frozen=True, slots=True)
class Comparison:
    op: str  # = <> < <= > >=
    left: Any
    right: Any


@dataclass(frozen=True, slots=True)
class Between:
    operand: Any
    lower: Any
    upper: Any


@dataclass(frozen=True, slots=True)
class In:
    operand: Any
    choices: tuple


@dataclass(frozen=True, slots=True)
class Not:
    condition: Any


@dataclass(frozen=True, slots=True)
class And:
    left: Any
    right: Any


@dataclass(frozen=True, slots=True)
class Or:
    left: Any
    right: Any


Condition = Union[Comparison, Between, In, Not, And, Or, FunctionCall]


# ------------------------------------------------------------------------------------------------------- updates

SET = "SET"
REMOVE = "REMOVE"
ADD = "ADD"
DELETE = "DELETE"
UPDATE_CLAUSES = (SET, REMOVE, ADD, DELETE)


@dataclass(frozen=True, slots=True)
class UpdateAction:
    """One action of an update: SET path = value, REMOVE path, ADD path value, DELETE path value."""

    kind: str
    path: Path
    value: Any = None  # operand / Arithmetic for SET, a value for ADD and DELETE, None for REMOVE


@dataclass(frozen=True, slots=True, eq=False)
class UpdateExpression:
    """A resolved update: its actions in text order, and the action tree that applies them (see paths.py)."""

    actions: tuple
    tree: Any = field(default=None, repr=False)

    @property
    def paths(self) -> list[Path]:
        return [action.path for action in self.actions]


@dataclass(frozen=True, slots=True, eq=False)
class Projection:
    """A resolved ProjectionExpression: its paths in text order and the tree that projects them."""

    paths: tuple
    tree: Any = field(default=None, repr=False)

    def __iter__(self):
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def attribute_names(self) -> list[str]:
        """The distinct top-level attributes the projection reads, in text order."""
        return list(dict.fromkeys(path.root for path in self.paths))
