"""A stored number's size: its significant digits paired in base 100 from the decimal point, plus one byte (and one
for a minus sign). `number_size` works on the canonical text with string operations; this checks it against the
rule computed from the Decimal's digits."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from globaltables.engine.errors import ValidationException
from globaltables.engine.values import check_number, format_number, number_size, strip_zeros


def by_digits(text: str) -> int:
    value = Decimal(text)
    if value.is_zero():
        return 1
    sign, digits, exponent = strip_zeros(value).as_tuple()
    count = len(digits)
    adjusted = exponent + count - 1
    return 1 + (count + 1) // 2 + (0 if (count % 2 or adjusted % 2) else 1) + (1 if sign else 0)


@pytest.mark.parametrize(
    ("number", "size"),
    [
        ("0", 1),
        ("7", 2),
        ("42", 2),
        ("100", 2),
        ("1000", 2),
        ("123000", 3),
        ("1.2", 3),
        ("0.001", 2),
        ("-5", 3),
        ("1E+125", 2),
        ("12345678901234567890123456789012345678", 20),
        ("12345678901234567890123456789012345678E+30", 20),
    ],
)
def test_known_sizes(number, size):
    assert number_size(format_number(Decimal(number))) == size


def test_trailing_zeros_of_an_integer_cost_nothing():
    assert number_size(format_number(Decimal("1E+125"))) == number_size("1")


def test_matches_the_digit_rule_on_random_numbers():
    rng = random.Random(20261201)
    checked = 0
    for _ in range(20_000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 38)))
        try:
            value = check_number(Decimal(f"{rng.choice(['', '-'])}{digits}E{rng.randint(-60, 60)}"))
        except ValidationException:
            continue
        text = format_number(value)
        assert number_size(text) == by_digits(text), text
        checked += 1
    assert checked > 10_000
