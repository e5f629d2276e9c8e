"""UpdateExpression: SET/REMOVE/ADD/DELETE semantics on items, and the validation and runtime errors DynamoDB gives."""

from __future__ import annotations

import copy

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import (
    ExpressionContext,
    apply_update,
    check_key_not_updated,
    parse_update,
    updated_attribute_names,
    updated_attributes,
)
from globaltables.engine.expressions.ast import Path

VALUES = {
    ":one": {"N": "1"},
    ":two": {"N": "2"},
    ":neg": {"N": "-5"},
    ":x": {"S": "x"},
    ":y": {"S": "y"},
    ":l": {"L": [{"S": "n1"}, {"S": "n2"}]},
    ":empty": {"L": []},
    ":m": {"M": {"k": {"S": "v"}}},
    ":ss": {"SS": ["b", "c"]},
    ":ns": {"NS": ["1", "3"]},
    ":ninee": {"N": "9E+125"},
    ":e50": {"N": "1E+50"},
    ":big": {"N": "9.9999999999999999999999999999999999999E+125"},
    ":tiny": {"N": "0.00000000000000000000000000000000000001"},
    ":prec": {"N": "12345678901234567890123456789012345678"},
    ":t": {"BOOL": True},
    ":bs": {"BS": ["AQ=="]},
}

ITEM = {
    "pk": {"S": "k"},
    "n": {"N": "10"},
    "s": {"S": "str"},
    "l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}]},
    "m": {"M": {"a": {"N": "1"}, "child": {"M": {"z": {"S": "zz"}}}, "list": {"L": [{"N": "0"}]}}},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2"]},
}


def update(text: str, item: dict | None = None, names: dict | None = None) -> dict:
    ctx = ExpressionContext(names, VALUES)
    source = copy.deepcopy(ITEM if item is None else item)
    before = copy.deepcopy(source)
    new, _paths = apply_update(parse_update(text, ctx), source)
    assert source == before, "apply_update must not modify its input"
    return new


def parse_error(text: str, values: dict | None = None) -> str:
    with pytest.raises(ValidationException) as caught:
        parse_update(text, ExpressionContext(None, values if values is not None else VALUES))
    return caught.value.message


def apply_error(text: str, item: dict | None = None) -> str:
    with pytest.raises(ValidationException) as caught:
        update(text, item)
    return caught.value.message


# ---------------------------------------------------------------------------------------------------------- SET


def test_set_top_level_nested_and_list_element():
    new = update("SET a = :x, m.child.z = :y, m.added = :one, l[1] = :m")
    assert new["a"] == {"S": "x"}
    assert new["m"]["M"]["child"]["M"]["z"] == {"S": "y"}
    assert new["m"]["M"]["added"] == {"N": "1"}
    assert new["m"]["M"]["a"] == {"N": "1"}
    assert new["l"]["L"] == [{"S": "a"}, {"M": {"k": {"S": "v"}}}, {"S": "c"}]


def test_set_past_the_end_of_a_list_appends_in_index_order():
    new = update("SET l[20] = :y, l[10] = :x")
    assert new["l"]["L"] == [{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "x"}, {"S": "y"}]


def test_right_hand_sides_see_the_item_before_the_update():
    new = update("SET n = s, s = n")
    assert new["n"] == {"S": "str"} and new["s"] == {"N": "10"}
    new = update("SET l[0] = l[2], l[2] = l[0]")
    assert new["l"]["L"] == [{"S": "c"}, {"S": "b"}, {"S": "a"}]


def test_set_with_a_missing_parent_or_a_parent_of_the_wrong_kind():
    invalid = "The document path provided in the update expression is invalid for update"
    assert apply_error("SET nope.a = :x") == invalid
    assert apply_error("SET m.nope.a = :x") == invalid
    assert apply_error("SET nope[0] = :x") == invalid
    assert apply_error("SET s.a = :x") == invalid
    assert apply_error("SET m[0] = :x") == invalid
    assert apply_error("SET l.a = :x") == invalid
    assert apply_error("SET l[7].a = :x") == invalid


