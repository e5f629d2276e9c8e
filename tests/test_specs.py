"""runtime/specs.py, the declarative checker of chaos steps, control bodies and workload sections: one wording per
rule, every problem collected with its path, parsed values returned."""

from __future__ import annotations

from globaltables.runtime.specs import (
    Bool,
    Choice,
    Integer,
    Invalid,
    ListOf,
    MapOf,
    Number,
    Str,
    Struct,
    Value,
    check,
    check_members,
    render,
)


def test_every_problem_is_collected_with_its_path():
    spec = {
        "name": Str(required=True),
        "count": Integer(positive=True),
        "rate": Number(minimum=0, maximum=1),
        "mode": Choice(("a", "b")),
        "flags": ListOf(Bool()),
        "nested": Struct({"x": Number(required=True)}, noun="field"),
    }
    _, problems = check_members(
        {"count": 1.5, "rate": 2, "mode": "c", "flags": [True, "no"], "nested": {"y": 1}, "extra": 0}, spec
    )
    assert render(problems) == [
        "extra: unknown key; allowed keys are name, count, rate, mode, flags, nested",
        "name: required",
        "count: expected an integer, got 1.5",
        "rate: must be at most 1, got 2",
        "mode: 'c' is not allowed; use one of a, b",
        "flags[1]: expected true or false, got a string",
        "nested.y: unknown field; allowed fields are x",
        "nested.x: required",
    ]


def test_values_are_parsed_and_defaults_filled():
    def even(value):
        if value % 2:
            raise Invalid("must be even")
        return value // 2

    spec = Struct({"half": Value(even), "weights": MapOf(Number(parse=float)), "on": Bool(default=False)})
    assert check({"half": 4, "weights": {"a": 1}}, spec) == ({"half": 2, "weights": {"a": 1.0}, "on": False}, [])
    _, problems = check({"half": 3, "weights": {"a": True}}, spec, "doc")
    assert render(problems) == ["doc.half: must be even", "doc.weights.a: expected a number, got a boolean"]


def test_kinds_are_strict_and_null_only_where_allowed():
    assert check(True, Number())[1] == [("", "expected a number, got a boolean")]  # a boolean is not a number
    assert check(float("nan"), Number())[1] == [("", "expected a number, got nan")]  # finite numbers only
    assert check(2.0, Integer())[1] == [("", "expected an integer, got 2.0")]
    assert check(None, Number(nullable=True)) == (None, [])
    assert check(None, Number())[1] == [("", "expected a number, got null")]
    assert check([], ListOf(Str(), non_empty=True, expected="a non-empty list of names"))[1] == [
        ("", "expected a non-empty list of names, got an empty one")
    ]
