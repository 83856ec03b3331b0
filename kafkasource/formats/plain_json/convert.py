"""A parsed JSON document (kafkasource.formats.plain_json.text) laid into a Spark type as Spark's JacksonParser lays
it for from_json, into the Python values pyarrow builds the type's Arrow array from.

What Spark does, and so what this does: a null is null for every type; a token the type cannot take fails that
value (Failed). An object's field that fails is left null and the object is kept with the others filled (Partial:
spark.sql.json.enablePartialResults, on by default); so is an array's element or a map's value that is itself
partial, while one that fails outright fails the whole array or map. At the root, a partial object is the row
from_json gives; anything but an object fails the whole record (all fields null). Duplicate names: each is laid
in turn, the last one that converts wins.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafkasource.formats.plain_json.datetimes import parse_date, parse_timestamp, parse_timestamp_ntz
from kafkasource.formats.plain_json.text import Flt, Obj
from kafkasource.formats.plain_json.written import java_text

Convert = Callable[[object], object]


class Failed(ValueError):
    """The value cannot be laid into the type; the message says why."""


class Partial(Exception):
    """A struct, array or map laid in part: `value` with the parts that failed null (or left out, in a map)."""

    def __init__(self, value: object, reason: str):
        super().__init__(reason)
        self.value, self.reason = value, reason


INTEGER_RANGES: dict[type, tuple[int, int, str]] = {
    ByteType: (-128, 255, "tinyint"),
    ShortType: (-(2**15), 2**15 - 1, "smallint"),
    IntegerType: (-(2**31), 2**31 - 1, "int"),
    LongType: (-(2**63), 2**63 - 1, "bigint"),
}
_SPECIAL = {
    "NaN": math.nan,
    "+INF": math.inf,
    "+Infinity": math.inf,
    "Infinity": math.inf,
    "-INF": -math.inf,
    "-Infinity": -math.inf,
}


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, Flt)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, Obj) else "an array"


def _failed(value: object, name: str) -> Failed:
    if isinstance(value, str) and value == "":
        return Failed(f"an empty string cannot be {name}")
    return Failed(f"{_kind(value)} ({java_text(value)[:60]}) cannot be {name}")


def converter(data_type: DataType, zone, non_numeric: bool = True) -> Convert:
    """The function that lays a parsed value into `data_type` (null stays None); `zone` reads zone-less
    timestamps, `non_numeric` (allowNonNumericNumbers) says whether "NaN" and "Infinity" strings are numbers."""
    name = data_type.simpleString()
    if isinstance(data_type, BooleanType):
        return lambda v: v if v is None or isinstance(v, bool) else _raise(_failed(v, name))
    if type(data_type) in INTEGER_RANGES:
        low, high, _ = INTEGER_RANGES[type(data_type)]
        wrap = isinstance(data_type, ByteType)  # Jackson's getByteValue takes 128 to 255 and wraps them

        def integer(v):
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int):
                raise _failed(v, name)
            if not low <= v <= high:
                raise Failed(f"{v} is out of range for {name}")
            return v - 256 if wrap and v > 127 else v

        return integer
    if isinstance(data_type, (FloatType, DoubleType)):
        return lambda v: _floating(v, name, non_numeric)
    if isinstance(data_type, StringType):
        return lambda v: v if v is None or isinstance(v, str) else java_text(v)
    if isinstance(data_type, DecimalType):
        return lambda v: _decimal(v, data_type.precision, data_type.scale, name)
    if isinstance(data_type, TimestampType):
        return lambda v: _timestamp(v, zone, name)
    if isinstance(data_type, TimestampNTZType):
        return lambda v: _from_string(v, parse_timestamp_ntz, name)
    if isinstance(data_type, DateType):
        return lambda v: _from_string(v, parse_date, name)
    if isinstance(data_type, BinaryType):
        return lambda v: _binary(v, name)
    if isinstance(data_type, StructType):
        return struct_converter(data_type, zone, non_numeric)
    if isinstance(data_type, ArrayType):
        return _array_converter(converter(data_type.elementType, zone, non_numeric), name)
    if isinstance(data_type, MapType):
        return _map_converter(converter(data_type.valueType, zone, non_numeric), name)
    raise ValueError(f"{name} is not a type plain JSON reads")


def _raise(error: Exception):
    raise error


def _floating(v: object, name: str, non_numeric: bool) -> float | None:
    if v is None:
        return None
    if isinstance(v, Flt):
        return float(v.text)
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    # allowNonNumericNumbers: the strings Spark reads as NaN and the infinities
    if isinstance(v, str) and v in _SPECIAL and non_numeric:
        return _SPECIAL[v]
    raise _failed(v, name)


def _decimal(v: object, precision: int, scale: int, name: str) -> Decimal | None:
    if v is None:
        return None
    if isinstance(v, Flt) and v.text in ("NaN", "Infinity", "-Infinity"):
        raise _failed(v, name)
    if isinstance(v, (int, Flt)) and not isinstance(v, bool):
        text = v.text if isinstance(v, Flt) else str(v)
    elif isinstance(v, str) and v:
        text = v.replace(",", "")  # Spark's decimal parser for the US locale drops grouping commas
    else:
        raise _failed(v, name)
    with localcontext(prec=200):
        try:
            exact = Decimal(text)
        except InvalidOperation:
            raise _failed(v, name) from None
        if not exact.is_finite() or not _java_big_decimal(text):
            raise _failed(v, name)
        rounded = exact.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if len(rounded.as_tuple().digits) > precision and rounded != 0:
        raise Failed(f"{text} does not fit {name}")
    return rounded


def _java_big_decimal(text: str) -> bool:
    """Whether java.math.BigDecimal reads `text` (Python's Decimal also reads NaN, Infinity, spaces, underscores)."""
    body = text[1:] if text[:1] in "+-" else text
    mantissa, _, exponent = body.lower().partition("e")
    if exponent and not exponent.lstrip("+-").isdigit():
        return False
    whole, _, fraction = mantissa.partition(".")
    return bool(whole + fraction) and (whole + fraction).isdigit() and (whole + fraction).isascii()


def _timestamp(v: object, zone, name: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, int) and not isinstance(v, bool):  # a whole number: seconds since the epoch
        if not -(2**63) <= v * 1_000_000 < 2**63:
            raise Failed(f"{v} seconds is out of range for {name}")
        return v * 1_000_000
    return _from_string(v, lambda text: parse_timestamp(text, zone), name)


def _from_string(v: object, parse: Callable[[str], int | None], name: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, str) and v:
        found = parse(v)
        if found is not None:
            return found
    raise _failed(v, name)


def _binary(v: object, name: str) -> bytes | None:
    if v is None:
        return None
    if isinstance(v, str):
        try:
            return base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise Failed(f"a string that is not base64 cannot be {name}") from None
    raise _failed(v, name)


def struct_converter(schema: StructType, zone, non_numeric: bool = True, skipped: str | None = None) -> Convert:
    """An object into a struct: a dict of every field (None where absent or failed); Partial if any failed. The root's
    field named `skipped` (the corrupt-record column) is never read from the JSON, as Spark never reads it."""
    fields = {f.name: converter(f.dataType, zone, non_numeric) for f in schema.fields if f.name != skipped}
    names = [f.name for f in schema.fields]
    shown = schema.simpleString()

    def struct(v):
        if v is None:
            return None
        if not isinstance(v, Obj):
            raise _failed(v, shown)
        row: dict[str, object] = dict.fromkeys(names)
        reason = None
        for key, item in v:
            convert = fields.get(key)
            if convert is None:
                continue
            try:
                row[key] = convert(item)
            except Partial as partial:
                row[key] = partial.value
                reason = reason or f"field {key}: {partial.reason}"
            except Failed as exc:
                reason = reason or f"field {key}: {exc}"
        if reason is not None:
            raise Partial(row, reason)
        return row

    return struct


def _array_converter(element: Convert, name: str) -> Convert:
    def array(v):
        if v is None:
            return None
        if isinstance(v, Obj) or not isinstance(v, list):
            raise _failed(v, name)
        items, reason = [], None
        for i, item in enumerate(v):
            try:
                items.append(element(item))
            except Partial as partial:
                items.append(partial.value)
                reason = reason or f"element {i}: {partial.reason}"
            except Failed as exc:
                raise Failed(f"element {i}: {exc}") from None
        if reason is not None:
            raise Partial(items, reason)
        return items

    return array


def _map_converter(value_of: Convert, name: str) -> Convert:
    def map_(v):
        if v is None:
            return None
        if not isinstance(v, Obj):
            raise _failed(v, name)
        pairs, reason, failed = [], None, None
        for key, item in v:
            try:
                pairs.append((key, value_of(item)))
            except Partial as partial:
                pairs.append((key, partial.value))
                reason = reason or f"key {key}: {partial.reason}"
            except Failed as exc:
                failed = failed or Failed(f"key {key}: {exc}")
        if failed is not None:
            raise failed
        if reason is not None:
            raise Partial(pairs, reason)
        return pairs

    return map_


def root_converter(schema: DataType, zone, non_numeric: bool = True, skipped: str | None = None) -> Convert:
    """The record's converter: a struct's (the corrupt-record field `skipped`), a map's, or an array's, which takes an
    object as an array of that one struct where the elements are structs (Spark's SPARK-19595)."""
    if isinstance(schema, StructType):
        return struct_converter(schema, zone, non_numeric, skipped)
    whole = converter(schema, zone, non_numeric)
    if not isinstance(schema, ArrayType) or not isinstance(schema.elementType, StructType):
        return whole
    element = converter(schema.elementType, zone, non_numeric)

    def array_root(v):
        if not isinstance(v, Obj):
            return whole(v)
        try:
            return [element(v)]
        except Partial as partial:
            raise Partial([partial.value], f"element 0: {partial.reason}") from None

    return array_root