def test_arithmetic():
    assert update("SET n = n + :one")["n"] == {"N": "11"}
    assert update("SET n = n - :two")["n"] == {"N": "8"}
    assert update("SET n = :neg - n")["n"] == {"N": "-15"}
    assert update("SET c = if_not_exists(c, :one) + :two")["c"] == {"N": "3"}
    assert update("SET n = if_not_exists(n, :one) + :two")["n"] == {"N": "12"}
    assert update("SET n = :one - :one")["n"] == {"N": "0"}
    # 38 digits stay exact: arithmetic is decimal, never float.
    assert update("SET n = :prec + :one")["n"] == {"N": "12345678901234567890123456789012345679"}


def test_parentheses_may_enclose_the_arithmetic_pair():
    assert update("SET n = (n - :two)")["n"] == {"N": "8"}
    assert update("SET c = (if_not_exists(c, :one) - :two)")["c"] == {"N": "-1"}
    assert update("SET n = (n) + (:one)")["n"] == {"N": "11"}
    assert parse_error("SET n = (n - :one) - :one").startswith('Invalid UpdateExpression: Syntax error; token: "-"')
    assert parse_error("SET n = ((n - :one))") == "Invalid UpdateExpression: The expression has redundant parentheses;"


NUMBER_OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"


def test_arithmetic_range_and_precision_are_checked():
    # A result needing more than 38 significant digits is an overflow too, in DynamoDB's words.
    assert apply_error("SET n = :ninee + :ninee") == NUMBER_OVERFLOW
    assert apply_error("SET n = :prec + :tiny") == NUMBER_OVERFLOW
    assert apply_error("SET n = :e50 + :one") == NUMBER_OVERFLOW
    assert apply_error("ADD n :tiny", {"n": {"N": "1"}}) == NUMBER_OVERFLOW
    assert update("SET n = :e50 - :e50")["n"] == {"N": "0"}


def test_arithmetic_on_the_wrong_types():
    assert apply_error("SET n = s + :one") == "An operand in the update expression has an incorrect data type"
    assert apply_error("SET n = :one - l") == "An operand in the update expression has an incorrect data type"
    assert parse_error("SET n = :x + :one") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: +, "
        "operand type: S"
    )
    assert parse_error("SET n = n - :l") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: -, "
        "operand type: L"
    )
    assert parse_error("SET n = list_append(a, b) + n") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: +, "
        "operand type: L"
    )


def test_referring_to_a_missing_attribute():
    message = "The provided expression refers to an attribute that does not exist in the item"
    assert apply_error("SET a = nope") == message
    assert apply_error("SET a = nope + :one") == message
    assert apply_error("SET a = m.nope") == message
    assert apply_error("SET a = list_append(nope, :l)") == message
    assert update("SET a = if_not_exists(nope, :x)")["a"] == {"S": "x"}
    assert update("SET a = if_not_exists(s, :x)")["a"] == {"S": "str"}


def test_list_append():
    assert update("SET l = list_append(l, :l)")["l"]["L"][-2:] == [{"S": "n1"}, {"S": "n2"}]
    assert update("SET l = list_append(:l, l)")["l"]["L"][:2] == [{"S": "n1"}, {"S": "n2"}]
    assert update("SET a = list_append(if_not_exists(a, :empty), :l)")["a"] == {"L": [{"S": "n1"}, {"S": "n2"}]}
    assert apply_error("SET a = list_append(s, :l)") == "An operand in the update expression has an incorrect data type"
    assert parse_error("SET a = list_append(l, :x)") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: "
        "list_append, operand type: S"
    )


