"""The pure-Python plain JSON encoder: a struct column written row by row as Spark's `to_json` writes it, byte for
byte the native encoder's output (native/src/json_encode.rs, whose docstring lists what Spark writes for each
type). Used where the extension is absent or does not cover a column; the tests run both over the same rows.

json.dumps differs from Spark's Jackson generator in spaces (", " and ": "), escapes (\\u00e9 for é and
\\u007f for DEL with its default ensure_ascii, \\u001f in lower case hex where Jackson writes \\u001F), floats
(1e+20 where Spark writes 1.0E20, NaN bare where Spark quotes it), so each type is written here as Jackson writes
it. Columns are converted a whole array at a time (the children of a struct, the items of a list) rather than value
by value.
"""

from __future__ import annotations

import base64
import bisect
import math
import struct
from decimal import Decimal, localcontext

import pyarrow as pa

Texts = list[str | None]  # one JSON text per row of an array, None for a null

_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)} | {
    0x22: '\\"',
    0x5C: "\\\\",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
}


def quote(text: str) -> str:
    """A JSON string as Jackson writes it: its short escapes, other controls as \\u00XX, the rest as it is."""
    return '"' + text.translate(_ESCAPES) + '"'


def java_decimal(unscaled: int, scale: int) -> str:
    """Java's BigDecimal.toString of unscaled × 10^-scale (scale ≥ 0): plain, or scientific below 10^-6."""
    sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled))
    adjusted = len(digits) - 1 - scale
    if scale == 0:
        return sign + digits
    if adjusted >= -6:
        if len(digits) > scale:
            return f"{sign}{digits[:-scale]}.{digits[-scale:]}"
        return f"{sign}0.{'0' * (scale - len(digits))}{digits}"
    return f"{sign}{digits[0]}{'.' + digits[1:] if len(digits) > 1 else ''}E{adjusted}"


def _java_shape(negative: bool, digits: str, exponent: int) -> str:
    """Double.toString's shape of 0.d1d2... scaled so the first digit sits at 10^exponent."""
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = (digits + "0" * (exponent + 1))[: exponent + 1]
            return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _split(text: str) -> tuple[bool, str, int]:
    """(negative, significant digits, exponent of the first digit) of a decimal text ("-1.5e-07", "0.001")."""
    sign, digits, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int)  # finite
    shown = "".join(map(str, digits)).rstrip("0") or "0"
    return bool(sign), shown, exponent + len(digits) - 1


