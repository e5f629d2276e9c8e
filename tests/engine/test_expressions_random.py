"""Seeded random tests: generated conditions and updates against small reference models, and token soup that
must only ever produce ValidationException (never a crash). Each failure prints the seed and the text."""

from __future__ import annotations

import copy
import random

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.expressions import (
    ExpressionContext,
    KeyCondition,
    apply_update,
    evaluate_condition,
    parse_condition,
    parse_key_condition,
    parse_projection,
    parse_update,
    project,
)
from globaltables.engine.expressions.ast import Path
from globaltables.engine.expressions.paths import build_tree, compare
from globaltables.engine.schema import KeySchema

ATTRIBUTES = ["a", "b", "c", "d"]
LETTERS = "xyz"


# ------------------------------------------------------------------------------------------ reference conditions
#
# Generated conditions are tuples; `reference` evaluates them on plain Python values (int or str, None = missing)
# and `render` writes DynamoDB text for them, so the engine's parse + evaluate must agree with `reference`.


class Generator:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.values: dict[str, dict] = {}
        self.names: dict[str, str] = {}

    def constant(self):
        rng = self.rng
        if rng.random() < 0.5:
            return rng.randint(-3, 3)
        return "".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 3)))

    def value_ref(self, value) -> str:
        ref = f":v{len(self.values)}"
        self.values[ref] = {"N": str(value)} if isinstance(value, int) else {"S": value}
        return ref

    def path_text(self, name: str) -> str:
        if self.rng.random() < 0.3:
            ref = f"#n{len(self.names)}"
            self.names[ref] = name
            return ref
        return name

    def condition(self, depth: int = 0):
        rng = self.rng
        roll = rng.random()
        if depth < 3 and roll < 0.3:
            return (rng.choice(["AND", "OR"]), self.condition(depth + 1), self.condition(depth + 1))
        if depth < 3 and roll < 0.4:
            return ("NOT", self.condition(depth + 1))
        kind = rng.choice(["cmp", "cmp", "between", "in", "exists", "not_exists", "begins", "contains", "size"])
        attr = rng.choice(ATTRIBUTES)
        if kind == "cmp":
            return ("cmp", rng.choice(["=", "<>", "<", "<=", ">", ">="]), attr, self.constant())
        if kind == "between":
            low, high = self.constant(), self.constant()
            if type(low) is not type(high):
                high = low
            if low > high:
                low, high = high, low
            return ("between", attr, low, high)
        if kind == "in":
            return ("in", attr, [self.constant() for _ in range(rng.randint(1, 4))])
        if kind in ("exists", "not_exists"):
            return (kind, attr)
        if kind in ("begins", "contains"):
            return (kind, attr, "".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 2))))
        return ("size", rng.choice(["=", "<", ">="]), attr, rng.randint(0, 3))

    def item(self) -> dict:
        out = {}
        for name in ATTRIBUTES:
            roll = self.rng.random()
            if roll < 0.2:
                continue
            out[name] = self.constant()
        return out


def ordered(x, y) -> bool:
    return x is not None and y is not None and type(x) is type(y)


def reference(node, item: dict) -> bool:
    op = node[0]
    if op == "AND":
        return reference(node[1], item) and reference(node[2], item)
    if op == "OR":
        return reference(node[1], item) or reference(node[2], item)
    if op == "NOT":
        return not reference(node[1], item)
    if op == "cmp":
        _, comparator, attr, value = node
        have = item.get(attr)
        if comparator == "=":
            return ordered(have, value) and have == value
        if comparator == "<>":
            return not (ordered(have, value) and have == value)
        if not ordered(have, value):
            return False
        return {"<": have < value, "<=": have <= value, ">": have > value, ">=": have >= value}[comparator]
    if op == "between":
        _, attr, low, high = node
        have = item.get(attr)
        return ordered(have, low) and low <= have <= high
    if op == "in":
        have = item.get(node[1])
        return any(ordered(have, choice) and have == choice for choice in node[2])
    if op == "exists":
        return node[1] in item
    if op == "not_exists":
        return node[1] not in item
    if op == "begins":
        have = item.get(node[1])
        return isinstance(have, str) and have.startswith(node[2])
    if op == "contains":
        have = item.get(node[1])
        return isinstance(have, str) and node[2] in have
    if op == "size":
        _, comparator, attr, size = node
        have = item.get(attr)
        if not isinstance(have, str):
            return False
        return {"=": len(have) == size, "<": len(have) < size, ">=": len(have) >= size}[comparator]
    raise AssertionError(node)