def test_nesting_levels_of_the_result_are_limited():
    deep = {"M": {}}
    for _ in range(30):
        deep = {"M": {"d": deep}}  # 31 levels of maps
    ctx_values = {":deep": deep}
    item = {"pk": {"S": "k"}, "a": {"M": {}}}
    update_ok = parse_update("SET a.b = :deep", ExpressionContext(None, ctx_values))
    new, _ = apply_update(update_ok, item)  # 1 + 31 = 32 levels
    assert "b" in new["a"]["M"]
    too_deep = parse_update("SET a.b.c = :deep", ExpressionContext(None, ctx_values))
    with pytest.raises(ValidationException) as caught:
        apply_update(too_deep, new)
    assert caught.value.message == (
        "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
    )


# ------------------------------------------------------------------------------------------------------- REMOVE


def test_remove_attributes_members_and_elements():
    new = update("REMOVE s, m.a, m.child.z, nope, m.nope")
    assert "s" not in new
    assert new["m"]["M"] == {"child": {"M": {}}, "list": {"L": [{"N": "0"}]}}


def test_remove_list_elements_by_original_index():
    assert update("REMOVE l[0], l[1]")["l"]["L"] == [{"S": "c"}]
    assert update("REMOVE l[2], l[0]")["l"]["L"] == [{"S": "b"}]
    assert update("REMOVE l[9]")["l"]["L"] == ITEM["l"]["L"]
    # SET of one element and REMOVE of another both refer to the original positions.
    assert update("SET l[1] = :x REMOVE l[0]")["l"]["L"] == [{"S": "x"}, {"S": "c"}]


def test_remove_with_a_missing_or_wrong_parent():
    invalid = "The document path provided in the update expression is invalid for update"
    assert apply_error("REMOVE nope.a") == invalid
    assert apply_error("REMOVE nope[1]") == invalid
    assert apply_error("REMOVE s.a") == invalid
    assert apply_error("REMOVE m[0]") == invalid


# ---------------------------------------------------------------------------------------------------------- ADD


def test_add_numbers():
    assert update("ADD n :one")["n"] == {"N": "11"}
    assert update("ADD n :neg")["n"] == {"N": "5"}
    assert update("ADD hits :two")["hits"] == {"N": "2"}
    assert update("ADD m.tally :one")["m"]["M"]["tally"] == {"N": "1"}
    assert update("ADD hits :one", {"pk": {"S": "new"}}) == {"pk": {"S": "new"}, "hits": {"N": "1"}}


def test_add_to_sets():
    assert update("ADD ss :ss")["ss"] == {"SS": ["a", "b", "c"]}
    assert update("ADD ns :ns")["ns"] == {"NS": ["1", "2", "3"]}
    assert update("ADD fresh :ss")["fresh"] == {"SS": ["b", "c"]}


def test_add_type_errors():
    message = "An operand in the update expression has an incorrect data type"
    assert apply_error("ADD s :one") == message
    assert apply_error("ADD n :ss") == message
    assert apply_error("ADD ss :ns") == message
    assert apply_error("ADD l :one") == message
    assert parse_error("ADD a :x") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: STRING"
    )
    assert parse_error("ADD a :l").endswith("operator: ADD, operand type: LIST")
    assert parse_error("ADD a :m").endswith("operator: ADD, operand type: MAP")
    assert parse_error("ADD a :t").endswith("operator: ADD, operand type: BOOLEAN")


# ------------------------------------------------------------------------------------------------------- DELETE


def test_delete_from_sets():
    assert update("DELETE ss :ss")["ss"] == {"SS": ["a"]}
    assert update("DELETE ns :ns")["ns"] == {"NS": ["2"]}
    assert "ss" not in update("DELETE ss :ss", {"ss": {"SS": ["b"]}})  # an emptied set disappears
    assert update("DELETE nope :ss") == ITEM


def test_delete_type_errors():
    assert apply_error("DELETE ss :ns") == "An operand in the update expression has an incorrect data type"
    assert apply_error("DELETE s :ss") == "An operand in the update expression has an incorrect data type"
    assert parse_error("DELETE a :x") == (
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, "
        "operand type: STRING"
    )
    assert parse_error("DELETE a :one").endswith("operand type: NUMBER")


