"""Lexer and parser: tokens, syntax-error texts, precedence, and the text-level issues DynamoDB reports.

Syntax-error "near" texts follow DynamoDB as recorded by moto's AWS-verified tokenizer tests: the offending token
with the token before and after it, in the original spacing.
"""

from __future__ import annotations

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import ExpressionContext, parse_condition, parse_projection, parse_update
from globaltables.engine.expressions.ast import And, Between, Comparison, FunctionCall, In, Not, Or, Path, Value
from globaltables.engine.expressions.lexer import EOF, INVALID, NAME, NAME_REF, NUMBER, PUNCT, VALUE_REF, tokenize
from globaltables.engine.expressions.parser import parse_syntax
from globaltables.engine.expressions.reserved_words import RESERVED_WORDS, is_reserved


def error(fn, *args) -> str:
    with pytest.raises(ValidationException) as caught:
        fn(*args)
    return caught.value.message


def values(*names: str) -> dict:
    return {name: {"N": "1"} for name in names}


# ------------------------------------------------------------------------------------------------------- lexer


def test_tokens_carry_kind_text_and_offsets():
    tokens = tokenize("a.#b[12] <= :v_1")
    assert [(t.kind, t.text) for t in tokens] == [
        (NAME, "a"),
        (PUNCT, "."),
        (NAME_REF, "#b"),
        (PUNCT, "["),
        (NUMBER, "12"),
        (PUNCT, "]"),
        (PUNCT, "<="),
        (VALUE_REF, ":v_1"),
        (EOF, "<EOF>"),
    ]
    assert tokens[6].start == 9 and tokens[6].end == 11
    assert tokens[-1].start == tokens[-1].end == len("a.#b[12] <= :v_1")


def test_two_character_operators_are_one_token():
    assert [t.text for t in tokenize("a<>b<=c>=d<e>f")][:-1] == ["a", "<>", "b", "<=", "c", ">=", "d", "<", "e", ">", "f"]


def test_unknown_characters_become_invalid_tokens():
    tokens = tokenize("a @ b")
    assert tokens[1].kind == INVALID and tokens[1].text == "@"


def test_placeholders_may_start_with_digits():
    assert [t.kind for t in tokenize("#1 :2")][:-1] == [NAME_REF, VALUE_REF]


# ----------------------------------------------------------------------------------------------- syntax errors

UPDATE_SYNTAX_ERRORS = [
    # (expression, offending token, near) -- from moto's AWS-verified tokenizer tests
    ("SET attrName = 3", "3", "= 3"),
    ("SET attrName = 34", "34", "= 34"),
    ("SET MyStr[ 3", "<EOF>", "3"),
    ("SET MyStr[3 )", ")", "3 )"),
    ("SET MyStr[3)", ")", "3)"),
    ("SET 2", "2", "SET 2"),
    ("2", "2", "2"),
    ("SET )", ")", "SET )"),
    ("SET ) 3", ")", "SET ) 3"),
    ("SET MyStr[ 3 ", "<EOF>", "3 "),
    ("SET MyStr = (:_val", "<EOF>", ":_val"),
    ("SET MyStr = (:_val ", "<EOF>", ":_val "),
    ("SET MyStr = [:_val", "[", "= [:_val"),
    ("SET MyStr = ((:_val", "<EOF>", ":_val"),
    ("SET MyStr = ):_val", ")", "= ):_val"),
    ("SET MyStr = ]:_val", "]", "= ]:_val"),
    ("SET MyStr = ):_val + :val2", ")", "= ):_val"),
    ("RESET NonExistent", "RESET", "RESET NonExistent"),
    ("RESET NonExistent value", "RESET", "RESET NonExistent"),
    ("SET NonExistent value", "value", "NonExistent value"),
    ("SET", "<EOF>", "SET"),
    ("SET a", "<EOF>", "a"),
    ("SET a = :v,", "<EOF>", ","),
    ("SET a = b + c + d", "+", "c + d"),
    ("SET a = :v b = :w", "b", ":v b ="),
    ("REMOVE a[-1]", "-", "[-1"),
    ("ADD a b", "b", "a b"),
    ("DELETE a", "<EOF>", "a"),
    ("SET a-b = :v", "-", "a-b"),
]


