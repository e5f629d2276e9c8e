"""The PartiQL grammar (engine/partiql/lexer.py, parser.py): statement text in, statements whose conditions are the
expression grammar's own nodes out; and the renderer (render.py), whose expression text must resolve back into the
very nodes it was written from (a seeded round trip)."""

from __future__ import annotations

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import ExpressionContext, parse_condition, parse_update
from globaltables.engine.expressions.ast import (
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
from globaltables.engine.partiql import parse_statement, render
from globaltables.engine.partiql.statements import Delete, Exists, Insert, Select, Update
from globaltables.runtime.rng import Rng

S = lambda text: Value({"S": text})  # noqa: E731
N = lambda text: Value({"N": text})  # noqa: E731


def where(text: str, parameters=None):
    return parse_statement(f'SELECT * FROM "t" WHERE {text}', parameters).where


def refused(text: str, parameters=None) -> str:
    with pytest.raises(ValidationException) as caught:
        parse_statement(text, parameters)
    return caught.value.message


# ------------------------------------------------------------------------------------------------------- SELECT


def test_select_star_names_and_indexes():
    # Why: `*`, quoted and unquoted names, "table"."index" and ORDER BY are the SELECT forms AWS documents.
    assert _plain(parse_statement('select * from "Music"')) == _plain(Select("Music", None, None, None))
    assert _plain(parse_statement('SELECT * FROM Music."by-artist" WHERE a = 1 ORDER BY sk DESC, pk ASC')) == _plain(Select(
        "Music", "by-artist", None, Comparison("=", Path(("a",)), N("1")), (("sk", False), ("pk", True))
    ))


def test_projection_paths_members_indexes_and_quoted_names():
    # Why: document paths: `.member`, `[index]`, `['member']` and "quoted" names with `""` escapes.
    select = parse_statement("""SELECT a.b[2].c, "we""ird", m['x y'] FROM t""")
    assert _plain(select.projection) == _plain((Path(("a", "b", 2, "c")), Path(('we"ird',)), Path(("m", "x y"))))


def test_condition_precedence_and_operators():
    # Why: NOT binds tighter than AND, AND tighter than OR; `!=` is `<>`; a constant may stand on the left.
    assert _plain(where("a = 1 OR b = 2 AND NOT c <> 'x'")) == _plain(Or(
        Comparison("=", Path(("a",)), N("1")),
        And(Comparison("=", Path(("b",)), N("2")), Not(Comparison("<>", Path(("c",)), S("x")))),
    ))
    assert _plain(where("(a = 1 OR b != 2) AND 3 < c")) == _plain(And(
        Or(Comparison("=", Path(("a",)), N("1")), Comparison("<>", Path(("b",)), N("2"))),
        Comparison("<", N("3"), Path(("c",))),
    ))


def test_in_between_and_their_negations():
    assert _plain(where("a IN [1, 2]")) == _plain(In(Path(("a",)), (N("1"), N("2"))))
    assert _plain(where("a IN ('x')")) == _plain(In(Path(("a",)), (S("x"),)))
    assert _plain(where("a NOT IN [1]")) == _plain(Not(In(Path(("a",)), (N("1"),))))
    assert _plain(where("a BETWEEN 1 AND 5")) == _plain(Between(Path(("a",)), N("1"), N("5")))
    assert _plain(where("a NOT BETWEEN 1 AND 5 AND b = 1")) == _plain(And(
        Not(Between(Path(("a",)), N("1"), N("5"))), Comparison("=", Path(("b",)), N("1"))
    ))
    assert _plain(where("a IN ?", [{"L": [{"S": "x"}, {"S": "y"}]}])) == _plain(In(Path(("a",)), (S("x"), S("y"))))


def test_missing_null_and_the_functions_become_the_expression_functions():
    # Why: IS [NOT] MISSING is attribute_not_exists / attribute_exists; the PartiQL functions keep their meaning.
    assert _plain(where("a IS MISSING")) == _plain(FunctionCall("attribute_not_exists", (Path(("a",)),)))
    assert _plain(where("a.b IS NOT MISSING")) == _plain(FunctionCall("attribute_exists", (Path(("a", "b")),)))
    assert _plain(where("a IS NULL")) == _plain(FunctionCall("attribute_type", (Path(("a",)), S("NULL"))))
    assert _plain(where("a IS NOT NULL")) == _plain(Not(FunctionCall("attribute_type", (Path(("a",)), S("NULL")))))
    assert _plain(where("BEGINS_WITH(a, 'x')")) == _plain(FunctionCall("begins_with", (Path(("a",)), S("x"))))
    assert _plain(where("contains(a, 3)")) == _plain(FunctionCall("contains", (Path(("a",)), N("3"))))
    assert _plain(where("Attribute_Type(a, 'SS')")) == _plain(FunctionCall("attribute_type", (Path(("a",)), S("SS"))))
    assert _plain(where("SIZE(a) > 2")) == _plain(Comparison(">", FunctionCall("size", (Path(("a",)),)), N("2")))


def test_literals_become_attribute_values():
    # Why: PartiQL literals map onto DynamoDB's types; numbers are normalised as the item API normalises them.
    item = parse_statement(
        "INSERT INTO t VALUE {'s': 'it''s', 'n': -1.50e2, 'b': TRUE, 'z': null, 'l': [1, 'x'], "
        "'m': {'k': false}, 'ss': <<'a', 'b'>>, 'ns': <<1, 2.0>>, 'bs': <<?>>}",
        [{"B": "AAE="}],
    ).item
    assert _plain(item) == _plain({
        "s": {"S": "it's"},
        "n": {"N": "-150"},
        "b": {"BOOL": True},
        "z": {"NULL": True},
        "l": {"L": [{"N": "1"}, {"S": "x"}]},
        "m": {"M": {"k": {"BOOL": False}}},
        "ss": {"SS": ["a", "b"]},
        "ns": {"NS": ["1", "2"]},
        "bs": {"BS": ["AAE="]},
    })


def test_parameters_bind_in_order_and_must_all_be_used():
    assert _plain(where("a = ? AND b = ?", [{"S": "x"}, {"N": "2"}])) == _plain(And(
        Comparison("=", Path(("a",)), S("x")), Comparison("=", Path(("b",)), N("2"))
    ))
    assert refused("SELECT * FROM t WHERE a = ?") == "Number of parameters in request and statement don't match."
    assert refused("SELECT * FROM t", [{"S": "x"}]) == "Number of parameters in request and statement don't match."


def test_a_cached_statement_text_binds_each_requests_parameters_afresh():
    # Why: the parse of a text is cached; each request's statement must carry its own values in fresh structures
    # (an item stored in memory must never share a dict with another request's statement).
    text = "INSERT INTO t VALUE {'pk': ?, 'm': {'k': 'v'}, 'l': [?]}"
    first = parse_statement(text, [{"S": "a"}, {"N": "1"}])
    second = parse_statement(text, [{"S": "b"}, {"N": "2"}])
    assert first.item == {"pk": {"S": "a"}, "m": {"M": {"k": {"S": "v"}}}, "l": {"L": [{"N": "1"}]}}
    assert second.item["pk"] == {"S": "b"} and second.item["l"] == {"L": [{"N": "2"}]}
    assert first.item["m"] is not second.item["m"] and first.item["m"]["M"]["k"] is not second.item["m"]["M"]["k"]


@pytest.mark.parametrize(
    ("text", "parameters", "message"),
    [
        ("SELECT * FROM t WHERE a IN ?", [{"S": "x"}], "IN operator must have a left hand argument of type Variable Reference and right hand argument of type Seq with at least one member"),
        ("UPDATE t SET a = set_add(a, ?) WHERE pk = 1", [{"S": "x"}], "The second argument to SET_ADD must be a value with type SET"),
        ("INSERT INTO t VALUE {'a': <<?, 1>>}", [{"S": "x"}], "Unsupported data type in Bag. DynamoDB only supports either numbers or strings in bags"),
        ("INSERT INTO t VALUE {'a': ?}", [{"N": "x"}], "The parameter cannot be converted to a numeric value: x"),
    ],
)  # fmt: skip
def test_parameter_values_are_checked_where_they_stand(text, parameters, message):
    assert refused(text, parameters) == message


# ------------------------------------------------------------------------------------------------------- writes


def test_update_clauses_and_functions():
    # Why: SET and REMOVE clauses may repeat; SET_ADD / SET_DELETE are the ADD / DELETE actions of an update.
    update = parse_statement(
        "UPDATE t SET a = a + 1, b = LIST_APPEND(b, [1]) SET c = set_add(c, <<'x'>>) REMOVE d, e[0] "
        "SET f = set_delete(f, <<1>>) WHERE pk = 'k' RETURNING MODIFIED NEW *"
    )
    assert _plain(update) == _plain(Update(
        "t",
        (
            UpdateAction(SET, Path(("a",)), Arithmetic("+", Path(("a",)), N("1"))),
            UpdateAction(SET, Path(("b",)), FunctionCall("list_append", (Path(("b",)), Value({"L": [{"N": "1"}]})))),
            UpdateAction(ADD, Path(("c",)), Value({"SS": ["x"]})),
            UpdateAction(REMOVE, Path(("d",))),
            UpdateAction(REMOVE, Path(("e", 0))),
            UpdateAction(DELETE, Path(("f",)), Value({"NS": ["1"]})),
        ),
        Comparison("=", Path(("pk",)), S("k")),
        "UPDATED_NEW",
    ))


@pytest.mark.parametrize(
    ("words", "mode"),
    [("ALL OLD", "ALL_OLD"), ("MODIFIED OLD", "UPDATED_OLD"), ("all new", "ALL_NEW"), ("Modified New", "UPDATED_NEW")],
)
def test_returning_forms(words, mode):
    assert _plain(parse_statement(f"UPDATE t SET a = 1 WHERE pk = 'k' RETURNING {words} *").returning) == _plain(mode)


def test_delete_insert_and_exists():
    assert _plain(parse_statement("DELETE FROM t WHERE pk = 'k' RETURNING ALL OLD *")) == _plain(Delete(
        "t", Comparison("=", Path(("pk",)), S("k")), "ALL_OLD"
    ))
    assert _plain(parse_statement("INSERT INTO t VALUE {'pk': 'k'};")) == _plain(Insert("t", {"pk": {"S": "k"}}))
    assert parse_statement("INSERT INTO t VALUE {'pk': 'k'} ON CONFLICT DO NOTHING").if_absent
    exists = parse_statement("NOT EXISTS(SELECT * FROM t WHERE pk = 'k' AND a = 1)")
    assert isinstance(exists, Exists) and exists.negated and exists.select.table == "t"


# ------------------------------------------------------------------------------------------------------- errors


def test_deep_nesting_is_refused_before_it_could_exhaust_the_stack():
    # Why: an 8 KB statement of parentheses or brackets must be a ValidationException, not a RecursionError (a 500).
    assert refused("SELECT * FROM t WHERE " + "(" * 4000 + "a = 1" + ")" * 4000) == (
        "Statement wasn't well formed, can't be processed: Expression nested too deeply"
    )
    assert refused("SELECT * FROM t WHERE " + "NOT " * 2000 + "a = 1") == (
        "Statement wasn't well formed, can't be processed: Expression nested too deeply"
    )
    assert refused("INSERT INTO t VALUE {'a': " + "[" * 4000 + "]" * 4000 + "}") == (
        "Nesting Levels have exceeded supported limits"
    )
    parse_statement("SELECT * FROM t WHERE " + "(" * 90 + "a = 1" + ")" * 90)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Statement wasn't well formed, can't be processed: Expected data manipulation"),
        ("CREATE TABLE t", "Statement wasn't well formed, can't be processed: Expected data manipulation"),
        ("SELECT * FROM t WHERE a =", "Statement wasn't well formed, can't be processed: Unexpected end of statement"),
        ("SELECT * FROM t WHERE a = 1 b", "Statement wasn't well formed, can't be processed: Unexpected token after expression"),
        ("SELECT * FROM t WHERE a = 1 FROM", "Statement wasn't well formed, can't be processed: Unexpected keyword"),
        ("SELECT * FROM t WHERE a = 'open", "Statement wasn't well formed, can't be processed: Unexpected token"),
        ("SELECT * FROM t; SELECT * FROM t", "Only one operation is allowed in a statement."),
        ("SELECT * FROM t AS x", "Aliasing is not supported"),
        ("SELECT * FROM t x WHERE a = 1", "Aliasing is not supported"),
        ("SELECT * FROM t JOIN u", "Statement wasn't well formed, can't be processed: Unexpected keyword"),
        ("SELECT * FROM t LIMIT 5", "Statement wasn't well formed, can't be processed: Unexpected keyword"),
        ("INSERT INTO t VALUE {'a': 1} ON CONFLICT DO UPDATE", 'Invalid conflict action. Only "DO NOTHING" action is supported.'),
        ("SELECT * FROM t, u", "Only select from a single table or index is supported."),
        ("SELECT * FROM a.b.c", "A path may contain at most 2 components in the FROM clause"),
        ("SELECT * FROM t ORDER BY a", "Must have WHERE clause in the statement when using ORDER BY clause."),
        ("SELECT a[*] FROM t", "Wildcard path component like a[*].b are not supported"),
        ("SELECT * FROM t WHERE a IN []", "IN operator must have a left hand argument of type Variable Reference and right hand argument of type Seq with at least one member"),
        ("SELECT * FROM t WHERE a IS TRUE", "Unsupported data type for IS operator: TRUE. Supported data types are [MISSING, NULL, BOOLEAN, BLOB, STRING, NUMERIC, STRUCT, TUPLE, LIST]"),
        ("SELECT * FROM t WHERE upper(a) = 'X'", "Unrecognized function: upper"),
        ("INSERT INTO t VALUES {'a': 1}", 'Unsupported operation: Inserting multiple items in a single statement is not supported, use "INSERT INTO tableName VALUE item" instead'),
        ("INSERT INTO t VALUE 'x'", "Unsupported format in item expression. Please use struct format {...} to express item values for insert statement."),
        ("INSERT INTO t VALUE {'a': 1, 'a': 2}", "Duplicate keys in tuple. Key: a under item"),
        ("INSERT INTO t VALUE {'a': <<1, 'x'>>}", "Unsupported data type in Bag. DynamoDB only supports either numbers or strings in bags"),
        ("INSERT INTO t VALUE {'a': 1} RETURNING ALL OLD *", "RETURNING is not supported in INSERT"),
        ("UPDATE t SET a = 1", "Where clause does not contain a mandatory equality on all key attributes"),
        ("UPDATE t SET a = set_add(a, 1) WHERE pk = 1", "The second argument to SET_ADD must be a value with type SET"),
        ("UPDATE t SET a = set_delete(a) WHERE pk = 1", "SET_DELETE must have exactly two arguments"),
        ("UPDATE t SET a = 1 WHERE pk = 1 RETURNING ALL NEW", "Expected '*' after ( MODIFIED | ALL ) ( NEW | OLD ) in RETURNING clause"),
        ("UPDATE t SET a = 1 WHERE pk = 1 RETURNING ALL NEW *, x", "Statement wasn't well formed, can't be processed: Unexpected token after expression"),
        ("UPDATE t SET a = 1 WHERE pk = 1 AND b IS MISSING", None),
        ("DELETE FROM t", "Where clause does not contain a mandatory equality on all key attributes"),
        ('DELETE FROM t."i" WHERE pk = 1', "This operation is not supported on an index"),
        ("DELETE FROM t, u WHERE pk = 1", "FROM clause may only contain a single table name in data manipulation statements"),
        ('UPDATE t."i" SET a = 1 WHERE pk = 1', "This operation is not supported on an index"),
        ("DELETE FROM t WHERE pk = 1 RETURNING MODIFIED OLD *", "Invalid returning clause: RETURNING MODIFIED OLD *. Only RETURNING ALL OLD * is allowed in DELETE statements."),
        ("SELECT * FROM t WHERE EXISTS(SELECT * FROM t)", "EXISTS can only be used in ExecuteTransaction write requests."),
        ("SELECT * FROM t WHERE a = 1e999", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
    ],
)  # fmt: skip
def test_refusals_are_worded_as_dynamodb_words_them(text, message):
    if message is None:  # well formed: parses
        parse_statement(text)
        return
    assert refused(text) == message


