"""Conditions and filters: DynamoDB's evaluation rules and the errors found when resolving constants."""

from __future__ import annotations

import base64

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import ExpressionContext, condition_paths, evaluate_condition, parse_condition
from globaltables.engine.expressions.ast import Path


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


ITEM = {
    "pk": {"S": "k"},
    "s": {"S": "hello"},
    "e": {"S": ""},
    "u": {"S": "\u00e9t\u00e9"},
    "n": {"N": "10.5"},
    "neg": {"N": "-3"},
    "b": {"B": b64(b"\x00\xff\x10")},
    "t": {"BOOL": True},
    "z": {"NULL": True},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b64(b"\x01"), b64(b"\x02")]},
    "l": {"L": [{"S": "x"}, {"N": "2"}, {"M": {"deep": {"S": "d"}}}, {"L": [{"N": "1"}]}]},
    "m": {"M": {"a": {"N": "1"}, "b": {"M": {"c": {"S": "see"}}}, "weird name": {"S": "w"}}},
}

VALUES = {
    ":s": {"S": "hello"},
    ":he": {"S": "he"},
    ":ell": {"S": "ell"},
    ":empty": {"S": ""},
    ":n": {"N": "10.50"},
    ":ten": {"N": "10"},
    ":eleven": {"N": "11"},
    ":two": {"N": "2"},
    ":three": {"N": "3"},
    ":four": {"N": "4"},
    ":five": {"N": "5"},
    ":sn": {"S": "10.5"},
    ":b": {"B": b64(b"\x00\xff\x10")},
    ":b0": {"B": b64(b"\x00")},
    ":bff": {"B": b64(b"\xff")},
    ":t": {"BOOL": True},
    ":f": {"BOOL": False},
    ":null": {"NULL": True},
    ":ss": {"SS": ["b", "a"]},
    ":ns": {"NS": ["2.5", "1"]},
    ":a": {"S": "a"},
    ":x": {"S": "x"},
    ":d": {"S": "d"},
    ":one": {"N": "1"},
    ":b1": {"B": b64(b"\x01")},
    ":list": {"L": [{"S": "x"}, {"N": "2"}, {"M": {"deep": {"S": "d"}}}, {"L": [{"N": "1"}]}]},
    ":map": {"M": {"deep": {"S": "d"}}},
    ":Ltype": {"S": "L"},
    ":Ntype": {"S": "N"},
    ":SStype": {"S": "SS"},
    ":NULLtype": {"S": "NULL"},
    ":see": {"S": "see"},
    ":w": {"S": "w"},
}


def check(text: str, item: dict | None = ITEM, names: dict | None = None) -> bool:
    ctx = ExpressionContext(names, VALUES)
    return evaluate_condition(parse_condition(text, ctx), item)


def error(text: str, values: dict | None = None, kind: str = "ConditionExpression") -> str:
    with pytest.raises(ValidationException) as caught:
        parse_condition(text, ExpressionContext(None, values if values is not None else VALUES), kind)
    return caught.value.message


TRUE_CONDITIONS = [
    "s = :s",
    "n = :n",  # numbers compare numerically: 10.5 = 10.50
    "ss = :ss",  # sets ignore order
    "ns = :ns",
    "l = :list",
    "l[2] = :map",
    "t = :t",
    "z = :null",
    "b = :b",
    "s <> :he",
    "gone <> :s",  # a missing attribute is unequal to anything
    "n <> :sn",  # different types are never equal
    "n > :ten AND n < :eleven AND n >= :n AND n <= :n",
    "neg < :two",
    "s > :he AND s >= :he",  # strings by code point
    "u > :s",  # é (U+00E9) sorts after ASCII
    "b > :b0 AND b < :bff",  # binary is unsigned: 0x00ff.. < 0xff
    "n BETWEEN :ten AND :eleven",
    "n BETWEEN :n AND :n",
    "s BETWEEN :he AND :s",
    "n IN (:one, :n)",
    "s IN (:s)",
    "attribute_exists(s) AND attribute_not_exists(gone)",
    "attribute_exists(m.b.c) AND attribute_exists(l[3][0]) AND attribute_not_exists(l[9])",
    "attribute_not_exists(s.x) AND attribute_not_exists(m[0]) AND attribute_not_exists(l.x)",
    "attribute_type(l, :Ltype) AND attribute_type(n, :Ntype) AND attribute_type(ss, :SStype)",
    "attribute_type(z, :NULLtype)",
    "begins_with(s, :he) AND begins_with(s, :empty) AND begins_with(b, :b0)",
    "contains(s, :ell) AND contains(s, :empty)",
    "contains(ss, :a) AND contains(ns, :one) AND contains(bs, :b1)",
    "contains(l, :x) AND contains(l, :two) AND contains(l, :map)",
    "contains(b, :bff)",
    "size(s) = :five AND size(e) < :one",
    "size(u) = :three",  # characters, not UTF-8 bytes
    "size(b) = :three AND size(ss) = :two AND size(l) = :four AND size(m) = :three",
    "size(l[3]) = :one",
    "size(s) BETWEEN :four AND :five",
    "size(s) IN (:five)",
    "m.b.c = :see",
    "l[2].deep = :d",
    "NOT s = :he",
    "NOT NOT s = :s",
    "s = :he OR s = :s",
    ":s = s",
    ":one = :one",
    "m.#w = :w",
]