# ----------------------------------------------------------------------------------------------- path conflicts


def test_overlapping_and_conflicting_paths():
    assert parse_error("SET a = :x, a = :y") == (
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these "
        "paths; path one: [a], path two: [a]"
    )
    assert parse_error("SET a.b = :x REMOVE a") == (
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these "
        "paths; path one: [a, b], path two: [a]"
    )
    assert parse_error("SET a[1] = :x, a.b = :y") == (
        "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one of these "
        "paths; path one: [a, [1]], path two: [a, b]"
    )
    assert parse_error("SET x = :x, a.b.c = :x ADD a.b :one") == (
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these "
        "paths; path one: [a, b, c], path two: [a, b]"
    )
    # Placeholders are substituted before paths are compared.
    ctx = ExpressionContext({"#a": "a"}, {":x": {"S": "x"}})
    with pytest.raises(ValidationException) as caught:
        parse_update("SET #a = :x REMOVE a", ctx)
    assert caught.value.message.endswith("path one: [a], path two: [a]")
    parse_update("SET a[0] = :x, a[1] = :x, b.c = :x, b.d = :x", ExpressionContext(None, {":x": {"S": "x"}}))


# ------------------------------------------------------------------------------------------ keys and ReturnValues


def test_key_attributes_cannot_be_updated():
    up = parse_update("SET a = :x REMOVE sk", ExpressionContext(None, {":x": {"S": "x"}}))
    with pytest.raises(ValidationException) as caught:
        check_key_not_updated(up, ("pk", "sk"))
    assert caught.value.message == (
        "One or more parameter values were invalid: Cannot update attribute sk. This attribute is part of the key"
    )
    check_key_not_updated(up, ("pk",))
    assert updated_attribute_names(parse_update("SET a.b = :x, a.c = :x, d = :x", ExpressionContext(None, {":x": {"S": "x"}}))) == ["a", "d"]


def test_updated_attributes_project_the_updated_paths():
    ctx = ExpressionContext(None, VALUES)
    up = parse_update("SET m.child.z = :x, created = :one REMOVE l[0]", ctx)
    old = ITEM
    new, paths = apply_update(up, old)
    assert paths == [Path(("m", "child", "z")), Path(("created",)), Path(("l", 0))]
    assert updated_attributes(up, old, new, "UPDATED_OLD") == {
        "m": {"M": {"child": {"M": {"z": {"S": "zz"}}}}},
        "l": {"L": [{"S": "a"}]},
    }
    # UPDATED_NEW shows the element that moved into the removed list element's place (DynamoDB does).
    assert updated_attributes(up, old, new, "UPDATED_NEW") == {
        "m": {"M": {"child": {"M": {"z": {"S": "x"}}}}},
        "created": {"N": "1"},
        "l": {"L": [{"S": "b"}]},
    }
    assert updated_attributes(up, None, new, "UPDATED_OLD") == {}
    removed = parse_update("REMOVE s, m.a", ctx)
    assert updated_attributes(removed, old, apply_update(removed, old)[0], "UPDATED_NEW") == {}


def test_an_update_applies_again_to_another_version_of_the_item():
    ctx = ExpressionContext(None, VALUES)
    up = parse_update("ADD n :one SET l[5] = :x", ctx)
    first, _ = apply_update(up, ITEM)
    second, _ = apply_update(up, first)
    assert first["n"] == {"N": "11"} and second["n"] == {"N": "12"}
    assert len(first["l"]["L"]) == 4 and len(second["l"]["L"]) == 5
    assert len(ITEM["l"]["L"]) == 3


def test_update_of_a_missing_item():
    ctx = ExpressionContext(None, VALUES)
    new, _ = apply_update(parse_update("SET a = :x ADD n :one, s :ss REMOVE gone", ctx), None)
    assert new == {"a": {"S": "x"}, "n": {"N": "1"}, "s": {"SS": ["b", "c"]}}