def _reads_back_f32(text: str, value: float) -> bool:
    """Whether the decimal `text` reads (rounding to nearest, ties to even) as the float32 `value`: exactly, without
    the double rounding of text → double → float32."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    below = struct.unpack("<f", struct.pack("<I", bits - 1))[0] if bits & 0x7FFFFFFF else -value
    above = struct.unpack("<f", struct.pack("<I", bits + 1))[0]
    if value < 0:
        below, above = above, below
    with localcontext() as exact_context:
        exact_context.prec = 400  # a float32's exact decimal has at most 112 significant digits
        exact = Decimal(value)
        low, high = Decimal(below), Decimal(above) if math.isfinite(above) else 2 * exact - Decimal(below)
        if math.isinf(below):  # the float32 furthest from zero: the next one would be as far again
            low = 2 * exact - high
        low, high = (low + exact) / 2, (exact + high) / 2
        number = Decimal(text)
        if low < number < high:
            return True
        return number in (low, high) and bits % 2 == 0 and number != exact


def _shortest_f32(value: float) -> str:
    """The shortest decimal that reads back as the float32 `value`, the closest of those (as Rust's `{:e}`)."""
    with localcontext() as exact_context:
        exact_context.prec = 400
        exact = Decimal(value)
        for digits in range(1, 10):
            rounded = Decimal(f"{value:.{digits - 1}e}")
            step = Decimal(1).scaleb(rounded.adjusted() - digits + 1)
            fitting = [c for c in (rounded - step, rounded, rounded + step) if _reads_back_f32(f"{c:e}", value)]
            if fitting:
                # the closest; of two as close, the one whose last digit is even (Rust's choice, and Java's)
                return f"{min(fitting, key=lambda c: (abs(c - exact), c.as_tuple().digits[-1] % 2)):e}"
    return repr(value)


def _tie_to_even(shortest: str, value: float) -> str:
    """Where the value lies exactly halfway between two shortest candidates (2256344.75 as a float, between 2256344.7
    and 2256344.8), the one with the even last digit, as Java takes (and json_encode.rs, which Rust's `{:e}` does
    not: it takes the one further from zero)."""
    exact = "".join(map(str, Decimal(value).as_tuple().digits)).rstrip("0")
    if len(exact) != len(shortest) + 1 or not exact.endswith("5"):
        return shortest
    down = exact[: len(shortest)]
    if int(down[-1]) % 2 == 0:
        return down
    up = str(int(down) + 1)
    return up if len(up) == len(down) else shortest


def java_float(value: float, single: bool) -> str:
    """A float (single: a float32's value) as Spark writes it: shortest digits in Double.toString's shape, NaN and
    the infinities quoted. Where the shortest is one digit, the closest two-digit decimal if it reads back (Java
    19's rule: 4.9E-324)."""
    if value != value:
        return '"NaN"'
    if value in (float("inf"), float("-inf")):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    negative, digits, exponent = _split(_shortest_f32(value) if single else repr(value))
    digits = _tie_to_even(digits, value)
    if len(digits) == 1:
        two = f"{value:.1e}"
        reads_back = _reads_back_f32(two, value) if single else float(two) == value
        _, two_digits, two_exponent = _split(two)
        if reads_back and not two_digits.endswith("0"):
            digits, exponent = two_digits, two_exponent
    return _java_shape(negative, digits, exponent)


def _civil(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day since 1970-01-01 (Howard Hinnant's civil_from_days)."""
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def date_text(days: int) -> str:
    """yyyy-MM-dd as Java's formatter writes it: four digits at least, a sign past 9999 and before year 0."""
    year, month, day = _civil(days)
    if year > 9999:
        return f"+{year}-{month:02}-{day:02}"
    if year < 0:
        return f"-{-year:04}-{month:02}-{day:02}"
    return f"{year:04}-{month:02}-{day:02}"


class Zone:
    """The UTC offsets in force from each start second on (native_encode.zone_table)."""

    def __init__(self, starts: list[int], offsets: list[int]):
        self.starts, self.offsets = starts, offsets

    def offset_at(self, second: int) -> int:
        at = bisect.bisect_right(self.starts, second)
        if at == 0:
            raise NotImplementedError(f"no UTC offset given for the timestamp at second {second}")
        return self.offsets[at - 1]


def timestamp_text(value: int, per_second: int, zone: Zone | None) -> str:
    """yyyy-MM-dd'T'HH:mm:ss.SSSXXX (milliseconds floored; XXX: Z, +05:30 or -07:52:58); no offset without a zone."""
    second, fraction = divmod(value, per_second)
    offset = zone.offset_at(second) if zone is not None else 0
    days, s = divmod(second + offset, 86400)
    text = f"{date_text(days)}T{s // 3600:02}:{s // 60 % 60:02}:{s % 60:02}.{fraction * 1000 // per_second:03}"
    if zone is None:
        return text
    if offset == 0:
        return text + "Z"
    sign, a = ("-", -offset) if offset < 0 else ("+", offset)
    return f"{text}{sign}{a // 3600:02}:{a // 60 % 60:02}" + (f":{a % 60:02}" if a % 60 else "")


PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def _raw(array: pa.Array, as_type: pa.DataType) -> list:
    return array.view(as_type).to_pylist()


def leaf_texts(array: pa.Array, zone: Zone) -> Texts:
    """The JSON text of each value of an array of a type without children."""
    t = array.type
    texts: Texts
    if pa.types.is_null(t):
        return [None] * len(array)
    if pa.types.is_boolean(t):
        texts = [None if v is None else ("true" if v else "false") for v in array.to_pylist()]
    elif pa.types.is_integer(t) and pa.types.is_signed_integer(t):
        texts = [None if v is None else str(v) for v in array.to_pylist()]
    elif pa.types.is_float32(t) or pa.types.is_float64(t):
        single = pa.types.is_float32(t)
        texts = [None if v is None else java_float(v, single) for v in array.to_pylist()]
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        texts = [None if v is None else quote(v) for v in array.to_pylist()]
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        texts = [None if v is None else f'"{base64.b64encode(v).decode("ascii")}"' for v in array.to_pylist()]
    elif pa.types.is_decimal128(t) and t.scale >= 0:
        texts = [None if v is None else java_decimal(_unscaled(v, t.scale), t.scale) for v in array.to_pylist()]
    elif pa.types.is_date32(t):
        texts = [None if v is None else f'"{date_text(v)}"' for v in _raw(array, pa.int32())]
    elif pa.types.is_timestamp(t):
        per_second, at = PER_SECOND[t.unit], zone if t.tz else None
        texts = [None if v is None else f'"{timestamp_text(v, per_second, at)}"' for v in _raw(array, pa.int64())]
    else:
        raise NotImplementedError(f"Arrow type {t}")
    return texts


def _unscaled(value: Decimal, scale: int) -> int:
    # from the digits: Decimal's arithmetic would round a decimal(38, s) to its context's 28 digits
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite
    unscaled = int("".join(map(str, digits))) * 10 ** (exponent + scale)
    return -unscaled if sign else unscaled


def key_texts(keys: pa.Array, zone: Zone) -> list[str]:
    """A map's keys as Spark writes them: the toString of each key's internal value, as a JSON string."""
    t = keys.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return [quote(k) for k in keys.to_pylist()]
    if pa.types.is_date32(t):
        return [f'"{v}"' for v in _raw(keys, pa.int32())]
    if pa.types.is_timestamp(t):
        per_second = PER_SECOND[t.unit]
        # microseconds, truncated toward zero as Rust's integer division (Spark's keys are microseconds already)
        return [f'"{(abs(v) * 1_000_000 // per_second) * (1 if v >= 0 else -1)}"' for v in _raw(keys, pa.int64())]
    if pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
        texts = leaf_texts(keys, zone)
        return [quote(text.strip('"')) for text in texts if text is not None]  # NaN, Infinity: unquoted inside
    raise NotImplementedError(f"a map with keys of Arrow type {t}")


def texts(array: pa.Array, zone: Zone, ignore_null_fields: bool) -> Texts:
    """The JSON text of each row of `array` (None where the row is null)."""
    t = array.type
    valid = array.is_valid().to_pylist() if array.null_count else [True] * len(array)
    if pa.types.is_struct(t):
        names = [quote(t.field(k).name) + ":" for k in range(t.num_fields)]
        children = [texts(child, zone, ignore_null_fields) for child in array.flatten()]
        out: Texts = []
        for i, ok in enumerate(valid):
            if not ok:
                out.append(None)
                continue
            parts = [
                name + (child[i] or "null")
                for name, child in zip(names, children, strict=True)
                if child[i] is not None or not ignore_null_fields
            ]
            out.append("{" + ",".join(parts) + "}")
        return out
    if pa.types.is_map(t):
        keys_array, values_array = list_items(array).flatten()
        pairs = [
            k + ":" + (v or "null")
            for k, v in zip(key_texts(keys_array, zone), texts(values_array, zone, ignore_null_fields), strict=True)
        ]
        return _nest(array, valid, pairs, "{", "}")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item_texts = [v or "null" for v in texts(list_items(array), zone, ignore_null_fields)]
        return _nest(array, valid, item_texts, "[", "]")
    return leaf_texts(array, zone)


def list_items(array: pa.Array) -> pa.Array:
    """A list (or map) column's items (a map's key-value entries) from its first row's to its last row's, null
    rows' included, in order: pyarrow's flatten() takes no map, and leaves out what a null row spans."""
    offsets = array.offsets  # this array's own, slicing included
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    return array.values.slice(start, end - start)


def _nest(array: pa.Array, valid: list[bool], items: list[str], opening: str, closing: str) -> Texts:
    """Each list's (or map's) item texts, joined, from `items`: those of every row, null ones too."""
    offsets = array.offsets.to_pylist()  # this array's own, slicing included
    lengths = [offsets[i + 1] - offsets[i] for i in range(len(array))]
    out: Texts = []
    at = 0
    for ok, n in zip(valid, lengths, strict=True):
        out.append(opening + ",".join(items[at : at + n]) + closing if ok else None)
        at += n
    return out
