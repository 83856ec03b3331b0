"""The native plain JSON decoder (kafkasource/formats/plain_json/native_decode.py over the extension's JsonDecoder):
its rows are the Python decoder's, which tests/integration/test_plain_json.py compares with Spark's from_json; plain
records never leave the native path, and the records it is unsure of are read by the Python decoder."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

from kafkasource.formats.plain_json.datetimes import fixed_offset
from kafkasource.formats.plain_json.decode import PlainJsonDecoder
from kafkasource.formats.plain_json.native_decode import NativePlainJsonDecoder
from kafkasource.formats.plain_json.options import read_json_options
from kafkasource.formats.plain_json.schema import read_schema
from kafkasource.runtime import native_extension
from tests.support.json_corpus import CASES

pytestmark = pytest.mark.skipif(not native_extension.has("json_decoder"), reason="the native extension is not built")


def _decoders(schema: str, **options: str) -> tuple[PlainJsonDecoder, NativePlainJsonDecoder]:
    read = read_json_options({f"json.{name}".lower(): value for name, value in options.items()})
    parsed = read_schema(schema)
    return PlainJsonDecoder(parsed, read), NativePlainJsonDecoder(parsed, read)


def _same(a, b) -> bool:
    """Equal values of equal types, NaN equal to itself."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("mode", ["PERMISSIVE", "FAILFAST"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_every_corpus_value_decodes_natively_to_the_python_decoders_row_and_reason(case, mode):
    python, native = _decoders(case.schema, **{"timeZone": "UTC", **case.options, "mode": mode})
    payloads = pa.array(case.values, pa.binary())
    expected_values, expected_reasons = python.decode(payloads)
    for sliced in (payloads, payloads.slice(1)):  # an array that starts past its buffers' first row too
        values, reasons = native.decode(sliced)
        start = len(payloads) - len(sliced)
        for row, value in enumerate(values.to_pylist()):
            assert _same(value, expected_values[start + row].as_py()), (case.values[start + row], value)
        assert reasons.to_pylist() == expected_reasons.to_pylist()[start:]


ORDER_SCHEMA = (
    "order_id BIGINT, customer STRING, amount DOUBLE, ratio FLOAT, quantity INT, small SMALLINT, tiny TINYINT, "
    "paid BOOLEAN, created_at TIMESTAMP, local TIMESTAMP_NTZ, day DATE, tags ARRAY<STRING>, "
    "address STRUCT<city: STRING, lines: ARRAY<STRING>>, attributes MAP<STRING, BIGINT>, price DECIMAL(10,2)"
)
PLAIN = [
    {
        "order_id": 1,
        "customer": "ann",
        "amount": 12.5,
        "ratio": 0.1,
        "quantity": 3,
        "small": -32768,
        "tiny": 127,
        "paid": True,
        "created_at": "2024-03-01T10:15:30.123Z",
        "local": "2024-03-01 10:15:30",
        "day": "2024-03-01",
        "tags": ["gift", "express"],
        "address": {"city": "Zürich", "lines": ["a", "b"]},
        "attributes": {"x": 1, "y": 2},
    },
    {
        "order_id": -9223372036854775808,
        "customer": 'tab\there "quoted" \u00e9 \u4e2d \\ /',
        "amount": -0.0,
        "ratio": 3.4e38,
        "quantity": 2147483647,
        "created_at": "2024-03-01T10:15:30+01:00",
        "day": "2024-2-9",
        "tags": [],
        "address": {"city": None, "lines": None},
        "attributes": {},
        "unknown": {"deep": [1, {"x": None}]},
    },
    {
        "order_id": 3,
        "amount": 1e-7,
        "created_at": 1700000000,
        "local": "2024-03-01T10:15:30.1234567",
        "created_at_as_text": "2024-03-01T10:15:30",
        "address": None,
        "attributes": {"dup": 2},
        "price": None,
    },
    {"amount": 12, "created_at": "2024-03-01T10:15:30.5-08:00", "tags": [None, "x"], "paid": False},
    {},
]


