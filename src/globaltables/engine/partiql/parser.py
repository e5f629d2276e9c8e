"""The one recursive-descent parser of PartiQL for DynamoDB: statement text and its parameters in, a `Statement`
(statements.py) out, with conditions built from the expression grammar's own nodes.

Grammar (AWS Developer Guide, "PartiQL select / insert / update / delete statements for DynamoDB"):

    statement  := select | insert | update | delete | EXISTS '(' select ')' | NOT EXISTS '(' select ')'   [';']
    select     := SELECT ('*' | path (',' path)*) FROM name ['.' name] [WHERE cond]
                  [ORDER BY name [ASC|DESC] (',' name [ASC|DESC])*]
    insert     := INSERT INTO name VALUE tuple [ON CONFLICT DO NOTHING]
    update     := UPDATE name (SET assign (',' assign)* | REMOVE path (',' path)*)+ WHERE cond
                  [RETURNING (ALL|MODIFIED) (OLD|NEW) '*']
    delete     := DELETE FROM name WHERE cond [RETURNING ALL OLD '*']
    assign     := path '=' (value | path | value_fn | operand ('+'|'-') operand)
    value_fn   := LIST_APPEND(operand, operand) | SET_ADD(path, value) | SET_DELETE(path, value)
    cond       := and (OR and)*;  and := not (AND not)*;  not := NOT not | predicate
    predicate  := '(' cond ')' | BEGINS_WITH(path, operand) | CONTAINS(path, operand)
                | ATTRIBUTE_TYPE(path, operand) | operand ( cmp operand | [NOT] BETWEEN operand AND operand
                | [NOT] IN ('[' | '(') operand (',' operand)* (']' | ')') | IS [NOT] (MISSING | NULL) )
    operand    := path | value | SIZE(path)
    path       := name ('.' name | '[' integer ']' | '[' string ']')*
    value      := string | number | TRUE | FALSE | NULL | '?' | tuple | '[' value, ... ']' | '<<' value, ... '>>'
    tuple      := '{' string ':' value (',' string ':' value)* '}'

Rules: keywords and function names match without regard to case; `?` takes the next of the request's Parameters
(a count that differs is refused; the parse of a text is cached as a template, and each request's parameters are
bound into it, see `_bind`); `IS [NOT] MISSING` is attribute_not_exists / attribute_exists, `IS [NOT] NULL`
tests for the NULL type; SET_ADD / SET_DELETE become the update's ADD / DELETE actions. Failures are
ValidationExceptions worded as DynamoDB words them: "Statement wasn't well formed, can't be processed: ..." for
syntax, and its specific texts for well-formed statements it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

from ..errors import ValidationException
from ..expressions.ast import (
    ADD,
    DELETE,
    REMOVE,
    SET,
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
    Value,
)
from ..values import normalize_item, normalize_value
from .lexer import EOF, IDENT, NUMBER, PARAM, PUNCT, QUOTED, STRING, Token, tokenize
from .statements import Delete, Exists, Insert, Select, Statement, Update

MAX_STATEMENT_CHARS = 8192
# How deep the parser follows parentheses and NOTs (as the expression grammar does), and literals inside literals
# (past DynamoDB's 32 levels, which normalize_value refuses in its own words), before refusing the statement: keeps
# recursion far from Python's limit for any 8 KB statement.
MAX_NESTING = 100
MAX_VALUE_NESTING = 40
NESTING_LEVELS = "Nesting Levels have exceeded supported limits"
RETURNING = {
    ("ALL", "OLD"): "ALL_OLD",
    ("MODIFIED", "OLD"): "UPDATED_OLD",
    ("ALL", "NEW"): "ALL_NEW",
    ("MODIFIED", "NEW"): "UPDATED_NEW",
}
COMPARISONS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
PREDICATE_FUNCTIONS = {"BEGINS_WITH": "begins_with", "CONTAINS": "contains", "ATTRIBUTE_TYPE": "attribute_type"}
DML_KEYWORDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "EXISTS", "NOT")
PARAMETER_COUNT = "Number of parameters in request and statement don't match."


def malformed(detail: str) -> ValidationException:
    return ValidationException(f"Statement wasn't well formed, can't be processed: {detail}")


def parse_statement(text: str, parameters: list | None = None) -> Statement:
    """The statement `text` says, with `parameters` (AttributeValues) in place of its `?`s."""
    template, slots = _template(text)
    parameters = parameters or []
    if slots != len(parameters):
        raise ValidationException(PARAMETER_COUNT)
    return _bind(template, parameters)


# ---------------------------------------------------------------------------------------------------- templates
#
# Applications send one statement text with different `?` parameters, so the parse of a text is cached as a
# template: its literals are raw AttributeValues that may hold `Slot`s (parameters) and `SetLiteral`s (a set's kind
# depends on its members, which may be parameters). `_bind` then builds the statement of one request: parameters in
# place, every value normalised as the item API normalises it (fresh dicts: a cached template is never shared with
# a stored item), and the checks that depend on parameter values.


@dataclass(frozen=True, slots=True)
class Slot:
    index: int  # the `?`'s position among the statement's parameters


@dataclass(frozen=True, slots=True)
class SetLiteral:
    members: tuple  # raw AttributeValues (or Slots)


@lru_cache(maxsize=1024)
def _template(text: str) -> tuple[Statement, int]:
    parser = _Parser(text)
    return parser.statement(), parser.slots


def _bind(node: Any, parameters: list) -> Any:
    kind = type(node)
    if kind is Value:
        return Value(normalize_value(_resolve(node.value, parameters)))
    if kind is Path or node is None or kind in (str, int, bool):
        return node
    if kind is tuple:
        return tuple(_bind(child, parameters) for child in node)
    if kind is In and type(node.choices) is Slot:  # `a IN ?`: a list parameter of choices
        choices = normalize_value(parameters[node.choices.index])
        if "L" not in choices or not choices["L"]:
            raise ValidationException(_INVALID_IN)
        return In(_bind(node.operand, parameters), tuple(Value(v) for v in choices["L"]))
    if kind is UpdateAction and node.kind in (ADD, DELETE):  # SET_ADD / SET_DELETE
        value = _bind(node.value, parameters)
        if next(iter(value.value)) not in ("SS", "NS", "BS"):
            name = "SET_ADD" if node.kind == ADD else "SET_DELETE"
            raise ValidationException(f"The second argument to {name} must be a value with type SET")
        return UpdateAction(node.kind, node.path, value)
    if kind is Insert:
        return Insert(node.table, normalize_item(_resolve({"M": node.item}, parameters)["M"]), node.if_absent)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(field.name for field in fields(node))
    return kind(*[_bind(getattr(node, name), parameters) for name in names])


_FIELDS: dict[type, tuple[str, ...]] = {}  # the fields of each node type, in constructor order


def _resolve(raw: Any, parameters: list) -> Any:
    """A template's raw AttributeValue with its parameters in place, as a fresh structure."""
    kind = type(raw)
    if kind is Slot:
        return parameters[raw.index]
    if kind is SetLiteral:
        members = [_resolve(member, parameters) for member in raw.members]
        kinds = {next(iter(member)) for member in members if isinstance(member, dict) and len(member) == 1}
        if len(kinds) == 1 and len(members) == sum(isinstance(m, dict) and len(m) == 1 for m in members):
            (scalar,) = kinds
            if scalar in ("S", "N", "B"):
                return {scalar + "S": [member[scalar] for member in members]}
        raise ValidationException(
            "Unsupported data type in Bag. DynamoDB only supports either numbers or strings in bags"
        )
    if kind is dict and len(raw) == 1:
        ((name, inner),) = raw.items()
        if name == "M" and type(inner) is dict:
            return {"M": {key: _resolve(value, parameters) for key, value in inner.items()}}
        if name == "L" and type(inner) is list:
            return {"L": [_resolve(value, parameters) for value in inner]}
    return dict(raw) if kind is dict else raw


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: tuple[Token, ...] = tokenize(text)
        self.pos = 0
        self.slots = 0  # the `?`s seen so far
        self.depth = 0

    # ------------------------------------------------------------------------------------------------ tokens

    @property
    def token(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind != EOF:
            self.pos += 1
        return token

    def at_keyword(self, *words: str) -> bool:
        return any(self.token.is_keyword(word) for word in words)

    def keyword(self, word: str) -> bool:
        if self.token.is_keyword(word):
            self.pos += 1
            return True
        return False

    def expect_keyword(self, word: str) -> None:
        if not self.keyword(word):
            raise self.unexpected()

    def at_punct(self, *texts: str) -> bool:
        token = self.token
        return token.kind == PUNCT and token.text in texts

    def punct(self, text: str) -> bool:
        if self.at_punct(text):
            self.pos += 1
            return True
        return False

    def expect_punct(self, text: str) -> None:
        if not self.punct(text):
            raise self.unexpected()

    def unexpected(self) -> ValidationException:
        """A syntax error at the current token, in DynamoDB's bare words (it names no token: "Statement wasn't well
        formed, can't be processed: Unexpected keyword")."""
        token = self.token
        if token.kind == EOF:
            return malformed("Unexpected end of statement")
        if token.kind == IDENT and token.text.upper() in _KEYWORDS:
            return malformed("Unexpected keyword")
        return malformed("Unexpected token")

    # ------------------------------------------------------------------------------------------- statements

    def statement(self) -> Statement:
        if not self.at_keyword(*DML_KEYWORDS):
            raise malformed("Expected data manipulation")
        if self.keyword("SELECT"):
            statement: Statement = self.select_rest()
        elif self.keyword("INSERT"):
            statement = self.insert_rest()
        elif self.keyword("UPDATE"):
            statement = self.update_rest()
        elif self.keyword("DELETE"):
            statement = self.delete_rest()
        else:
            negated = self.keyword("NOT")
            if not self.keyword("EXISTS"):
                raise malformed("Expected data manipulation")
            statement = Exists(self.subquery(), negated)
        self.punct(";")
        if self.token.kind != EOF:
            if self.at_keyword("SELECT", "INSERT", "UPDATE", "DELETE"):
                raise ValidationException("Only one operation is allowed in a statement.")
            if self.token.kind == IDENT and self.token.text.upper() in _KEYWORDS:
                raise malformed("Unexpected keyword")
            raise malformed("Unexpected token after expression")
        return statement

    def subquery(self) -> Select:
        self.expect_punct("(")
        self.expect_keyword("SELECT")
        select = self.select_rest()
        self.expect_punct(")")
        return select

    def select_rest(self) -> Select:
        if self.at_keyword("VALUE", "PIVOT"):
            raise ValidationException("Select projection doesn't support value or pivot keywords")
        projection: tuple | None
        if self.punct("*"):
            projection = None
            if self.at_punct(","):
                raise ValidationException("Other attributes should not be present in the projection when '*' is used.")
        else:
            paths = [self.projected_path()]
            while self.punct(","):
                if self.at_punct("*"):
                    raise ValidationException(
                        "Other attributes should not be present in the projection when '*' is used."
                    )
                paths.append(self.projected_path())
            projection = tuple(paths)
        self.expect_keyword("FROM")
        table = self.name()
        index = None
        if self.punct("."):
            index = self.name()
            if self.at_punct("."):
                raise ValidationException("A path may contain at most 2 components in the FROM clause")
        if self.at_punct(","):
            raise ValidationException("Only select from a single table or index is supported.")
        token = self.token
        alias = token.kind == IDENT and token.text.upper() not in _KEYWORDS
        if alias or token.kind == QUOTED or token.is_keyword("AS"):
            raise ValidationException("Aliasing is not supported")
        where = self.condition() if self.keyword("WHERE") else None
        order: list[tuple[str, bool]] = []
        if self.keyword("ORDER"):
            self.expect_keyword("BY")
            while True:
                name = self.name()
                ascending = not self.keyword("DESC")
                if ascending:
                    self.keyword("ASC")
                order.append((name, ascending))
                if not self.punct(","):
                    break
            if where is None:
                raise ValidationException("Must have WHERE clause in the statement when using ORDER BY clause.")
        return Select(table, index, projection, where, tuple(order))

    def projected_path(self) -> Path:
        path = self.path()
        if self.keyword("AS"):
            raise ValidationException("Aliasing is not supported")
        return path

    def dml_table(self) -> str:
        """The one table a data manipulation statement names (never an index, never several)."""
        table = self.name()
        if self.at_punct("."):
            raise ValidationException("This operation is not supported on an index")
        if self.at_punct(","):
            raise ValidationException(
                "FROM clause may only contain a single table name in data manipulation statements"
            )
        return table

    def insert_rest(self) -> Insert:
        self.expect_keyword("INTO")
        table = self.dml_table()
        if self.at_keyword("AS", "AT"):
            raise ValidationException("AT is not supported in insert statements.")
        if self.at_keyword("VALUES") or self.at_punct("<<", "("):
            raise ValidationException(
                'Unsupported operation: Inserting multiple items in a single statement is not supported, use '
                '"INSERT INTO tableName VALUE item" instead'
            )
        self.expect_keyword("VALUE")
        if not self.at_punct("{"):
            if self.at_punct("[", "<<"):
                raise ValidationException(
                    'Unsupported operation: Inserting multiple items in a single statement is not supported, use '
                    '"INSERT INTO tableName VALUE item" instead'
                )
            raise ValidationException(
                "Unsupported format in item expression. Please use struct format {...} to express item values for "
                "insert statement."
            )
        item = self.value()
        if self.at_keyword("RETURNING"):
            raise ValidationException("RETURNING is not supported in INSERT")
        if self.keyword("ON"):
            # ON CONFLICT DO NOTHING: an existing key leaves the item as it is and answers success.
            if not (self.keyword("CONFLICT") and self.keyword("DO") and self.keyword("NOTHING")):
                raise ValidationException('Invalid conflict action. Only "DO NOTHING" action is supported.')
            return Insert(table, item["M"], if_absent=True)
        return Insert(table, item["M"])  # normalised by _bind

    def update_rest(self) -> Update:
        table = self.dml_table()
        actions: list[UpdateAction] = []
        while True:
            if self.keyword("SET"):
                actions.append(self.assignment())
                while self.punct(","):
                    actions.append(self.assignment())
            elif self.keyword("REMOVE"):
                actions.append(UpdateAction(REMOVE, self.path()))
                while self.punct(","):
                    actions.append(UpdateAction(REMOVE, self.path()))
            elif self.at_keyword("ADD", "DELETE"):
                raise ValidationException("Only SET and REMOVE are supported in update expressions at this time")
            else:
                break
        if not actions:
            raise self.unexpected()
        if not self.keyword("WHERE"):
            if self.token.kind == EOF:
                raise ValidationException("Where clause does not contain a mandatory equality on all key attributes")
            raise self.unexpected()
        where = self.condition()
        return Update(table, tuple(actions), where, self.returning(delete=False))

    def delete_rest(self) -> Delete:
        self.expect_keyword("FROM")
        table = self.dml_table()
        if not self.keyword("WHERE"):
            if self.token.kind == EOF:
                raise ValidationException("Where clause does not contain a mandatory equality on all key attributes")
            raise self.unexpected()
        where = self.condition()
        return Delete(table, where, self.returning(delete=True))

    def returning(self, *, delete: bool) -> str | None:
        if not self.keyword("RETURNING"):
            return None
        first = self.advance()
        second = self.advance()
        mode = RETURNING.get((first.text.upper(), second.text.upper())) if first.kind == second.kind == IDENT else None
        if mode is None:
            raise malformed("Unexpected token")
        if not self.punct("*"):
            if self.at_punct(","):
                raise ValidationException("Invalid syntax with multiple returning elements in RETURNING clause")
            raise ValidationException("Expected '*' after ( MODIFIED | ALL ) ( NEW | OLD ) in RETURNING clause")
        if delete and mode != "ALL_OLD":
            raise ValidationException(
                f"Invalid returning clause: RETURNING {first.text.upper()} {second.text.upper()} *. "
                "Only RETURNING ALL OLD * is allowed in DELETE statements."
            )
        return mode

    def assignment(self) -> UpdateAction:
        path = self.path()
        self.expect_punct("=")
        token = self.token
        name = token.text.upper() if token.kind == IDENT else ""
        if name in ("SET_ADD", "SET_DELETE") and self.tokens[self.pos + 1].text == "(":
            self.pos += 2
            first = self.operand()
            if not self.punct(","):
                raise ValidationException(f"{name} must have exactly two arguments")
            second = self.operand()
            if self.at_punct(","):
                raise ValidationException(f"{name} must have exactly two arguments")
            self.expect_punct(")")
            if first != path:
                raise ValidationException(f"The first argument to {name} must equal the assignment value")
            if not isinstance(second, Value):
                raise ValidationException(f"The second argument to {name} must be a value with type SET")
            return UpdateAction(ADD if name == "SET_ADD" else DELETE, path, second)
        if name == "LIST_APPEND" and self.tokens[self.pos + 1].text == "(":
            self.pos += 2
            first = self.operand()
            self.expect_punct(",")
            second = self.operand()
            self.expect_punct(")")
            return UpdateAction(SET, path, FunctionCall("list_append", (first, second)))
        left = self.operand()
        if self.at_punct("+", "-"):
            op = self.advance().text
            return UpdateAction(SET, path, Arithmetic(op, left, self.operand()))
        return UpdateAction(SET, path, left)

    # ------------------------------------------------------------------------------------------- conditions

    def condition(self) -> Any:
        node = self.conjunction()
        while self.keyword("OR"):
            node = Or(node, self.conjunction())
        return node

    def conjunction(self) -> Any:
        node = self.negation()
        while self.keyword("AND"):
            node = And(node, self.negation())
        return node

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise malformed("Expression nested too deeply")

    def negation(self) -> Any:
        if self.keyword("NOT"):
            self.enter()
            node = Not(self.negation())
            self.depth -= 1
            return node
        return self.predicate()

    def predicate(self) -> Any:
        if self.punct("("):
            self.enter()
            node = self.condition()
            self.expect_punct(")")
            self.depth -= 1
            return node
        token = self.token
        if token.kind == IDENT and self.tokens[self.pos + 1].text == "(":
            name = token.text.upper()
            if name in PREDICATE_FUNCTIONS:
                self.pos += 2
                args = [self.operand()]
                while self.punct(","):
                    args.append(self.operand())
                self.expect_punct(")")
                if len(args) != 2:
                    raise ValidationException(f"Unsupported operation: {name} takes two arguments")
                if not isinstance(args[0], Path):
                    raise ValidationException(f"Unsupported operation: the first argument to {name} must be a path")
                return FunctionCall(PREDICATE_FUNCTIONS[name], tuple(args))
            if name == "EXISTS":
                raise ValidationException("EXISTS can only be used in ExecuteTransaction write requests.")
        left = self.operand()
        if self.at_punct(*COMPARISONS):
            op = COMPARISONS[self.advance().text]
            if self.at_keyword("MISSING"):
                raise ValidationException("MISSING must be compared using IS operator")
            return Comparison(op, left, self.operand())
        if self.keyword("IS"):
            negated = self.keyword("NOT")
            if not isinstance(left, Path):
                raise ValidationException(
                    "The left hand side argument to IS must be a Variable Reference, Literal, or Path"
                )
            if self.keyword("MISSING"):
                return FunctionCall("attribute_exists" if negated else "attribute_not_exists", (left,))
            if self.keyword("NULL"):
                test = FunctionCall("attribute_type", (left, Value({"S": "NULL"})))
                return Not(test) if negated else test
            raise ValidationException(
                f"Unsupported data type for IS operator: {self.token.text.upper()}. Supported data types are "
                "[MISSING, NULL, BOOLEAN, BLOB, STRING, NUMERIC, STRUCT, TUPLE, LIST]"
            )
        negated = self.keyword("NOT")
        if self.keyword("BETWEEN"):
            lower = self.operand()
            self.expect_keyword("AND")
            node: Any = Between(left, lower, self.operand())
        elif self.keyword("IN"):
            node = self.in_list(left)
        else:
            if negated:
                raise self.unexpected()
            raise self.unexpected()
        return Not(node) if negated else node

    def in_list(self, left: Any) -> In:
        closing = {"[": "]", "(": ")"}.get(self.token.text) if self.token.kind == PUNCT else None
        if closing is None and self.token.kind == PARAM:
            return In(left, self.value())  # a Slot: _bind takes the choices from the parameter
        if closing is None or not isinstance(left, Path):
            raise ValidationException(_INVALID_IN)
        self.pos += 1
        if self.at_punct(closing):
            raise ValidationException(_INVALID_IN)
        choices = [self.operand()]
        while self.punct(","):
            choices.append(self.operand())
        self.expect_punct(closing)
        return In(left, tuple(choices))

    def operand(self) -> Any:
        token = self.token
        if token.kind == IDENT and self.tokens[self.pos + 1].text == "(" and token.text.upper() == "SIZE":
            self.pos += 2
            argument = self.path()
            self.expect_punct(")")
            return FunctionCall("size", (argument,))
        if token.kind == IDENT and self.tokens[self.pos + 1].text == "(":
            raise ValidationException(f"Unrecognized function: {token.text}")
        if token.kind in (IDENT, QUOTED) and not (
            token.kind == IDENT and token.text.upper() in ("TRUE", "FALSE", "NULL", "MISSING")
        ):
            return self.path()
        if token.kind == IDENT and token.text.upper() == "MISSING":
            raise ValidationException("MISSING must be compared using IS operator")
        return Value(self.value())  # raw: normalised by _bind

    # ----------------------------------------------------------------------------------------- names, paths

    def name(self) -> str:
        token = self.token
        if token.kind == QUOTED:
            self.pos += 1
            if token.text == "":
                raise ValidationException("Path component cannot be an empty string")
            return token.text
        if token.kind == IDENT and token.text.upper() not in _KEYWORDS:
            self.pos += 1
            return token.text
        raise self.unexpected()

    def path(self) -> Path:
        if self.at_punct("["):
            raise ValidationException("A path cannot start with a list index")
        elements: list[str | int] = [self.name()]
        while True:
            if self.punct("."):
                if self.at_punct("*"):
                    raise ValidationException("Unpivot path component like a.*.b are not supported")
                elements.append(self.name())
            elif self.punct("["):
                token = self.advance()
                if token.kind == NUMBER and token.text.isdigit():
                    elements.append(int(token.text))
                elif token.kind == STRING:
                    if token.text == "":
                        raise ValidationException("Path component cannot be an empty string")
                    elements.append(token.text)
                elif token.kind == PUNCT and token.text == "*":
                    raise ValidationException("Wildcard path component like a[*].b are not supported")
                elif token.kind == PARAM:
                    raise ValidationException("Unexpected path component")
                else:
                    raise malformed("Unexpected token")
                self.expect_punct("]")
            else:
                return Path(tuple(elements))

    # ------------------------------------------------------------------------------------------------ values

    def value(self, depth: int = 1) -> Any:
        """One literal as a raw AttributeValue (a `Slot` for a parameter, a `SetLiteral` for a set); `depth`: its
        nesting level."""
        if depth > MAX_VALUE_NESTING:
            raise ValidationException(NESTING_LEVELS)
        token = self.advance()
        kind = token.kind
        if kind == STRING:
            return {"S": token.text}
        if kind == NUMBER:
            return {"N": token.text}
        if kind == PARAM:
            self.slots += 1
            return Slot(self.slots - 1)
        if kind == PUNCT and token.text == "-" and self.token.kind == NUMBER:
            return {"N": "-" + self.advance().text}
        if kind == IDENT:
            word = token.text.upper()
            if word in ("TRUE", "FALSE"):
                return {"BOOL": word == "TRUE"}
            if word == "NULL":
                return {"NULL": True}
            if word == "MISSING":
                raise ValidationException("MISSING must be compared using IS operator")
        if kind == PUNCT and token.text == "{":
            return {"M": self.tuple_rest(depth)}
        if kind == PUNCT and token.text == "[":
            entries = []
            if not self.punct("]"):
                entries.append(self.value(depth + 1))
                while self.punct(","):
                    entries.append(self.value(depth + 1))
                self.expect_punct("]")
            return {"L": entries}
        if kind == PUNCT and token.text == "<<":
            return self.set_rest(depth)
        self.pos -= 1 if kind != EOF else 0
        raise self.unexpected()

    def tuple_rest(self, depth: int) -> dict:
        members: dict[str, dict] = {}
        if self.punct("}"):
            return members
        while True:
            key = self.advance()
            if key.kind not in (STRING, QUOTED):
                raise ValidationException(f"Tuple keys must be of type String. Actual type: {key.kind} under item")
            self.expect_punct(":")
            if key.text in members:
                raise ValidationException(f"Duplicate keys in tuple. Key: {key.text} under item")
            members[key.text] = self.value(depth + 1)
            if not self.punct(","):
                break
        self.expect_punct("}")
        return members

    def set_rest(self, depth: int) -> dict:
        members = []
        if not self.punct(">>"):
            members.append(self.value(depth + 1))
            while self.punct(","):
                members.append(self.value(depth + 1))
            self.expect_punct(">>")
        if not members:
            raise ValidationException("Empty bags are not supported")
        return SetLiteral(tuple(members))  # its kind, once parameters are in place: _resolve


_INVALID_IN = (
    "IN operator must have a left hand argument of type Variable Reference and right hand argument of type Seq with "
    "at least one member"
)
# Words that cannot stand as an unquoted name (quote them: "value").
_KEYWORDS = frozenset(
    {
        "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "IS", "BETWEEN", "INSERT", "INTO", "VALUE", "VALUES",
        "UPDATE", "SET", "REMOVE", "DELETE", "RETURNING", "ORDER", "BY", "ASC", "DESC", "MISSING", "NULL", "TRUE",
        "FALSE", "EXISTS", "AS", "AT", "ON",
        # SQL that PartiQL for DynamoDB does not have: refused where it stands, not read as a name or an alias.
        "JOIN", "INNER", "LEFT", "RIGHT", "OUTER", "CROSS", "LIMIT", "OFFSET", "GROUP", "HAVING", "UNION", "LIKE",
        "DISTINCT",
    }
)  # fmt: skip
