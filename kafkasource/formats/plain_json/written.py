"""A parsed JSON value written back as text the way from_json fills a STRING field that holds no JSON string:
Spark copies the token (or the whole object or array) through a Jackson generator, so numbers come out as Java
prints them (an integer in full, any other number as a double by Double.toString: 1.50 as 1.5, 1e3 as 1000.0, 1e20
as 1.0E20; NaN and the infinities in quotes), objects and arrays compact, strings with Jackson's escapes.

The numbers and escapes are the sink's (kafkasource.formats.plain_json.json_text, to_json's), with one difference:
from_json's generator writes UTF-8 bytes, and Jackson's UTF-8 generator writes a character past the BMP as its
escaped surrogate pair (\\uD83D\\uDE00), where to_json's writes it as it is.
"""

from __future__ import annotations

import re

from kafkasource.formats.plain_json.json_text import java_float, quote
from kafkasource.formats.plain_json.text import Flt, Obj

_PAST_BMP = re.compile("[\U00010000-\U0010ffff]")


def _pair(match: re.Match) -> str:
    pair = match.group(0).encode("utf-16-be")
    return f"\\u{pair[0]:02X}{pair[1]:02X}\\u{pair[2]:02X}{pair[3]:02X}"


def _string(text: str) -> str:
    quoted = quote(text)
    return _PAST_BMP.sub(_pair, quoted) if _PAST_BMP.search(quoted) else quoted


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
        return java_float(float(value.text), False)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Obj):
        return "{" + ",".join(f"{_string(k)}:{java_text(v)}" for k, v in value) + "}"
    return "[" + ",".join(java_text(v) for v in value) + "]"  # type: ignore[attr-defined]