@pytest.mark.parametrize("text,token,near", UPDATE_SYNTAX_ERRORS)
def test_update_syntax_errors_quote_token_and_near(text, token, near):
    ctx = ExpressionContext(None, values(":_val", ":val2", ":v", ":w"))
    assert error(parse_update, text, ctx) == f'Invalid UpdateExpression: Syntax error; token: "{token}", near: "{near}"'


CONDITION_SYNTAX_ERRORS = [
    ("a", "<EOF>", "a"),
    ("a = ", "<EOF>", "= "),
    ("a = :v AND", "<EOF>", "AND"),
    ("a = :v b = :v", "b", ":v b ="),
    ("(a AND b)", "AND", "a AND b"),
    ("(a) AND b = :v", "AND", ") AND b"),
    ("a IN ()", ")", "()"),
    ("a BETWEEN :v", "<EOF>", ":v"),
    ("a BETWEEN :v OR :v", "OR", ":v OR :v"),
    ("a + :v = :v", "+", "a + :v"),
    ("first-name = :v", "-", "first-name"),
    ("a = :v)", ")", ":v)"),
    ("a @ b", "@", "a @ b"),
    ("NOT", "<EOF>", "NOT"),
    ("a = = :v", "=", "= = :v"),
    ("begins_with()", ")", "()"),
    ("a.1 = :v", "1", ".1 ="),
    ("a[b] = :v", "b", "[b]"),
    ("(a = :v) = :v", "=", ") = :v"),
    ("   ", "<EOF>", ""),
]


@pytest.mark.parametrize("text,token,near", CONDITION_SYNTAX_ERRORS)
def test_condition_syntax_errors_quote_token_and_near(text, token, near):
    ctx = ExpressionContext(None, values(":v"))
    assert error(parse_condition, text, ctx) == f'Invalid ConditionExpression: Syntax error; token: "{token}", near: "{near}"'


def test_projection_refuses_values_and_functions():
    ctx = ExpressionContext(None, None)
    assert error(parse_projection, "a, :v", ctx) == 'Invalid ProjectionExpression: Syntax error; token: ":v", near: ", :v"'
    assert error(parse_projection, "size(a)", ctx) == 'Invalid ProjectionExpression: Syntax error; token: "(", near: "size(a"'
    assert error(parse_projection, "a,", ctx) == 'Invalid ProjectionExpression: Syntax error; token: "<EOF>", near: ","'


def test_empty_expressions_are_refused_by_kind():
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "", ctx) == "Invalid ConditionExpression: The expression can not be empty;"
    assert error(parse_condition, "", ctx, "FilterExpression") == "Invalid FilterExpression: The expression can not be empty;"
    assert error(parse_update, "", ctx) == "Invalid UpdateExpression: The expression can not be empty;"
    assert error(parse_projection, "", ctx) == "Invalid ProjectionExpression: The expression can not be empty;"


def test_expressions_longer_than_4_kb_are_refused():
    ctx = ExpressionContext(None, None)
    ok = "attribute_exists(a)" + " " * (4096 - len("attribute_exists(a)"))
    parse_condition(ok, ctx)
    too_long = ok + " "
    assert error(parse_condition, too_long, ctx) == (
        "Invalid ConditionExpression: Expression size has exceeded the maximum allowed size; expression size: 4097"
    )
    # Bytes, not characters, count.
    multibyte = "attribute_exists(a)" + " " * 3000 + "\u00e9" * 600
    assert "expression size: 4219" in error(parse_condition, multibyte, ctx)


def test_deep_nesting_is_refused_not_a_crash():
    ctx = ExpressionContext(None, values(":v"))
    # 1000 NOTs: DynamoDB's limit of 300 operators is what refuses this one.
    text = "NOT " * 1000 + "a = :v"
    assert error(parse_condition, text, ctx) == (
        "Invalid ConditionExpression: The expression contains too many operators; operator count: 301"
    )
    text = "(" * 1000 + "a = :v" + ")" * 1000
    message = error(parse_condition, text, ctx)
    assert message.startswith("Invalid ConditionExpression: ")