# --------------------------------------------------------------------------------------------- render round trip


class Conditions:
    """Seeded random condition trees over a few attributes, as the PartiQL parser builds them."""

    NAMES = ("a", "b", "select", "x y")  # a reserved word and a name with a space: placeholders must cope

    def __init__(self, rng: Rng) -> None:
        self.rng = rng

    def path(self) -> Path:
        elements: list = [self.rng.choice(self.NAMES)]
        for _ in range(self.rng.randrange(3)):
            elements.append(self.rng.choice(("m", 0, 2)))
        return Path(tuple(elements))

    def value(self) -> Value:
        return self.rng.choice((N(str(self.rng.randrange(-50, 50))), S(self.rng.choice("pqr")), Value({"BOOL": True})))

    def operand(self):
        return self.rng.choice((self.path(), self.value(), FunctionCall("size", (self.path(),))))

    def number(self) -> Value:
        return N(str(self.rng.randrange(-50, 50)))

    def condition(self, depth: int = 0):
        roll = self.rng.randrange(10 if depth < 3 else 6)
        if roll == 0:
            op = self.rng.choice(("=", "<>", "<", "<=", ">", ">="))
            right = self.operand() if op in ("=", "<>") else self.rng.choice((self.path(), self.number()))
            return Comparison(op, self.path(), right)
        if roll == 1:
            low, high = sorted((int(self.number().value["N"]), int(self.number().value["N"])))
            return Between(self.path(), N(str(low)), N(str(high)))
        if roll == 2:
            return In(self.path(), tuple(self.value() for _ in range(self.rng.randrange(1, 4))))
        if roll == 3:
            return FunctionCall(self.rng.choice(("attribute_exists", "attribute_not_exists")), (self.path(),))
        if roll == 4:
            return FunctionCall("begins_with", (self.path(), S("p")))
        if roll == 5:
            return FunctionCall("attribute_type", (self.path(), S(self.rng.choice(("S", "N", "SS", "NULL")))))
        if roll in (6, 7):
            kind = And if roll == 6 else Or
            return kind(self.condition(depth + 1), self.condition(depth + 1))
        return Not(self.condition(depth + 1))


