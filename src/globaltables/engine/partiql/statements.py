"""What a parsed PartiQL statement is: plain, immutable data the planner (plan.py) turns into item operations.

Conditions and operands are the expression grammar's own resolved nodes (`engine/expressions/ast.py`: Path, Value,
Comparison, Between, In, Not, And, Or, FunctionCall with DynamoDB's function names), so a PartiQL WHERE clause is
evaluated by the same evaluator as a ConditionExpression. Two nodes exist only here: `Exists` (EXISTS(SELECT ...),
legal only in an ExecuteTransaction write) and, in UPDATE, the actions of `engine/expressions/ast.UpdateAction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Select:
    table: str
    index: str | None
    projection: tuple | None  # Paths in text order; None: `*`
    where: Any  # a condition, or None
    order: tuple = ()  # (attribute name, ascending) pairs of ORDER BY


@dataclass(frozen=True, slots=True)
class Insert:
    table: str
    item: dict  # a normalised item
    if_absent: bool = False  # ON CONFLICT DO NOTHING: an existing key is success, the item unchanged


@dataclass(frozen=True, slots=True)
class Update:
    table: str
    actions: tuple  # expressions.ast.UpdateAction, in text order
    where: Any
    returning: str | None  # ReturnValues: ALL_OLD, UPDATED_OLD, ALL_NEW, UPDATED_NEW


@dataclass(frozen=True, slots=True)
class Delete:
    table: str
    where: Any
    returning: str | None  # ALL_OLD or None


@dataclass(frozen=True, slots=True)
class Exists:
    """EXISTS(SELECT ...) or NOT EXISTS(...) standing as a whole statement of a write transaction."""

    select: Select
    negated: bool = False


Statement = Select | Insert | Update | Delete | Exists


def is_read(statement: Statement) -> bool:
    return isinstance(statement, Select)


def table_of(statement: Statement) -> str:
    return statement.select.table if isinstance(statement, Exists) else statement.table