@pytest.mark.parametrize("text", TRUE_CONDITIONS)
def test_true_conditions(text):
    assert check(text, names={"#w": "weird name"} if "#w" in text else None) is True


FALSE_CONDITIONS = [
    "s = :he",
    "gone = :s",
    "n = :sn",
    "n < :sn",  # ordering across types is false, not an error
    "s < :n",
    "ss = :ns",
    "l = :map",
    "t = :f",
    "n > :eleven",
    "n BETWEEN :eleven AND :eleven",
    "gone BETWEEN :one AND :two",
    "s BETWEEN :one AND :two",  # different types
    "n IN (:one, :two)",
    "gone IN (:one)",
    "attribute_exists(gone)",
    "attribute_exists(s.x)",
    "attribute_not_exists(s)",
    "attribute_type(n, :Ltype)",
    "attribute_type(gone, :NULLtype)",
    "begins_with(s, :ell)",
    "begins_with(n, :sn)",  # not a string: false
    "begins_with(gone, :he)",
    "begins_with(s, :b0)",
    "contains(s, :x)",
    "contains(ss, :x)",
    "contains(ss, :one)",  # element of the wrong type
    "contains(ns, :a)",
    "contains(n, :one)",
    "contains(l, :three)",
    "contains(gone, :x)",
    "contains(m, :a)",  # maps are not searched
    "size(n) = :two",  # size of a number has no value
    "size(t) > :one",
    "size(gone) < :one",
    "NOT s = :s",
    "s = :he AND s = :s",
    "l[9] = :x",
    "m.b.zzz = :see",
    "l.a = :x",
    "gone < :one",
    "size(s) <> size(s)",
]


@pytest.mark.parametrize("text", FALSE_CONDITIONS)
def test_false_conditions(text):
    assert check(text) is False


def test_missing_item_behaves_as_an_item_without_attributes():
    assert check("attribute_not_exists(pk)", None) is True
    assert check("attribute_exists(pk)", None) is False
    assert check("pk <> :s", None) is True
    assert check("NOT pk = :s", None) is True
    assert check("size(pk) < :one", None) is False


def test_filter_kind_names_itself_in_errors():
    assert error("status = :s", kind="FilterExpression") == (
        "Invalid FilterExpression: Attribute name is a reserved keyword; reserved keyword: status"
    )


def test_between_bounds_must_be_ordered_constants_of_one_type():
    assert error("a BETWEEN :five AND :one") == (
        "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower "
        "bound; lower bound operand: AttributeValue: {N:5}, upper bound operand: AttributeValue: {N:1}"
    )
    assert error("a BETWEEN :s AND :he") == (
        "Invalid ConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower "
        "bound; lower bound operand: AttributeValue: {S:hello}, upper bound operand: AttributeValue: {S:he}"
    )
    assert error("a BETWEEN :one AND :s") == (
        "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; "
        "lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:hello}"
    )


def test_ordering_a_constant_of_an_unordered_type_is_an_error():
    # Comparing an attribute of another type is just false; a constant that can never be ordered is refused.
    for text, kind in [("a < :list", "L"), ("a >= :t", "BOOL"), ("a > :ss", "SS"), (":null <= a", "NULL")]:
        operator = text.split()[1] if not text.startswith(":") else "<="
        assert error(text) == (
            "Invalid ConditionExpression: Incorrect operand type for operator or function; "
            f"operator or function: {operator}, operand type: {kind}"
        )
    assert error("a BETWEEN :map AND :one") == (
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: "
        "BETWEEN, operand type: M"
    )
    # Equality takes any type.
    parse_condition("a = :list AND a <> :t", ExpressionContext(None, {":list": VALUES[":list"], ":t": VALUES[":t"]}))


def test_function_operand_types():
    assert error("begins_with(a, :one)") == (
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: "
        "begins_with, operand type: N"
    )
    assert error("size(:t) > :one") == (
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: "
        "size, operand type: BOOL"
    )
    assert error("attribute_type(a, :one)") == (
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: "
        "attribute_type, operand type: N"
    )


def test_attribute_type_names_are_validated():
    assert error("attribute_type(a, :x)") == (
        "Invalid ConditionExpression: Invalid attribute type name found; type: x, valid types: "
        "{ B,NULL,SS,BOOL,L,BS,N,NS,S,M }"
    )


def test_operands_must_be_distinct():
    assert error("a.b = a.b") == (
        "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this "
        "operator or function; operator: =, first operand: [a, b]"
    )
    assert error("l[1] < l[1]").endswith("operator: <, first operand: [l, [1]]")
    assert error("begins_with(a, a)").endswith("operator: begins_with, first operand: [a]")
    parse_condition("a = b AND a[0] = a[1]", ExpressionContext(None, None))


def test_condition_paths_lists_every_path_read():
    ctx = ExpressionContext({"#k": "sk"}, {":v": {"S": "x"}})
    tree = parse_condition("a.b = :v AND (size(#k) > :v OR c IN (d, :v)) AND NOT begins_with(e[1], :v)", ctx)
    assert condition_paths(tree) == [Path(("a", "b")), Path(("sk",)), Path(("c",)), Path(("d",)), Path(("e", 1))]


def test_evaluation_does_not_modify_the_item():
    item = {"a": {"L": [{"S": "x"}]}, "n": {"N": "1"}}
    snapshot = repr(item)
    check("contains(a, :x) AND size(a) = :one", item)
    assert repr(item) == snapshot