@pytest.mark.parametrize("seed", range(200))
def test_rendered_conditions_resolve_back_into_the_same_tree(seed):
    # Why: a PartiQL WHERE clause runs as the item API's expression text; that text must mean exactly the tree.
    tree = Conditions(Rng(f"partiql-render-{seed}")).condition()
    p = render.Placeholders()
    text = render.condition(tree, p)
    ctx = ExpressionContext(p.names or None, p.values or None)
    resolved = parse_condition(text, ctx, "ConditionExpression")
    assert _plain(resolved) == _plain(tree), (seed, text)


def test_rendered_updates_resolve_back_into_the_same_actions():
    update = parse_statement(
        "UPDATE t SET a = a + 1, \"select\".m[1] = list_append([0], b) REMOVE c "
        "SET s = set_add(s, <<'x'>>) SET d = set_delete(d, <<1>>) WHERE pk = 'k'"
    )
    p = render.Placeholders()
    text = render.update(update.actions, p)
    assert text == "SET #n0 = #n0 + :v0, #n1.#n2[1] = list_append(:v1, #n3) REMOVE #n4 ADD #n5 :v2 DELETE #n6 :v3"
    resolved = parse_update(text, ExpressionContext(p.names, p.values))
    assert sorted(map(_plain, resolved.actions), key=repr) == sorted(map(_plain, update.actions), key=repr)


def _plain(node):
    """A comparable form of a tree (Value compares by identity; its AttributeValue by content)."""
    if isinstance(node, Value):
        return ("value", repr(node.value))
    if isinstance(node, (tuple, list)):
        return tuple(_plain(n) for n in node)
    if hasattr(node, "__slots__") and not isinstance(node, Path):
        return (type(node).__name__, *(_plain(getattr(node, name)) for name in node.__slots__))
    return node