PRECEDENCE = {"OR": 1, "AND": 2, "NOT": 3}


def render(node, gen: Generator, parent: int = 0) -> str:
    rng = gen.rng
    op = node[0]
    if op in ("AND", "OR"):
        keyword = rng.choice([op, op.lower(), op.capitalize()])
        own = PRECEDENCE[op]
        # Same-precedence operators associate either way, so the right side may drop its parentheses too.
        text = f"{render(node[1], gen, own)} {keyword} {render(node[2], gen, own)}"
        needs = own < parent
    elif op == "NOT":
        text = f"{rng.choice(['NOT', 'not'])} {render(node[1], gen, 3)}"
        needs = False
    else:
        text = leaf(node, gen)
        needs = False
    if needs or rng.random() < 0.15:
        return f"({text})"
    return text


def leaf(node, gen: Generator) -> str:
    op = node[0]
    space = gen.rng.choice(["", " ", "  "])
    if op == "cmp":
        _, comparator, attr, value = node
        if gen.rng.random() < 0.2 and comparator in ("=", "<>"):
            return f"{gen.value_ref(value)}{space}{comparator}{space}{gen.path_text(attr)}"
        return f"{gen.path_text(attr)}{space}{comparator}{space}{gen.value_ref(value)}"
    if op == "between":
        _, attr, low, high = node
        return f"{gen.path_text(attr)} BETWEEN {gen.value_ref(low)} AND {gen.value_ref(high)}"
    if op == "in":
        choices = ",".join(f"{space}{gen.value_ref(c)}" for c in node[2])
        return f"{gen.path_text(node[1])} IN ({choices})"
    if op == "exists":
        return f"attribute_exists({gen.path_text(node[1])})"
    if op == "not_exists":
        return f"attribute_not_exists( {gen.path_text(node[1])} )"
    if op == "begins":
        return f"begins_with({gen.path_text(node[1])},{space}{gen.value_ref(node[2])})"
    if op == "contains":
        return f"contains({gen.path_text(node[1])}, {gen.value_ref(node[2])})"
    _, comparator, attr, size = node
    return f"size({gen.path_text(attr)}) {comparator} {gen.value_ref(size)}"


def to_item(plain: dict) -> dict:
    return {k: {"N": str(v)} if isinstance(v, int) else {"S": v} for k, v in plain.items()}


def test_random_conditions_agree_with_the_reference_model():
    for seed in range(400):
        rng = random.Random(seed)
        gen = Generator(rng)
        node = gen.condition()
        text = render(node, gen)
        ctx = ExpressionContext(gen.names or None, gen.values or None)
        try:
            tree = parse_condition(text, ctx)
            ctx.check_unused()
        except ValidationException as error:  # pragma: no cover - reported with the seed
            pytest.fail(f"seed {seed}: {text!r} refused: {error.message}")
        for _ in range(8):
            plain = gen.item()
            expected = reference(node, plain)
            assert evaluate_condition(tree, to_item(plain)) is expected, f"seed {seed}: {text!r} on {plain}"
        assert evaluate_condition(tree, None) is reference(node, {}), f"seed {seed}: {text!r} on no item"


# --------------------------------------------------------------------------------------------- reference updates