def test_expressions_nest_as_deep_as_300_operators_allow():
    ctx = ExpressionContext(None, values(":v"))
    text = "a = :v"
    for _ in range(149):
        text = f"a = :v OR ({text})"  # 299 operators, 149 levels of parentheses
    assert parse_condition(text, ctx) is not None
    text = "a = :v"
    for _ in range(299):
        text = f"NOT ({text})"  # 300 operators, 299 levels of NOT and parentheses
    assert parse_condition(text, ctx) is not None
    assert error(parse_condition, f"NOT ({text})", ctx) == (
        "Invalid ConditionExpression: The expression contains too many operators; operator count: 301"
    )


def test_update_operators_count_toward_the_limit():
    ctx = ExpressionContext(None, values(":v"))
    sets = ",".join(f"a{i}=:v+:v" for i in range(300))  # 300 '+' in 3.3 KB
    assert parse_update(f"SET {sets}", ctx) is not None
    assert error(parse_update, f"SET {sets},b=:v-:v", ctx) == (
        "Invalid UpdateExpression: The expression contains too many operators; operator count: 301"
    )


def test_names_start_with_a_letter():
    ctx = ExpressionContext(None, values(":v"))
    for text, token in (("_x = :v", "_"), ("1x = :v", "1"), ("a-b = :v", "-"), ("_f(a)", "_")):
        assert error(parse_condition, text, ctx).startswith(f'Invalid ConditionExpression: Syntax error; token: "{token}"')
    assert error(parse_condition, "f(a)", ctx) == "Invalid ConditionExpression: Invalid function name; function: f"
    assert parse_condition("a_1 = :v", ctx) is not None


def test_list_index_range():
    ctx = ExpressionContext(None, values(":v"))
    assert error(parse_condition, "a[99999999999999] = :v", ctx) == (
        "Invalid ConditionExpression: List index is not within the allowable range; index: [99999999999999]"
    )
    assert error(parse_condition, "a[2147483648] = :v", ctx) == (
        "Invalid ConditionExpression: List index is not within the allowable range; index: [2147483648]"
    )
    assert parse_condition("a[2147483647] = :v", ctx) is not None


# -------------------------------------------------------------------------------------------------- precedence


def cond(text: str, **vals):
    return parse_condition(text, ExpressionContext(None, {k: {"N": "1"} for k in vals} or None))


def test_and_binds_tighter_than_or():
    tree = cond("a = :v OR b = :v AND c = :v", **{":v": 1})
    assert isinstance(tree, Or)
    assert isinstance(tree.right, And)


def test_not_binds_tighter_than_and():
    tree = cond("NOT a = :v AND b = :v", **{":v": 1})
    assert isinstance(tree, And)
    assert isinstance(tree.left, Not)
    assert isinstance(tree.left.condition, Comparison)


def test_parentheses_override_precedence():
    tree = cond("(a = :v OR b = :v) AND c = :v", **{":v": 1})
    assert isinstance(tree, And)
    assert isinstance(tree.left, Or)


def test_keywords_are_case_insensitive_and_functions_case_sensitive():
    tree = cond("a between :v and :v or not b in (:v)", **{":v": 1})
    assert isinstance(tree, Or)
    assert isinstance(tree.left, Between)
    assert isinstance(tree.right, Not) and isinstance(tree.right.condition, In)
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "ATTRIBUTE_EXISTS(a)", ctx) == (
        "Invalid ConditionExpression: Invalid function name; function: ATTRIBUTE_EXISTS"
    )


def test_between_consumes_its_own_and():
    tree = cond("a BETWEEN :v AND :v AND b = :v", **{":v": 1})
    assert isinstance(tree, And)
    assert isinstance(tree.left, Between)


def test_parenthesised_operands_and_functions():
    tree = cond("(a) = :v AND (size(b)) > :v AND (begins_with(c, d))", **{":v": 1})
    assert isinstance(tree.left.left, Comparison) and tree.left.left.left == Path(("a",))
    assert isinstance(tree.left.right.left, FunctionCall) and tree.left.right.left.name == "size"
    assert isinstance(tree.right, FunctionCall) and tree.right.name == "begins_with"


def test_paths_with_members_indexes_and_placeholders():
    ctx = ExpressionContext({"#b": "b.c"}, {":v": {"N": "1"}})
    tree = parse_condition("a[0].#b[2][3].d = :v", ctx)
    assert tree.left == Path(("a", 0, "b.c", 2, 3, "d"))
    assert str(tree.left) == "[a, [0], b.c, [2], [3], d]"