def _texts(records: list[dict]) -> list[bytes]:
    # json.dumps keeps a dict's keys once: the map's duplicate key is written into the text by hand
    return [
        json.dumps(r, ensure_ascii=r is not PLAIN[1]).replace('{"dup": 2}', '{"dup": 1, "dup": 2}').encode()
        for r in records
    ]


def test_plain_records_of_every_type_the_native_path_reads_never_leave_it():
    python, native = _decoders(ORDER_SCHEMA)
    payloads = pa.array([*_texts(PLAIN), b"", b" \n\t", None], pa.binary())
    values, reasons, handed = native.decode_counting(payloads)
    assert handed == 0
    assert values.to_pylist() == python.decode(payloads)[0].to_pylist()
    assert values[1]["customer"].as_py() == 'tab\there "quoted" é 中 \\ /'
    assert values[0]["created_at"].as_py().isoformat() == "2024-03-01T10:15:30.123000+00:00"
    assert values[1]["created_at"].as_py().isoformat() == "2024-03-01T09:15:30+00:00"
    assert values[2]["local"].as_py().isoformat() == "2024-03-01T10:15:30.123456"
    assert values[5].as_py() is None and values[7].as_py() is None and reasons.null_count == len(payloads)


HANDED_OVER = [
    b'{"order_id": 1, "price": 12.345}',  # a decimal: the Python decoder's
    b"{'order_id': 2}",  # single quotes: Jackson's lenient grammar
    b'{"order_id": 3, "order_id": 4}',  # a field twice: each is read in turn
    b'{"customer": "\\ud83d\\ude00"}',  # an escaped surrogate pair
    b'{"order_id": "5"}',  # a string in a BIGINT: the field fails
    b'{"tiny": 200}',  # a TINYINT Jackson wraps
    b'{"created_at": "2024-03-01T10:15:30 Europe/Paris"}',  # a region's zone
    b'{"created_at": "Mar 1, 2024"}',  # not a timestamp Spark reads
    b'{"order_id": 01}',  # a leading zero
    b'{"customer": "caf\xe9"}',  # not UTF-8
    b"[1, 2]",  # a root of another kind than the schema's
    b"null",
    b'{"order_id": 6',  # cut short
]


def test_what_the_native_path_is_unsure_of_the_python_decoder_reads():
    python, native = _decoders(ORDER_SCHEMA)
    plain = _texts(PLAIN[:1])
    payloads = pa.array(plain + HANDED_OVER + plain, pa.binary())
    values, reasons, handed = native.decode_counting(payloads)
    assert handed == len(HANDED_OVER)
    expected_values, expected_reasons = python.decode(payloads)
    assert values.to_pylist() == expected_values.to_pylist()
    assert reasons.to_pylist() == expected_reasons.to_pylist()
    assert values[1]["price"].as_py() is not None and values[4]["customer"].as_py() == "😀"


def test_zone_less_timestamps_read_natively_only_in_a_fixed_zone():
    assert fixed_offset("UTC") == 0
    assert fixed_offset("+05:30") == 19_800
    assert fixed_offset("EST") == -18_000  # Java's short ids, as Spark reads them
    assert fixed_offset("America/Los_Angeles") is None
    payload = pa.array([b'{"created_at": "2024-07-01T12:00:00"}'], pa.binary())
    for time_zone, expected_handed, expected in (("+05:30", 0, "06:30:00"), ("America/Los_Angeles", 1, "19:00:00")):
        python, native = _decoders(ORDER_SCHEMA, timeZone=time_zone)
        values, _, handed = native.decode_counting(payload)
        assert handed == expected_handed
        assert values[0]["created_at"].as_py().time().isoformat() == expected
        assert values.to_pylist() == python.decode(payload)[0].to_pylist()