def test_random_list_updates_agree_with_the_reference_model():
    """SET/REMOVE on list indexes refer to original positions; appends keep index order."""
    for seed in range(300):
        rng = random.Random(seed)
        length = rng.randint(0, 5)
        original = [f"e{i}" for i in range(length)]
        indexes = rng.sample(range(8), rng.randint(1, 4))
        actions = [(index, rng.choice(["SET", "REMOVE"])) for index in indexes]
        sets = [f"l[{i}] = :v{i}" for i, kind in actions if kind == "SET"]
        removes = [f"l[{i}]" for i, kind in actions if kind == "REMOVE"]
        clauses = []
        if sets:
            clauses.append("SET " + ", ".join(sets))
        if removes:
            clauses.append("REMOVE " + ", ".join(removes))
        rng.shuffle(clauses)
        text = " ".join(clauses)
        values = {f":v{i}": {"S": f"new{i}"} for i, kind in actions if kind == "SET"}
        update = parse_update(text, ExpressionContext(None, values or None))

        expected = list(original)
        for index, kind in actions:
            if kind == "SET" and index < length:
                expected[index] = f"new{index}"
        removed = {index for index, kind in actions if kind == "REMOVE" and index < length}
        expected = [v for i, v in enumerate(expected) if i not in removed]
        expected += [f"new{i}" for i, kind in sorted(actions) if kind == "SET" and i >= length]

        item = {"l": {"L": [{"S": v} for v in original]}}
        snapshot = copy.deepcopy(item)
        new, _ = apply_update(update, item)
        assert item == snapshot, f"seed {seed}: input modified"
        assert [v["S"] for v in new["l"]["L"]] == expected, f"seed {seed}: {text!r} on {original}"


def test_random_counters_and_sets():
    """ADD and DELETE against Python ints and sets, across repeated application."""
    for seed in range(200):
        rng = random.Random(seed)
        total = None
        members: set[str] = set()
        item: dict = {}
        for _ in range(6):
            delta = rng.randint(-50, 50)
            chosen = rng.sample(["p", "q", "r", "s"], rng.randint(1, 3))
            action = rng.choice(["ADD", "DELETE"])
            ctx = ExpressionContext(None, {":d": {"N": str(delta)}, ":s": {"SS": chosen}})
            if action == "ADD":
                update = parse_update("ADD n :d, tags :s", ctx)
                total = delta if total is None else total + delta
                members |= set(chosen)
            else:
                update = parse_update("ADD n :d DELETE tags :s", ctx)
                total = delta if total is None else total + delta
                members -= set(chosen)
            item, _ = apply_update(update, item)
            assert item["n"] == {"N": str(total)}, f"seed {seed}"
            if members:
                assert set(item["tags"]["SS"]) == members, f"seed {seed}"
            else:
                assert "tags" not in item, f"seed {seed}"


def test_random_projections_keep_only_selected_paths():
    for seed in range(150):
        rng = random.Random(seed)
        item = {
            name: {"M": {m: {"L": [{"N": str(i)} for i in range(rng.randint(0, 3))]} for m in "pq"}}
            for name in ATTRIBUTES
            if rng.random() < 0.8
        }
        chosen = rng.sample(ATTRIBUTES, rng.randint(1, 3))
        paths = [f"{name}.{rng.choice('pq')}[{rng.randint(0, 3)}]" for name in chosen]
        projection = parse_projection(", ".join(paths), ExpressionContext(None, None))
        result = project(item, projection)
        for name, value in result.items():
            assert name in chosen
            for member, entries in value["M"].items():
                expected_index = [p for p in paths if p.startswith(f"{name}.{member}[")]
                assert len(expected_index) == 1
                index = int(expected_index[0].split("[")[1].rstrip("]"))
                assert entries == {"L": [item[name]["M"][member]["L"][index]]}, f"seed {seed}"