def test_in_takes_at_most_100_operands():
    tree = cond("a IN (" + ", ".join(["b"] * 100) + ")")
    assert len(tree.choices) == 100
    assert error(parse_condition, "a IN (" + ", ".join(["b"] * 101) + ")", ExpressionContext(None, None)) == (
        "Invalid ConditionExpression: Incorrect number of operands for operator or function; operator or function: "
        "IN, number of operands: 101"
    )


def test_syntax_trees_are_cached_by_text():
    first = parse_syntax("condition", "a = :cached_probe")
    assert parse_syntax("condition", "a = :cached_probe") is first
    assert parse_syntax("update", "a = :cached_probe") is not first


def test_resolution_does_not_touch_the_cached_tree():
    text = "#n = :v"
    parse_condition(text, ExpressionContext({"#n": "x"}, {":v": {"S": "1"}}))
    tree = parse_condition(text, ExpressionContext({"#n": "y"}, {":v": {"N": "2"}}))
    assert tree.left == Path(("y",)) and tree.right.value == {"N": "2"}
    assert parse_syntax("condition", text).tree.left == Path(("#n",))


# ---------------------------------------------------------------------------------------------- reserved words


def test_reserved_words_load_from_the_shipped_list():
    assert len(RESERVED_WORDS) == 573
    assert is_reserved("status") and is_reserved("Size") and not is_reserved("contains_x")


@pytest.mark.parametrize(
    "fn,text,word",
    [
        (parse_condition, "status = :v", "status"),
        (parse_condition, "a.Name = :v", "Name"),
        (parse_condition, "begins_with(a.b[1].DATA, :v)", "DATA"),
        (parse_update, "SET a = :v REMOVE Year", "Year"),
        (parse_update, "SET a = :v, set = :v", "set"),
        (parse_projection, "a, b.comment", "comment"),
        (parse_condition, "a = :v AND and = :v", "and"),
    ],
)
def test_bare_reserved_words_are_refused_as_written(fn, text, word):
    ctx = ExpressionContext(None, values(":v"))
    kind = {parse_condition: "ConditionExpression", parse_update: "UpdateExpression"}.get(fn, "ProjectionExpression")
    assert error(fn, text, ctx) == f"Invalid {kind}: Attribute name is a reserved keyword; reserved keyword: {word}"


def test_reserved_words_through_placeholders_and_function_names_are_fine():
    ctx = ExpressionContext({"#s": "status"}, values(":v"))
    parse_condition("#s = :v AND size(a) > :v", ctx)


# ------------------------------------------------------------------------------------------------------ issues


def test_redundant_parentheses_are_refused():
    ctx = ExpressionContext(None, values(":v"))
    for text in ["((a = :v))", "((a)) = :v", "NOT ((a = :v))", "a = :v AND ((b = :v))", "a = ((:v))"]:
        assert error(parse_condition, text, ctx) == "Invalid ConditionExpression: The expression has redundant parentheses;"
    for text in ["(a = :v)", "((a = :v) AND b = :v)", "(a = :v) AND (b = :v)", "begins_with((a), :v)", "a IN ((:v), :v)"]:
        parse_condition(text, ExpressionContext(None, {":v": {"S": "x"}}))
    assert error(parse_update, "SET a = ((:v))", ExpressionContext(None, values(":v"))) == (
        "Invalid UpdateExpression: The expression has redundant parentheses;"
    )


def test_function_rules_in_conditions():
    ctx = lambda: ExpressionContext(None, values(":v"))  # noqa: E731
    cases = {
        "foo(a)": "Invalid function name; function: foo",
        "size(a)": "The function is not allowed to be used this way in an expression; function: size",
        "attribute_exists(a) = :v": "The function is not allowed to be used this way in an expression; function: attribute_exists",
        "a = contains(a, :v)": "The function is not allowed to be used this way in an expression; function: contains",
        "if_not_exists(a, :v) = :v": "The function is not allowed to be used this way in an expression; function: if_not_exists",
        "list_append(a, :v)": "The function is not allowed to be used this way in an expression; function: list_append",
        "size(a, b) = :v": "Incorrect number of operands for operator or function; operator or function: size, number of operands: 2",
        "attribute_exists(a, b)": "Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2",
        "begins_with(a)": "Incorrect number of operands for operator or function; operator or function: begins_with, number of operands: 1",
        "attribute_exists(:v)": "Operator or function requires a document path; operator or function: attribute_exists",
        "attribute_not_exists(size(a))": "Operator or function requires a document path; operator or function: attribute_not_exists",
    }
    for text, message in cases.items():
        assert error(parse_condition, text, ctx()) == f"Invalid ConditionExpression: {message}", text


