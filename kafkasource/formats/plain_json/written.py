"""A parsed JSON value written back as text the way from_json fills a STRING field that holds no JSON string:
Spark copies the token (or the whole object or array) through a Jackson generator, so numbers come out as Java
prints them (an integer in full, any other number as a double by Double.toString: 1.50 as 1.5, 1e3 as 1000.0, 1e20
as 1.0E20; NaN and the infinities in quotes), objects and arrays compact, strings with Jackson's escapes (\\" \\\\
\\b \\t \\f \\n \\r, other control characters as \\u00XX in upper-case hex, a character past the BMP as its
surrogate pair \\uD83D\\uDE00, everything else as it is).
"""

from __future__ import annotations

import math
from decimal import Decimal

from kafkasource.formats.plain_json.text import Flt, Obj

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_ESCAPE = {chr(c): _SHORT.get(chr(c), f"\\u{c:04X}") for c in range(32)} | _SHORT


def java_double(value: float) -> str:
    """Java's Double.toString: plain from 10^-3 up to 10^7, else d.dddE±n; the digits the shortest that read back."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest(abs(value))  # value = 0.d1d2... * 10^exponent
    if 1e-3 <= abs(value) < 1e7:
        if exponent <= 0:
            return f"{sign}0.{'0' * -exponent}{digits}"
        whole, fraction = digits[:exponent].ljust(exponent, "0"), digits[exponent:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent - 1}"


def _shortest(value: float) -> tuple[str, int]:
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    shown = "".join(map(str, digits))
    return shown, len(shown) + int(exponent)


def _char(c: str) -> str:
    found = _ESCAPE.get(c)
    if found is not None:
        return found
    if c > "\uffff":  # Jackson's UTF-8 generator writes a character past the BMP as its escaped surrogate pair
        pair = c.encode("utf-16-be")
        return f"\\u{pair[0]:02X}{pair[1]:02X}\\u{pair[2]:02X}{pair[3]:02X}"
    return c


def _string(text: str) -> str:
    return '"' + "".join(_char(c) for c in text) + '"'


def java_text(value: object) -> str:
    """`value` (a parsed JSON value, not None) as Spark's generator writes it."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Flt):
        number = float(value.text)
        shown = java_double(number)
        return f'"{shown}"' if math.isinf(number) or math.isnan(number) else shown
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Obj):
        return "{" + ",".join(f"{_string(k)}:{java_text(v)}" for k, v in value) + "}"
    return "[" + ",".join(java_text(v) for v in value) + "]"  # type: ignore[attr-defined]