def test_random_path_sets_report_the_first_clash_as_a_pairwise_scan_would():
    """The path tree finds clashes incrementally; DynamoDB's message names the first later path that clashes with
    any earlier one, and the earliest path it clashes with. Check both against a plain pairwise scan."""
    for seed in range(400):
        rng = random.Random(seed)
        paths = []
        for _ in range(rng.randint(1, 6)):
            elements = [rng.choice("ab")]
            for _ in range(rng.randint(0, 2)):
                elements.append(rng.choice(["x", "y", 0, 1]))
            paths.append(Path(tuple(elements)))
        expected = None
        for j, later in enumerate(paths):
            for earlier in paths[:j]:
                verdict = compare(earlier, later)
                if verdict is not None:
                    expected = (
                        f"Two document paths {verdict} with each other; must remove or rewrite one of these paths; "
                        f"path one: {earlier}, path two: {later}"
                    )
                    break
            if expected:
                break
        tree = build_tree(paths)
        if expected is None:
            assert not isinstance(tree, str), f"seed {seed}: {paths} {tree}"
        else:
            assert tree == expected, f"seed {seed}: {paths}"


# ---------------------------------------------------------------------------------------------------- token soup

SOUP = [
    "a", "b", "status", "#n", "#x", ":v", ":w", "(", ")", "[", "]", "0", "12", ".", ",", "=", "<>", "<", "<=", ">",
    ">=", "+", "-", "AND", "OR", "NOT", "BETWEEN", "IN", "SET", "REMOVE", "ADD", "DELETE", "size", "contains",
    "begins_with", "attribute_exists", "attribute_type", "if_not_exists", "list_append", "@", "\u00e9", " ",
]


VALID_SEEDS = [
    "SET a = if_not_exists(a, :w) + :w, #n[1] = list_append(b, :l) REMOVE c.d[0] ADD e :w DELETE f :s",
    "a = :v AND (b BETWEEN :w AND :w OR NOT begins_with(#x, :v)) AND size(c) > :w",
    "#n = :v AND #x BETWEEN :w AND :w",
    "a, b.c[1], #n.d",
    "attribute_type(a, :v) OR contains(b, :w) OR a IN (:v, :w, b)",
]


def soup(rng: random.Random) -> str:
    """Token soup, or a valid expression with a few tokens inserted, dropped or replaced."""
    if rng.random() < 0.3:
        return " ".join(rng.choice(SOUP) for _ in range(rng.randint(1, 12)))
    tokens = rng.choice(VALID_SEEDS).replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split()
    for _ in range(rng.choice((0, 1, 1, 2))):
        position = rng.randrange(len(tokens) + 1)
        roll = rng.random()
        if roll < 0.4:
            tokens.insert(position, rng.choice(SOUP))
        elif roll < 0.7 and position < len(tokens):
            del tokens[position]
        elif position < len(tokens):
            tokens[position] = rng.choice(SOUP)
    return " ".join(tokens)


def test_token_soup_never_crashes():
    key = KeySchema("a", "S", "b", "N")
    item = {"a": {"S": "v"}, "b": {"N": "1"}, "status": {"L": [{"N": "0"}]}, "e": {"N": "2"}, "f": {"SS": ["v"]}}
    parsed = 0
    for seed in range(1500):
        rng = random.Random(seed)
        text = soup(rng)
        for parse in (
            lambda ctx: parse_condition(text, ctx),
            lambda ctx: parse_update(text, ctx),
            lambda ctx: parse_projection(text, ctx),
            lambda ctx: parse_key_condition(text, ctx, key),
        ):
            ctx = ExpressionContext(
                {"#n": "a", "#x": "b"}, {":v": {"S": "v"}, ":w": {"N": "1"}, ":l": {"L": []}, ":s": {"SS": ["v"]}}
            )
            try:
                result = parse(ctx)
            except ValidationException as error:
                assert error.message, f"seed {seed}: {text!r}"
                continue
            parsed += 1
            # Whatever parses must also execute without crashing and without touching the item.
            snapshot = copy.deepcopy(item)
            try:
                if isinstance(result, KeyCondition):
                    result.matches_sort({"N": "1"})
                elif hasattr(result, "actions"):
                    apply_update(result, item)
                elif hasattr(result, "attribute_names"):
                    project(item, result)
                else:
                    evaluate_condition(result, item)
            except ValidationException:
                pass
            assert item == snapshot, f"seed {seed}: {text!r}"
    assert parsed > 150  # the soup must reach the executors, not only the parser