def test_function_rules_in_updates():
    ctx = lambda: ExpressionContext(None, values(":v"))  # noqa: E731
    cases = {
        "SET a = size(b)": "The function is not allowed to be used this way in an expression; function: size",
        "SET a = attribute_exists(b)": "The function is not allowed to be used this way in an expression; function: attribute_exists",
        "SET a = foo(b)": "Invalid function name; function: foo",
        "SET a = if_not_exists(b)": "Incorrect number of operands for operator or function; operator or function: if_not_exists, number of operands: 1",
        "SET a = list_append(b, :v, :v)": "Incorrect number of operands for operator or function; operator or function: list_append, number of operands: 3",
        "SET a = if_not_exists(:v, b)": "Operator or function requires a document path; operator or function: if_not_exists",
    }
    for text, message in cases.items():
        assert error(parse_update, text, ctx()) == f"Invalid UpdateExpression: {message}", text


def test_update_functions_nest():
    ctx = ExpressionContext(None, {":e": {"L": []}, ":v": {"L": [{"N": "1"}]}})
    update = parse_update("SET a = list_append(if_not_exists(a, :e), :v)", ctx)
    assert update.actions[0].value.name == "list_append"


def test_each_clause_only_once():
    ctx = lambda: ExpressionContext(None, values(":v"))  # noqa: E731
    for clause, text in [
        ("SET", "SET a = :v SET b = :v"),
        ("REMOVE", "REMOVE a REMOVE b"),
        ("ADD", "ADD a :v add b :v"),
        ("DELETE", "DELETE a :v DELETE b :v"),
    ]:
        assert error(parse_update, text, ctx()) == (
            f'Invalid UpdateExpression: The "{clause}" section can only be used once in an update expression;'
        )


def test_clauses_in_any_order_and_case():
    ctx = ExpressionContext(None, {":n": {"N": "1"}, ":s": {"SS": ["x"]}})
    update = parse_update("remove a, b add c :n set d = :n delete e :s", ctx)
    assert [a.kind for a in update.actions] == ["REMOVE", "REMOVE", "ADD", "SET", "DELETE"]


def test_issue_priority_is_by_category_not_position():
    # An undefined value stands before the reserved word, but the reserved word is reported.
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, ":nope = a AND status = b", ctx) == (
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"
    )
    # Unknown function beats reserved word; redundant parentheses beat everything after syntax.
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "status = a AND foo(b)", ctx) == "Invalid ConditionExpression: Invalid function name; function: foo"
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "((status = a)) AND foo(b)", ctx) == (
        "Invalid ConditionExpression: The expression has redundant parentheses;"
    )
    # Undefined placeholders beat operand counts and types.
    ctx = ExpressionContext(None, None)
    assert error(parse_condition, "size(a, b) = :x", ctx) == (
        "Invalid ConditionExpression: An expression attribute value used in expression is not defined; attribute value: :x"
    )


def test_document_path_nesting_limit():
    ctx = ExpressionContext(None, values(":v"))
    ok = "a" + ".b" * 31
    parse_condition(ok + " = :v", ctx)
    assert error(parse_condition, ok + ".c = :v", ExpressionContext(None, values(":v"))) == (
        "Invalid ConditionExpression: The document path has too many nesting levels; nesting levels: 33"
    )


def test_syntax_tree_shapes():
    tree = cond("a IN (:v, b) OR contains(a, :v)", **{":v": 1})
    assert isinstance(tree.left, In) and tree.left.choices[1] == Path(("b",))
    assert isinstance(tree.left.choices[0], Value)
    assert isinstance(tree.right, FunctionCall) and tree.right.name == "contains"
