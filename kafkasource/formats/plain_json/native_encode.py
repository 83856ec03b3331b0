"""Plain JSON encoding for the sink (no registry): a struct column written as Spark's `to_json` writes it, by the
native encoder (kafkasource._native's encode_json, Rust: the whole Arrow column of a batch in one call) or, where
the extension is absent or does not cover the column, by the Python encoder (plain_json/json_text.py), which
gives the same bytes.

Byte for byte Spark's output (what native/src/json_encode.rs's docstring lists), with one exception: floats and
doubles print the shortest digits that read back as the same value, the closest of those (halfway: the even one),
as the specification of Java 19's Double.toString and Float.toString describes (tested against Java 17 only).
Java 17's sometimes print one or two digits more (1.37342863480957901E18 where these print 1.373428634809579E18),
or a last digit that is not the closest (-6.4699496E25 where these print -6.4699497E25): the same float or double.

Not covered by either (NotImplementedError): map keys of binary, struct, list or map type (Spark writes the JVM's
toString of its internal value, `[B@18ca596c` for binary), decimal256, Arrow types Spark does not give a struct's
fields (intervals among them); and timestamps after year 9999 in a zone with daylight saving time.

Time zones: the encoders are handed the UTC offset in force over every hour that holds one of the column's
timestamps (`zone_table`), worked out with zoneinfo, whose rules match Java's: the local mean time before a
zone's first transition (-07:52:58 in Los Angeles before 1883), and its daylight saving rules applied after the
last transition its file lists, where pyarrow's own time zone support stops applying them (after 2037).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.formats.plain_json import datetimes, json_text
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_arrow import binary_array

HOUR = 3600
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# zoneinfo works on datetimes: years 1 to 9999, a day short of each end so the local time stays inside them
FIRST_SECOND = int((dt.datetime(1, 1, 2, tzinfo=dt.UTC) - EPOCH).total_seconds())
LAST_SECOND = int((dt.datetime(9999, 12, 30, tzinfo=dt.UTC) - EPOCH).total_seconds())
YEAR_10000 = int((dt.datetime(9999, 12, 31, tzinfo=dt.UTC) - EPOCH).total_seconds()) + 86400


def available() -> bool:
    """The native encoder: part of the extension, absent from one built without it."""
    ext = native_extension.EXTENSION
    return ext is not None and getattr(ext, "encode_json", None) is not None


def timestamp_seconds(array: pa.Array) -> list[pa.Array]:
    """The seconds (floored) of every zoned timestamp in `array`, at any depth, as int64 arrays."""
    t = array.type
    if pa.types.is_timestamp(t):
        if not t.tz:
            return []  # a timestamp without a zone (timestamp_ntz) prints no offset
        raw = array.view(pa.int64())
        per_second = json_text.PER_SECOND[t.unit]
        if per_second == 1:
            return [raw]
        # floor division: integer division truncates toward zero, so shift the values to be positive first
        shift = (2**62 // per_second) * per_second
        return [pc.subtract(pc.divide(pc.add_checked(raw, shift), per_second), shift // per_second)]
    if pa.types.is_struct(t):
        return [seconds for child in array.flatten() for seconds in timestamp_seconds(child)]
    if pa.types.is_map(t):
        return [seconds for child in json_text.list_items(array).flatten() for seconds in timestamp_seconds(child)]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return timestamp_seconds(json_text.list_items(array))
    return []


def _offset_at(zone: zoneinfo.ZoneInfo, second: int) -> int:
    # before year 1 the local mean time of the zone's first entry still holds (kept from FIRST_SECOND on); the last
    # day of 9999 takes the offset of the day before (no zone changes its offset on 31 December)
    when = EPOCH + dt.timedelta(seconds=min(max(second, FIRST_SECOND), LAST_SECOND))
    offset = when.astimezone(zone).utcoffset()
    assert offset is not None  # a ZoneInfo always has one
    return int(offset.total_seconds())


def zone_table(array: pa.Array, time_zone: str) -> tuple[list[int], list[int]]:
    """(starts, offsets): the UTC offset (seconds east) in force from each start (seconds since the epoch) on,
    covering every zoned timestamp in `array` in the session's `time_zone` (a zone name or a fixed offset).

    Offsets change at most once an hour in any zone of the tz database (the closest two transitions it lists, in
    Africa/Freetown, are four days apart), so for each hour that holds a timestamp the offsets at its first and
    last second tell whether one starts inside it, and a bisection finds the second it starts at. An hour costs
    two zoneinfo calls: a batch of recent events spans a few hours."""
    fixed = datetimes.fixed_offset(time_zone)  # the source's reading of a zone name (Spark's, short ids included)
    if fixed is not None:
        return [-(2**63)], [fixed]
    zone = datetimes.zone(time_zone)
    if not isinstance(zone, zoneinfo.ZoneInfo):
        raise ValueError(f"unknown time zone {time_zone!r}")
    arrays = [a for a in timestamp_seconds(array) if len(a)]
    if not arrays:
        return [], []
    seconds = pa.chunked_array(arrays, pa.int64()).drop_null()
    if len(seconds) == 0:
        return [], []
    bounds = pc.min_max(seconds).as_py()
    if bounds["max"] >= YEAR_10000 and _offset_at(zone, LAST_SECOND - 180 * 86400) != _offset_at(zone, LAST_SECOND):
        raise NotImplementedError(f"a timestamp after year 9999 in {time_zone}, a zone with daylight saving time")
    shift = (2**62 // HOUR) * HOUR  # floor division, as above
    hours = pc.subtract(pc.divide(pc.add_checked(seconds, shift), HOUR), shift // HOUR).unique().sort().to_pylist()
    starts: list[int] = []
    offsets: list[int] = []

    def add(start: int, offset: int) -> None:
        if not offsets or offsets[-1] != offset:  # an unchanged offset goes on: the seconds between hold no value
            starts.append(start)
            offsets.append(offset)

    for hour in hours:
        first, last = hour * HOUR, hour * HOUR + HOUR - 1
        at_first, at_last = _offset_at(zone, first), _offset_at(zone, last)
        add(first, at_first)
        if at_first != at_last:
            low, high = first, last  # the offset at low is at_first, at high is not
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if _offset_at(zone, middle) == at_first else (low, middle)
            add(high, _offset_at(zone, high))
    if starts:
        starts[0] = -(2**63)  # the first offset also holds before the first hour (no value sits there)
    return starts, offsets


def encode_native(array: pa.StructArray, time_zone: str, ignore_null_fields: bool = True) -> pa.Array:
    """The rows of a struct column as to_json's texts, by the native encoder: a binary column, null where the row
    is. NotImplementedError where the extension is absent or does not cover the column."""
    if not available():
        raise NotImplementedError(f"kafkasource's native extension {native_extension.why_unavailable()}")
    starts, offsets = zone_table(array, time_zone)
    length, buffers = native_extension.extension().encode_json(array, starts, offsets, ignore_null_fields)
    if length == 0:
        return pa.array([], pa.binary())
    return binary_array(length, buffers)


def encode_python(array: pa.StructArray, time_zone: str, ignore_null_fields: bool = True) -> pa.Array:
    """As encode_native, by the Python encoder (json_text.py)."""
    if not pa.types.is_struct(array.type):
        raise ValueError(f"a struct column is wanted, not {array.type}")
    zone = json_text.Zone(*zone_table(array, time_zone))
    rows = json_text.texts(array, zone, ignore_null_fields)
    return pa.array([None if text is None else text.encode("utf-8") for text in rows], pa.binary())


def encode(array: pa.StructArray, time_zone: str, ignore_null_fields: bool = True) -> pa.Array:
    """The rows of a struct column as to_json's texts: natively where the extension covers the column, else in
    Python (NotImplementedError where neither does: see the module's docstring)."""
    try:
        return encode_native(array, time_zone, ignore_null_fields)
    except NotImplementedError:
        return encode_python(array, time_zone, ignore_null_fields)
