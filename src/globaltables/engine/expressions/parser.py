"""One recursive-descent parser for every expression kind. It produces the syntax tree (placeholders unresolved).

Grammar (keywords case-insensitive, function names case-sensitive):

    condition   := or
    or          := and (OR and)*
    and         := not (AND not)*
    not         := NOT not | primary
    primary     := '(' condition ')' | operand comparator operand | operand BETWEEN operand AND operand
                 | operand IN '(' operand (',' operand)* ')' | function            -- a boolean function
    operand     := path | :value | function | '(' operand ')'
    function    := NAME '(' operand (',' operand)* ')'
    path        := (NAME | #name) ('.' (NAME | #name) | '[' NUMBER ']')*
    update      := clause+  with clause := SET set (',' set)* | REMOVE path (',' path)*
                                         | ADD path :value (',' ...)* | DELETE path :value (',' ...)*
    set         := path '=' value      with value := term (('+' | '-') operand)?, term := operand | '(' value ')'
                                       (one arithmetic pair at most, parenthesised or not)
    projection  := path (',' path)*

A syntax error stops the parse at once ("Syntax error; token: ..., near: ..."). Everything else DynamoDB reports
about the text alone (reserved words, unknown or misplaced functions, operand counts, redundant parentheses, a
repeated clause) is recorded as an *issue* under a category and reported only after resolution, because DynamoDB
reports the first issue by category priority (ISSUE_ORDER), not by position: a reserved word wins over an
undefined placeholder wherever each stands. The parse of a text is cached (`parse_syntax`), placeholders and all,
so a request repeating an expression only pays for resolution.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .ast import (
    ADD,
    DELETE,
    REMOVE,
    SET,
    UPDATE_CLAUSES,
    And,
    Arithmetic,
    Between,
    Comparison,
    FunctionCall,
    In,
    Not,
    Or,
    Path,
    UpdateAction,
    ValueRef,
)
from .lexer import EOF, NAME, NAME_REF, NUMBER, PUNCT, VALUE_REF, Token, syntax_error_message, tokenize
from .reserved_words import RESERVED_WORDS

CONDITION = "condition"
UPDATE = "update"
PROJECTION = "projection"

CONDITION_FUNCTIONS = {
    "attribute_exists": 1,
    "attribute_not_exists": 1,
    "attribute_type": 2,
    "begins_with": 2,
    "contains": 2,
    "size": 1,
}
UPDATE_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}
BOOLEAN_FUNCTIONS = frozenset(name for name in CONDITION_FUNCTIONS if name != "size")
# Functions whose first operand must be a document path (attribute_type may test a value too: its second operand,
# the type name, is what must be an expression attribute value).
PATH_FUNCTIONS = frozenset({"attribute_exists", "attribute_not_exists", "if_not_exists"})
COMPARATORS = frozenset({"=", "<>", "<", "<=", ">", ">="})
# Words after which '(' opens a group; after any other word it opens a function's arguments or an IN list.
_GROUPING_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN"})

MAX_PATH_DEPTH = 32
MAX_IN_OPERANDS = 100
MAX_LIST_INDEX = 2**31 - 1  # a list index must fit a signed 32-bit integer
# "The maximum number of operators or functions allowed in an UpdateExpression is 300" (DynamoDB constraints,
# expression parameters); the same limit holds in conditions. Comparators, BETWEEN, IN, AND, OR, NOT, '+', '-'
# and function calls count; parentheses do not.
MAX_OPERATORS = 300
# Nesting of parentheses, NOT and function calls the parser follows before calling the text a syntax error. A level
# that is not redundant holds an operator and at most one pair of parentheses, so an accepted expression never goes
# deeper than this.
MAX_NESTING = 2 * MAX_OPERATORS
# Parsing, resolving and evaluating a tree 300 levels deep takes a few Python frames per level, more than CPython's
# default limit of 1000 leaves beside a request's own stack. Python-to-Python calls do not grow the C stack
# (CPython 3.11+), so raising the limit costs nothing for shallow expressions.
_FRAMES_FOR_DEEPEST_EXPRESSION = 12 * MAX_NESTING + 1000
if sys.getrecursionlimit() < _FRAMES_FOR_DEEPEST_EXPRESSION:
    sys.setrecursionlimit(_FRAMES_FOR_DEEPEST_EXPRESSION)

# Issue categories in the order DynamoDB reports them (the first category present wins).
SECTION = "section"
PARENS = "parens"
FUNCTION_NAME = "function_name"
FUNCTION_USE = "function_use"
RESERVED = "reserved"
PLACEHOLDER = "placeholder"
NESTING = "nesting"
OPERAND_COUNT = "operand_count"
DISTINCT = "distinct"
OPERAND_TYPE = "operand_type"
PATH_OVERLAP = "path_overlap"
ISSUE_ORDER = (
    SECTION,
    PARENS,
    FUNCTION_NAME,
    FUNCTION_USE,
    RESERVED,
    PLACEHOLDER,
    NESTING,
    OPERAND_COUNT,
    DISTINCT,
    OPERAND_TYPE,
    PATH_OVERLAP,
)


def misused_function(name: str) -> str:
    return f"The function is not allowed to be used this way in an expression; function: {name}"


@dataclass(frozen=True, slots=True)
class Syntax:
    """A parsed text: its tree (condition node, tuple of UpdateActions, or tuple of Paths) and text-level issues."""

    tree: Any
    issues: dict  # category -> message; never mutated after parsing (the object is cached)


@dataclass(frozen=True, slots=True)
class SyntaxFailure:
    message: str


class _Fail(Exception):
    def __init__(self, index: int) -> None:
        self.index = index


class _Refuse(Exception):
    """A limit of the text itself that stops the parse at once, like a syntax error, with its own message."""

    def __init__(self, message: str) -> None:
        self.message = message


@dataclass(slots=True)
class _Bare:
    """An operand standing alone inside parentheses: '(a) = :v' or '(size(a)) > :n' or '(begins_with(a, :p))'."""

    operand: Any


@lru_cache(maxsize=1024)
def parse_syntax(grammar: str, text: str) -> Syntax | SyntaxFailure:
    """Parse `text` with `grammar` (CONDITION, UPDATE or PROJECTION). Cached: the result must not be mutated."""
    parser = _Parser(text, grammar)
    try:
        tree = parser.parse()
    except _Fail as failure:
        return SyntaxFailure(syntax_error_message(text, parser.tokens, failure.index))
    except _Refuse as refusal:
        return SyntaxFailure(refusal.message)
    parser.check_redundant_parentheses()
    return Syntax(tree, parser.issues)


class _Parser:
    __slots__ = ("depth", "functions", "grammar", "issues", "operators", "pos", "text", "tokens")

    def __init__(self, text: str, grammar: str) -> None:
        self.text = text
        self.tokens: list[Token] = tokenize(text)
        self.pos = 0
        self.grammar = grammar
        self.issues: dict[str, str] = {}
        self.depth = 0
        self.operators = 0
        self.functions = UPDATE_FUNCTIONS if grammar == UPDATE else CONDITION_FUNCTIONS

    # ----------------------------------------------------------------------------------------------- utilities

    def parse(self) -> Any:
        if self.grammar == CONDITION:
            tree = self.condition(False)
        elif self.grammar == UPDATE:
            tree = self.update()
        else:
            tree = self.projection()
        if self.tokens[self.pos].kind != EOF:
            raise _Fail(self.pos)
        return tree

    def note(self, category: str, message: str) -> None:
        self.issues.setdefault(category, message)

    def peek_punct(self, text: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == PUNCT and token.text == text

    def peek_keyword(self, word: str) -> bool:
        token = self.tokens[self.pos]
        return token.kind == NAME and token.text.upper() == word

    def expect_punct(self, text: str) -> None:
        if not self.peek_punct(text):
            raise _Fail(self.pos)
        self.pos += 1

    def count_operator(self) -> None:
        self.operators += 1
        if self.operators > MAX_OPERATORS:
            raise _Refuse(f"The expression contains too many operators; operator count: {self.operators}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise _Fail(self.pos)

    def check_name(self, name: str) -> None:
        if name.upper() in RESERVED_WORDS:
            self.note(RESERVED, f"Attribute name is a reserved keyword; reserved keyword: {name}")

    def check_redundant_parentheses(self) -> None:
        """DynamoDB refuses '((x))': parentheses directly around a parenthesised expression or operand.

        The parentheses of a function call or an IN list are not grouping parentheses, so 'f((a))' is fine.
        """
        tokens = self.tokens
        if not any(t.kind == PUNCT and t.text == "(" for t in tokens):
            return
        closing: dict[int, int] = {}
        stack = []
        for i, token in enumerate(tokens):
            if token.kind == PUNCT:
                if token.text == "(":
                    stack.append(i)
                elif token.text == ")":
                    closing[stack.pop()] = i
        for i, token in enumerate(tokens[:-1]):
            if token.kind != PUNCT or token.text != "(":
                continue
            nxt = tokens[i + 1]
            if nxt.kind != PUNCT or nxt.text != "(" or closing[i + 1] + 1 != closing[i]:
                continue
            before = tokens[i - 1] if i else None
            if before is not None and before.kind == NAME and before.text.upper() not in _GROUPING_KEYWORDS:
                continue  # a function's or IN's own parentheses
            self.note(PARENS, "The expression has redundant parentheses;")
            return

    # --------------------------------------------------------------------------------------------------- paths

    def path(self) -> Path:
        tokens = self.tokens
        token = tokens[self.pos]
        if token.kind == NAME:
            self.check_name(token.text)
        elif token.kind != NAME_REF:
            raise _Fail(self.pos)
        elements: list = [token.text]
        self.pos += 1
        while True:
            token = tokens[self.pos]
            if token.kind != PUNCT:
                break
            if token.text == ".":
                member = tokens[self.pos + 1]
                if member.kind == NAME:
                    self.check_name(member.text)
                elif member.kind != NAME_REF:
                    raise _Fail(self.pos + 1)
                elements.append(member.text)
                self.pos += 2
            elif token.text == "[":
                index = tokens[self.pos + 1]
                if index.kind != NUMBER:
                    raise _Fail(self.pos + 1)
                if not (tokens[self.pos + 2].kind == PUNCT and tokens[self.pos + 2].text == "]"):
                    raise _Fail(self.pos + 2)
                if len(index.text) > 10 or int(index.text) > MAX_LIST_INDEX:
                    raise _Refuse(f"List index is not within the allowable range; index: [{index.text}]")
                elements.append(int(index.text))
                self.pos += 3
            else:
                break
        if len(elements) > MAX_PATH_DEPTH:
            self.note(
                NESTING, f"The document path has too many nesting levels; nesting levels: {len(elements)}"
            )
        return Path(tuple(elements))

    # ------------------------------------------------------------------------------------------------ operands

    def operand(self, condition_candidate: bool = False) -> Any:
        """An operand. In conditions a boolean function here is misplaced unless the caller may use it as one."""
        tokens = self.tokens
        token = tokens[self.pos]
        kind = token.kind
        if kind == VALUE_REF:
            self.pos += 1
            return ValueRef(token.text)
        if kind == NAME:
            nxt = tokens[self.pos + 1]
            if nxt.kind == PUNCT and nxt.text == "(":
                call = self.function_call()
                if not condition_candidate:
                    self.check_operand_function(call)
                return call
            return self.path()
        if kind == NAME_REF:
            return self.path()
        if kind == PUNCT and token.text == "(":
            self.pos += 1
            self.enter()
            inner = self.operand()
            self.expect_punct(")")
            self.depth -= 1
            return inner
        raise _Fail(self.pos)

    def function_call(self) -> FunctionCall:
        name = self.tokens[self.pos].text
        self.pos += 2  # name and '('
        self.count_operator()
        self.enter()
        args = [self.operand()]
        while self.peek_punct(","):
            self.pos += 1
            args.append(self.operand())
        self.expect_punct(")")
        self.depth -= 1
        self.check_function(name, args)
        return FunctionCall(name, tuple(args))

    def check_function(self, name: str, args: list) -> None:
        arity = CONDITION_FUNCTIONS.get(name) or UPDATE_FUNCTIONS.get(name)
        if arity is None:
            self.note(FUNCTION_NAME, f"Invalid function name; function: {name}")
            return
        if name not in self.functions:
            self.note(FUNCTION_USE, misused_function(name))
            return
        if len(args) != arity:
            self.note(
                OPERAND_COUNT,
                f"Incorrect number of operands for operator or function; operator or function: {name}, "
                f"number of operands: {len(args)}",
            )
            return
        if name in PATH_FUNCTIONS and not isinstance(args[0], Path):
            self.note(OPERAND_TYPE, f"Operator or function requires a document path; operator or function: {name}")

    def check_operand_function(self, call: FunctionCall) -> None:
        """In a condition only `size` yields a value; the boolean functions cannot stand as operands."""
        if self.grammar == CONDITION and call.name in BOOLEAN_FUNCTIONS:
            self.note(FUNCTION_USE, misused_function(call.name))

    # ---------------------------------------------------------------------------------------------- conditions

    def condition(self, allow_bare: bool) -> Any:
        left = self.conjunction(allow_bare)
        while self.peek_keyword("OR"):
            left = self.finish(left)
            self.pos += 1
            self.count_operator()
            left = Or(left, self.conjunction(False))
        return left

    def conjunction(self, allow_bare: bool) -> Any:
        left = self.negation(allow_bare)
        while self.peek_keyword("AND"):
            left = self.finish(left)
            self.pos += 1
            self.count_operator()
            left = And(left, self.negation(False))
        return left

    def negation(self, allow_bare: bool) -> Any:
        if self.peek_keyword("NOT"):
            self.pos += 1
            self.count_operator()
            self.enter()
            inner = Not(self.negation(False))
            self.depth -= 1
            return inner
        return self.primary(allow_bare)

    def primary(self, allow_bare: bool) -> Any:
        if self.peek_punct("("):
            self.pos += 1
            self.enter()
            inner = self.condition(True)
            self.expect_punct(")")
            self.depth -= 1
            if isinstance(inner, _Bare):
                return self.comparison(inner.operand, allow_bare)
            return inner
        return self.comparison(self.operand(condition_candidate=True), allow_bare)

    def comparison(self, left: Any, allow_bare: bool) -> Any:
        """What follows an operand: a comparator, BETWEEN or IN; or nothing, for a boolean function."""
        token = self.tokens[self.pos]
        if token.kind == PUNCT and token.text in COMPARATORS:
            self.pos += 1
            self.count_operator()
            self.check_operand(left)
            return Comparison(token.text, left, self.operand())
        if self.peek_keyword("BETWEEN"):
            self.pos += 1
            self.count_operator()
            self.check_operand(left)
            lower = self.operand()
            if not self.peek_keyword("AND"):
                raise _Fail(self.pos)
            self.pos += 1
            return Between(left, lower, self.operand())
        if self.peek_keyword("IN"):
            self.pos += 1
            self.count_operator()
            self.check_operand(left)
            self.expect_punct("(")
            choices = [self.operand()]
            while self.peek_punct(","):
                self.pos += 1
                choices.append(self.operand())
            self.expect_punct(")")
            if len(choices) > MAX_IN_OPERANDS:
                self.note(
                    OPERAND_COUNT,
                    "Incorrect number of operands for operator or function; operator or function: IN, "
                    f"number of operands: {len(choices)}",
                )
            return In(left, tuple(choices))
        if allow_bare:
            return _Bare(left)
        return self.finish(_Bare(left))

    def check_operand(self, operand: Any) -> None:
        if isinstance(operand, FunctionCall):
            self.check_operand_function(operand)

    def finish(self, node: Any) -> Any:
        """A bare operand that turned out to be a whole condition: only a boolean function may be one."""
        if not isinstance(node, _Bare):
            return node
        operand = node.operand
        if isinstance(operand, FunctionCall):
            if operand.name not in BOOLEAN_FUNCTIONS and operand.name in CONDITION_FUNCTIONS:
                self.note(FUNCTION_USE, misused_function(operand.name))
            return operand
        raise _Fail(self.pos)

    # ------------------------------------------------------------------------------------------------- updates

    def update(self) -> tuple:
        actions: list[UpdateAction] = []
        seen: set[str] = set()
        while True:
            token = self.tokens[self.pos]
            clause = token.text.upper() if token.kind == NAME else None
            if clause not in UPDATE_CLAUSES:
                raise _Fail(self.pos)
            if clause in seen:
                self.note(SECTION, f'The "{clause}" section can only be used once in an update expression;')
            seen.add(clause)
            self.pos += 1
            actions.append(self.action(clause))
            while self.peek_punct(","):
                self.pos += 1
                actions.append(self.action(clause))
            if self.tokens[self.pos].kind == EOF:
                return tuple(actions)

    def action(self, clause: str) -> UpdateAction:
        path = self.path()
        if clause == SET:
            self.expect_punct("=")
            return UpdateAction(SET, path, self.set_value())
        if clause == REMOVE:
            return UpdateAction(REMOVE, path)
        token = self.tokens[self.pos]
        if token.kind != VALUE_REF:
            raise _Fail(self.pos)
        self.pos += 1
        return UpdateAction(ADD if clause == ADD else DELETE, path, ValueRef(token.text))

    def set_value(self) -> Any:
        """A SET right-hand side: an operand, or one arithmetic pair, which parentheses may enclose as a whole
        ('SET c = (c - :v)', 'SET c = (if_not_exists(c, :z) - :v)': the same as without them)."""
        left = self.set_term()
        token = self.tokens[self.pos]
        if token.kind == PUNCT and token.text in ("+", "-"):
            if isinstance(left, Arithmetic):
                raise _Fail(self.pos)  # one pair only: '(a - b) - c' is not an update operand
            self.pos += 1
            self.count_operator()
            return Arithmetic(token.text, left, self.operand())
        return left

    def set_term(self) -> Any:
        if not self.peek_punct("("):
            return self.operand()
        self.pos += 1
        self.enter()
        inner = self.set_value()
        self.expect_punct(")")
        self.depth -= 1
        return inner

    # ---------------------------------------------------------------------------------------------- projection

    def projection(self) -> tuple:
        paths = [self.path()]
        while self.peek_punct(","):
            self.pos += 1
            paths.append(self.path())
        return tuple(paths)
