"""AttributeValues: validation, normalisation, comparison, size accounting and order-preserving key encoding.

Theory of operation
- Items travel through the engine in their wire form, `{"name": {"S": "x"}, ...}`, so the hot path never converts
  back and forth. Every value entering the engine passes `normalize_value` once: numbers become DynamoDB's canonical
  text (no exponent, no leading or trailing zeros; 38 significant digits, range 1E-130 .. 9.99..E+125), binary becomes
  canonical base64, sets lose nothing but are checked for emptiness and duplicates. After that, equality is equality
  of the normalised JSON, except for sets, whose order does not matter.
- Numbers are never floats: `Decimal` with a 38-digit context does the arithmetic and the comparisons.
- Key values are encoded to bytes whose unsigned byte order is DynamoDB's order (S by UTF-8 bytes, N numerically,
  B by unsigned bytes), so storage can sort and range-scan keys as plain blobs.
- A multi-attribute GSI key (up to four HASH and four RANGE attributes) is a tuple of such values, compared one
  component at a time. `encode_key_tuple` makes one blob of it whose byte order is that tuple order: each
  component's bytes with 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x01. A terminator sorts below every
  byte a longer component could continue with, so a shorter component sorts first, and every key whose leading
  components equal a given tuple starts with that tuple's encoding (a prefix the storage can range-scan).
"""

from __future__ import annotations

import base64
import binascii
import decimal
import re
from decimal import Decimal
from typing import Any

from .errors import SerializationException, ValidationException, invalid_parameter

MAX_ITEM_BYTES = 400 * 1024
MAX_NESTING_DEPTH = 32
MAX_DIGITS = 38
MAX_MAGNITUDE = Decimal("9.9999999999999999999999999999999999999E+125")
MIN_MAGNITUDE = Decimal("1E-130")
NESTING_TOO_DEEP = (
    "Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit"
)
NUMBER_OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"

SCALAR_TYPES = frozenset({"S", "N", "B"})
SET_TYPES = frozenset({"SS", "NS", "BS"})
ALL_TYPES = frozenset({"S", "N", "B", "BOOL", "NULL", "M", "L", "SS", "NS", "BS"})
_SET_NAMES = {"SS": "string", "NS": "number", "BS": "binary"}

# Arithmetic context wide enough that adding two legal numbers is exact before the range check.
NUMBER_CONTEXT = decimal.Context(prec=MAX_DIGITS + 2, Emax=999999, Emin=-999999, traps=[decimal.InvalidOperation])


# ---------------------------------------------------------------------------------------------------------- numbers


def parse_number(text: Any) -> Decimal:
    """The Decimal a wire number denotes, checked against DynamoDB's precision and range."""
    if not isinstance(text, str):
        raise SerializationException("NUMBER_VALUE cannot be converted to String")
    try:
        value = Decimal(text)
    except decimal.InvalidOperation:
        raise not_a_number(text) from None
    if not value.is_finite() or text != text.strip() or "_" in text or not text.isascii():
        raise not_a_number(text)
    return check_number(value)


def not_a_number(text: str) -> ValidationException:
    """DynamoDB's refusal of number text that does not parse (NaN, Infinity, "dog", surrounding spaces)."""
    return ValidationException(
        "The parameter cannot be converted to a numeric value" + (f": {text}" if text else "")
    )


def check_number(value: Decimal) -> Decimal:
    """Raise DynamoDB's overflow/underflow/precision errors; return the value with trailing zeros removed.

    Digits are counted exactly, on the value as given: rounding first (any Decimal context does) would silently
    accept a 39-digit number as its 38-digit neighbour.
    """
    if value.is_zero():
        return Decimal(0)
    normalized = strip_zeros(value)
    if len(normalized.as_tuple().digits) > MAX_DIGITS:
        raise ValidationException("Attempting to store more than 38 significant digits in a Number")
    magnitude = normalized.copy_abs()  # abs() would round to the default 28-digit context
    if magnitude > MAX_MAGNITUDE:
        raise ValidationException(NUMBER_OVERFLOW)
    if magnitude < MIN_MAGNITUDE:
        raise ValidationException(
            "Number underflow. Attempting to store a number with magnitude smaller than supported range"
        )
    return normalized


