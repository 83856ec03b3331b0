"""The sink's plain JSON encoders (kafkasource/formats/plain_json/native_encode.py: the native one, Rust, and the
Python one) on values picked by hand, without Spark: both give the same bytes; Jackson's escapes, Java's shapes of
doubles and floats, null fields, time zones and their offset changes, the types neither covers, the fallback without
the extension. Against Spark's own `to_json` over a corpus: tests/integration/test_json_encode.py."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from kafkasource.formats.plain_json import native_encode

pytestmark = pytest.mark.skipif(not native_encode.available(), reason="the native extension is not built here")

UTC = dt.UTC


def _both(array: pa.Array, zone: str = "UTC", ignore_null_fields: bool = True) -> list:
    native = native_encode.encode_native(array, zone, ignore_null_fields).to_pylist()
    assert native_encode.encode_python(array, zone, ignore_null_fields).to_pylist() == native
    return native


def test_jackson_escapes_and_utf8_without_spark():
    array = pa.array([{"s\n": '"\\\b\t\n\f\r\x00\x1f\x7f/é😀'}], pa.struct([("s\n", pa.string())]))
    assert _both(array) == ['{"s\\n":"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001F\x7f/é😀"}'.encode()]


def test_null_fields_written_when_ignore_null_fields_is_false():
    t = pa.struct([("a", pa.int32()), ("n", pa.null()), ("l", pa.list_(pa.int64()))])
    array = pa.array([{"a": None, "n": None, "l": [None]}, None], t)
    assert _both(array, ignore_null_fields=False) == [b'{"a":null,"n":null,"l":[null]}', None]
    assert _both(array) == [b'{"l":[null]}', None]


def test_doubles_and_floats_in_java_shapes():
    t = pa.struct([("d", pa.float64()), ("f", pa.float32())])
    rows = [{"d": 4.9e-324, "f": 1.401298464324817e-45}, {"d": 1e-3, "f": 1e10}, {"d": 9999999.0, "f": float("nan")}]
    assert _both(pa.array(rows, t)) == [b'{"d":4.9E-324,"f":1.4E-45}', b'{"d":0.001,"f":1.0E10}',
                                        b'{"d":9999999.0,"f":"NaN"}']
    # halfway between two shortest candidates: the even last digit, as Spark on Java 17 printed these
    ties = [{"d": 1234567890123456.75, "f": 2256344.75}, {"d": 1234567890123456.25, "f": -3595501.25},
            {"d": 2000000000000000.5, "f": 8388609.5}]
    assert _both(pa.array(ties, t)) == [b'{"d":1.2345678901234568E15,"f":2256344.8}',
                                        b'{"d":1.2345678901234562E15,"f":-3595501.2}',
                                        b'{"d":2.0000000000000005E15,"f":8388610.0}']


def test_timestamps_past_9999_in_a_daylight_saving_zone_are_not_covered():
    array = pa.array([{"t": 253402300800 * 1_000_000 + 86400 * 200 * 1_000_000}],
                     pa.struct([("t", pa.timestamp("us", tz="UTC"))]))
    assert _both(array, "UTC") == [b'{"t":"+10000-07-19T00:00:00.000Z"}']
    with pytest.raises(NotImplementedError, match="after year 9999 in America/Los_Angeles"):
        native_encode.encode(array, "America/Los_Angeles")


@pytest.mark.parametrize(("arrow_type", "why"), [
    (pa.map_(pa.binary(), pa.int32()), "a map with keys of Arrow type"),
    (pa.decimal256(40, 2), "Arrow type"),
    (pa.month_day_nano_interval(), "Arrow type"),
])
def test_types_neither_encoder_covers_raise_not_implemented(arrow_type, why):
    array = pa.array([{"x": None}], pa.struct([("x", arrow_type)]))
    with pytest.raises(NotImplementedError, match=why):
        native_encode.encode_native(array, "UTC")
    with pytest.raises(NotImplementedError, match=why):
        native_encode.encode_python(array, "UTC")
    with pytest.raises(NotImplementedError, match=why):
        native_encode.encode(array, "UTC")


def test_an_offset_change_inside_an_hour_is_found_to_the_second():
    # Los Angeles went to daylight saving time at 10:00:00 UTC on 14 March 2021; Kolkata's offset before 1942
    # had seconds, and its 1941 change fell at 18:07:10 UTC
    t = pa.struct([("t", pa.timestamp("s", tz="UTC"))])
    spring = pa.array([{"t": 1615715999}, {"t": 1615716000}, {"t": None}], t)
    assert _both(spring, "America/Los_Angeles") == [
        b'{"t":"2021-03-14T01:59:59.000-08:00"}', b'{"t":"2021-03-14T03:00:00.000-07:00"}', b"{}"]
    assert native_encode.zone_table(spring, "America/Los_Angeles") == ([-(2**63), 1615716000], [-28800, -25200])
    assert native_encode.zone_table(spring, "+05:30") == ([-(2**63)], [19800])
    assert native_encode.zone_table(spring, "UTC+01:00") == ([-(2**63)], [3600])
    assert native_encode.zone_table(spring, "GMT-8") == ([-(2**63)], [-28800])
    assert _both(spring, "GMT-8")[0] == b'{"t":"2021-03-14T01:59:59.000-08:00"}'


def test_an_empty_column_encodes_to_no_rows():
    array = pa.array([], pa.struct([("t", pa.timestamp("us", tz="UTC")), ("s", pa.string())]))
    assert native_encode.encode_native(array, "Europe/Paris").to_pylist() == []
    assert native_encode.encode_python(array, "Europe/Paris").to_pylist() == []


def test_without_the_extension_encode_falls_back_to_the_python_encoder():
    # a real process whose import of the extension fails, as on a node where it was not built
    import subprocess
    import sys

    code = """import sys; sys.modules["kafkasource._native"] = None
import datetime as dt, pyarrow as pa
from kafkasource.formats.plain_json import native_encode
assert not native_encode.available()
t = pa.struct([("t", pa.timestamp("us", tz="UTC")), ("m", pa.map_(pa.string(), pa.float32()))])
rows = [{"t": dt.datetime(1850, 1, 1, tzinfo=dt.timezone.utc), "m": [("k", 2256344.75)]}, None]
print(native_encode.encode(pa.array(rows, t), "America/Los_Angeles").to_pylist())"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout == (
        "[b'{\"t\":\"1849-12-31T16:07:02.000-07:52:58\",\"m\":{\"k\":2256344.8}}', None]\n"
    )


def test_an_unknown_time_zone_is_refused_by_name():
    array = pa.array([{"t": 0}], pa.struct([("t", pa.timestamp("us", tz="UTC"))]))
    with pytest.raises(ValueError, match=r"^unknown time zone 'Mars/Olympus_Mons'$"):
        native_encode.encode(array, "Mars/Olympus_Mons")
