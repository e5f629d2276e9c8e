"""ProjectionExpression: nested paths and list indexes keep the item's structure; overlaps and conflicts are refused."""

from __future__ import annotations

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import ExpressionContext, Path, parse_projection, project

ITEM = {
    "pk": {"S": "k"},
    "a": {
        "M": {
            "b": {"L": [{"N": "2"}, {"N": "4"}, {"M": {"x": {"S": "hi"}, "y": {"S": "yo"}}}, {"N": "8"}]},
            "c": {"N": "5"},
        }
    },
    "l": {"L": [{"S": "l0"}, {"S": "l1"}, {"S": "l2"}, {"S": "l3"}]},
    "e": {"M": {}},
}


def projected(text: str, names: dict | None = None, item: dict = ITEM) -> dict:
    return project(item, parse_projection(text, ExpressionContext(names, None)))


def error(text: str, names: dict | None = None) -> str:
    with pytest.raises(ValidationException) as caught:
        parse_projection(text, ExpressionContext(names, None))
    return caught.value.message


def test_top_level_attributes():
    assert projected("pk, l") == {"pk": ITEM["pk"], "l": ITEM["l"]}
    assert projected("pk, nope") == {"pk": ITEM["pk"]}
    assert projected("e") == {"e": {"M": {}}}  # an empty map selected as a whole stays


def test_nested_paths_keep_structure():
    assert projected("a.b[2].x") == {"a": {"M": {"b": {"L": [{"M": {"x": {"S": "hi"}}}]}}}}
    assert projected("a.c, a.b[0]") == {"a": {"M": {"c": {"N": "5"}, "b": {"L": [{"N": "2"}]}}}}


def test_list_elements_are_packed_in_index_order():
    assert projected("l[3], l[1]") == {"l": {"L": [{"S": "l1"}, {"S": "l3"}]}}
    assert projected("l[3], l[9]") == {"l": {"L": [{"S": "l3"}]}}


def test_paths_that_do_not_resolve_contribute_nothing():
    assert projected("a.z") == {}
    assert projected("a.c[0]") == {}
    assert projected("a.b[5]") == {}
    assert projected("l.x") == {}
    assert projected("a[0]") == {}
    assert projected("a.b[2].z, pk") == {"pk": ITEM["pk"]}


def test_placeholders_in_paths():
    assert projected("#a.#b[1]", {"#a": "a", "#b": "b"}) == {"a": {"M": {"b": {"L": [{"N": "4"}]}}}}
    assert projected("#dotted", {"#dotted": "a.c"}, {"a.c": {"S": "literal"}}) == {"a.c": {"S": "literal"}}


def test_overlapping_paths_are_refused():
    assert error("a, a.b") == (
        "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of "
        "these paths; path one: [a], path two: [a, b]"
    )
    assert error("pk, pk") == (
        "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of "
        "these paths; path one: [pk], path two: [pk]"
    )
    assert error("a.b[1].c, x, a.b[1]").endswith("path one: [a, b, [1], c], path two: [a, b, [1]]")
    assert error("#x, a", {"#x": "a"}).endswith("path one: [a], path two: [a]")


def test_conflicting_paths_are_refused():
    assert error("a.b, a[0]") == (
        "Invalid ProjectionExpression: Two document paths conflict with each other; must remove or rewrite one of "
        "these paths; path one: [a, b], path two: [a, [0]]"
    )


def test_projection_object_lists_paths_and_attributes():
    projection = parse_projection("a.b, l[1], a.c", ExpressionContext(None, None))
    assert list(projection) == [Path(("a", "b")), Path(("l", 1)), Path(("a", "c"))]
    assert projection.attribute_names == ["a", "l"]
    assert len(projection) == 3


def test_project_accepts_plain_path_lists_and_missing_items():
    assert project(ITEM, [Path(("a", "c"))]) == {"a": {"M": {"c": {"N": "5"}}}}
    assert project(None, [Path(("a",))]) == {}


def test_projection_does_not_modify_the_item():
    snapshot = repr(ITEM)
    projected("a.b[2].x, l[0], pk")
    assert repr(ITEM) == snapshot