def strip_zeros(value: Decimal) -> Decimal:
    """The same number with leading and trailing zero digits removed from its coefficient, without rounding."""
    sign, digits, exponent = value.as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[0] == 0:
        digits.pop(0)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exponent += 1
    return Decimal((sign, tuple(digits), exponent))


def format_number(value: Decimal) -> str:
    """DynamoDB's canonical text for a number: positional notation, no superfluous zeros."""
    if value.is_zero():
        return "0"
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# Numbers already in canonical form with at most 38 characters (so at most 38 digits, magnitude within range):
# normalising them would return them unchanged. Most numbers clients send look like this ("42", "-3.5").
_CANONICAL_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?")


def normalize_number(text: Any) -> str:
    if type(text) is str and len(text) <= MAX_DIGITS and text != "-0" and _CANONICAL_NUMBER.fullmatch(text):
        return text
    return format_number(parse_number(text))


# ----------------------------------------------------------------------------------------------------------- binary


def decode_binary(text: Any) -> bytes:
    if not isinstance(text, str):
        raise SerializationException("Binary value must be a base64 encoded string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SerializationException(
            f"Base64 encoded length is expected a multiple of 4 bytes but found: {len(text)}"
            if len(text) % 4
            else "Invalid base64 encoding of binary value"
        ) from None


def encode_binary(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


# ------------------------------------------------------------------------------------------------- normalisation


def normalize_value(value: Any, depth: int = 1) -> dict:
    """Validate one AttributeValue and return its canonical form. `depth` is this value's nesting level."""
    if not isinstance(value, dict):
        raise SerializationException("Unexpected value type in payload: expected an AttributeValue object")
    if len(value) != 1 or next(iter(value)) not in ALL_TYPES:
        # Members that are not data types are ignored, as the service ignores unknown members everywhere: what is
        # left must be exactly one data type ({"dog": "cat"} is an empty AttributeValue).
        known = [k for k in value if k in ALL_TYPES]
        if len(known) > 1:
            raise ValidationException(
                "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported"
                " datatypes"
            )
        if not known:
            raise ValidationException(
                "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
            )
        return normalize_value({known[0]: value[known[0]]}, depth)
    ((kind, inner),) = value.items()
    if kind == "S":
        if not isinstance(inner, str):
            raise SerializationException("STRING_VALUE can not be converted to a String")
        return value
    if kind == "N":
        return {"N": normalize_number(inner)}
    if kind == "B":
        return {"B": encode_binary(decode_binary(inner))}
    if kind == "BOOL":
        if not isinstance(inner, bool):
            raise SerializationException("BOOL value must be a JSON boolean")
        return value
    if kind == "NULL":
        if inner is not True:
            if not isinstance(inner, bool):
                raise SerializationException("NULL value must be a JSON boolean")
            raise invalid_parameter("Null attribute value types must have the value of true")
        return value
    if kind == "M":
        if not isinstance(inner, dict):
            raise SerializationException("Map value must be a JSON object")
        if depth > MAX_NESTING_DEPTH:
            raise ValidationException(NESTING_TOO_DEEP)
        return {"M": {name: normalize_value(v, depth + 1) for name, v in inner.items()}}
    if kind == "L":
        if not isinstance(inner, list):
            raise SerializationException("List value must be a JSON array")
        if depth > MAX_NESTING_DEPTH:
            raise ValidationException(NESTING_TOO_DEEP)
        return {"L": [normalize_value(v, depth + 1) for v in inner]}
    if kind in SET_TYPES:
        return {kind: normalize_set(kind, inner)}
    raise SerializationException(f"Unexpected field in AttributeValue: {kind}")


def normalize_set(kind: str, elements: Any) -> list[str]:
    if not isinstance(elements, list):
        raise SerializationException(f"{kind} value must be a JSON array")
    if not elements:
        raise invalid_parameter(f"An {_SET_NAMES[kind]} set  may not be empty")
    if kind == "SS":
        if not all(isinstance(e, str) for e in elements):
            raise SerializationException("STRING_VALUE can not be converted to a String")
        normalized = list(elements)
    elif kind == "NS":
        normalized = [normalize_number(e) for e in elements]
    else:
        normalized = [encode_binary(decode_binary(e)) for e in elements]
    if len(set(normalized)) != len(normalized):
        shown = ", ".join(elements if kind != "BS" else normalized)
        raise invalid_parameter(f"Input collection [{shown}] contains duplicates.")
    return normalized


def normalize_item(item: Any) -> dict[str, dict]:
    """Validate and normalise a whole item (a map of attribute name to AttributeValue)."""
    if not isinstance(item, dict):
        raise SerializationException("Item must be a JSON object")
    out = {}
    for name, value in item.items():
        if not name or len(name) > MAX_ATTRIBUTE_NAME_BYTES // 4:
            check_attribute_name(name)
        out[name] = normalize_value(value)
    return out


MAX_ATTRIBUTE_NAME_BYTES = 65535  # UTF-8 bytes of an attribute name (top-level or in a document path)
EMPTY_ATTRIBUTE_NAME = "Empty attribute name"
ATTRIBUTE_NAME_TOO_LONG = f"Attribute name is too large, must be less than {MAX_ATTRIBUTE_NAME_BYTES + 1} bytes"


def attribute_name_problem(name: str) -> str | None:
    """What is wrong with an attribute name (None: nothing). Item attributes, AttributesToGet, AttributeUpdates and
    ExpressionAttributeNames values obey the same rule: 1 to 65535 bytes of UTF-8."""
    if not name:
        return EMPTY_ATTRIBUTE_NAME
    if len(name) > MAX_ATTRIBUTE_NAME_BYTES // 4 and len(name.encode("utf-8")) > MAX_ATTRIBUTE_NAME_BYTES:
        return ATTRIBUTE_NAME_TOO_LONG
    return None


def check_attribute_name(name: str) -> None:
    problem = attribute_name_problem(name)
    if problem is not None:
        raise invalid_parameter(problem)


# ------------------------------------------------------------------------------------------------------ comparison


def values_equal(a: dict | None, b: dict | None) -> bool:
    """DynamoDB equality: same type and value; sets ignore order. Both sides must be normalised."""
    if a is None or b is None:
        return a is b
    (ka, va), = a.items()
    (kb, vb), = b.items()
    if ka != kb:
        return False
    if ka in SET_TYPES:
        return set(va) == set(vb)
    if ka == "M":
        return va.keys() == vb.keys() and all(values_equal(va[k], vb[k]) for k in va)
    if ka == "L":
        return len(va) == len(vb) and all(values_equal(x, y) for x, y in zip(va, vb))
    return va == vb


def compare_scalars(a: dict, b: dict) -> int | None:
    """-1/0/1 for two values of the same scalar type (S, N, B); None when they cannot be ordered."""
    (ka, va), = a.items()
    (kb, vb), = b.items()
    if ka != kb or ka not in SCALAR_TYPES:
        return None
    if ka == "N":
        x, y = Decimal(va), Decimal(vb)
    elif ka == "B":
        x, y = base64.b64decode(va), base64.b64decode(vb)
    else:
        # Python compares str by code point, which is the order of their UTF-8 bytes.
        x, y = va, vb
    return (x > y) - (x < y)


# ------------------------------------------------------------------------------------------------------------ size


def number_size(text: str) -> int:
    """Bytes of a stored number: about one per two *significant* digits, plus one (and one for a minus sign).

    "Leading and trailing zeroes are trimmed" (DynamoDB's item sizes): 12345678901234567890123456789012345678E30
    costs 20 bytes, as 38 significant digits do, not the 35 its 68 positional digits would. The exact rule follows
    the base-100 digit pairs DynamoDB stores: the significant digits are paired from the decimal point, so a
    coefficient whose pairing leaves a half-filled pair at both ends costs one byte more.

    Works on the canonical text (`format_number`: no exponent, no superfluous zeros) with string operations only:
    this runs for every number of every written item.
    """
    if text.isdigit() and text.isascii() and text[-1] != "0":
        # A positive integer without trailing zeros, the common case: every digit counts, and one of the count and
        # the first digit's power of ten is odd, so the rule below reduces to this.
        return 1 + (len(text) + 1) // 2
    negative = text[:1] == "-"
    body = text[1:] if negative else text
    whole, dot, fraction = body.partition(".")
    if not dot:
        if whole == "0":
            return 1
        significant = len(whole.rstrip("0"))  # an integer's only superfluous zeros are trailing ones
        adjusted = len(whole) - 1  # the power of ten of its first digit
    elif whole != "0":
        significant = len(whole) + len(fraction)  # canonical: the fraction ends with a non-zero digit
        adjusted = len(whole) - 1
    else:
        digits = fraction.lstrip("0")
        significant = len(digits)
        adjusted = len(digits) - len(fraction) - 1
    size = 1 + (significant + 1) // 2 + (0 if (significant % 2 or adjusted % 2) else 1)
    return size + 1 if negative else size


def value_size(value: dict) -> int:
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "N":
        return number_size(inner)
    if kind == "B":
        return len(base64.b64decode(inner))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(value_size(v) + 1 for v in inner)
    if kind == "SS":
        return sum(len(e.encode("utf-8")) for e in inner)
    if kind == "NS":
        return sum(number_size(e) for e in inner)
    return sum(len(base64.b64decode(e)) for e in inner)


def item_size(item: dict[str, dict]) -> int:
    """Bytes DynamoDB counts for an item: attribute names (UTF-8) plus values."""
    # Inlined for the common attribute (an ASCII name with a string value): this runs on every write.
    total = 0
    for name, value in item.items():
        total += len(name) if name.isascii() else len(name.encode("utf-8"))
        (kind, inner), = value.items()
        if kind == "S":
            total += len(inner) if inner.isascii() else len(inner.encode("utf-8"))
        else:
            total += value_size(value)
    return total


# --------------------------------------------------------------------------------------------------- key encoding


def encode_key_value(value: dict) -> bytes:
    """Bytes whose unsigned lexicographic order is DynamoDB's order for the value's (scalar) type."""
    (kind, inner), = value.items()
    if kind == "S":
        return inner.encode("utf-8")
    if kind == "B":
        return base64.b64decode(inner)
    return encode_number(Decimal(inner))


TUPLE_TERMINATOR = b"\x00\x01"


def escape_key_bytes(raw: bytes) -> bytes:
    """A component's key bytes inside a tuple encoding: 0x00 becomes 0x00 0xFF (above the terminator)."""
    return raw.replace(b"\x00", b"\x00\xff") if b"\x00" in raw else raw


def join_key_bytes(raws) -> bytes:
    """The tuple encoding of components already encoded by `encode_key_value`."""
    return b"".join(escape_key_bytes(raw) + TUPLE_TERMINATOR for raw in raws)


def encode_key_tuple(values) -> bytes:
    """Bytes whose unsigned order is the lexicographic order of the key values, each compared in its own type's
    order (the key of a multi-attribute GSI partition or sort key)."""
    return join_key_bytes(encode_key_value(value) for value in values)


def encode_number(value: Decimal) -> bytes:
    """Order-preserving bytes for a DynamoDB number.

    Layout: a sign class byte (0x01 negative, 0x02 zero, 0x03 positive), then the adjusted decimal exponent shifted
    into 0..255, then the significant digits as ASCII. Trailing zeros are never present (numbers are normalised), so
    a shorter digit string that is a prefix of a longer one is the smaller magnitude. Negatives complement exponent
    and digits and end with 0xFF so that the larger magnitude sorts first.
    """
    if value.is_zero():
        return b"\x02"
    sign, digits, exponent = strip_zeros(value).as_tuple()
    adjusted = exponent + len(digits) - 1  # -130 .. 125
    exp_byte = adjusted + 130
    digit_bytes = bytes(48 + d for d in digits)
    if not sign:
        return b"\x03" + bytes((exp_byte,)) + digit_bytes
    return b"\x01" + bytes((255 - exp_byte,)) + bytes(255 - b for b in digit_bytes) + b"\xff"


def decode_number_key(raw: bytes) -> str:
    """Inverse of `encode_number`, as canonical number text."""
    if raw == b"\x02":
        return "0"
    if raw[0] == 3:
        adjusted = raw[1] - 130
        digits = raw[2:].decode("ascii")
        sign = ""
    else:
        adjusted = (255 - raw[1]) - 130
        digits = bytes(255 - b for b in raw[2:-1]).decode("ascii")
        sign = "-"
    return format_number(Decimal(f"{sign}{digits[0]}.{digits[1:] or '0'}E{adjusted}"))


def decode_key_value(kind: str, raw: bytes) -> dict:
    if kind == "S":
        return {"S": raw.decode("utf-8")}
    if kind == "B":
        return {"B": encode_binary(raw)}
    return {"N": decode_number_key(raw)}
