"""The sink's Avro encoding, native (kafkasource._native's encode_avro) against Python (fastavro): byte-identical
payloads for a rich schema, read back exactly by fastavro, the same reasons for rows that do not fit, and the
Python encoder serving what the native one does not cover. No Spark: Arrow batches as Spark hands them over."""

from __future__ import annotations

import datetime
import io
import json
import uuid
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from kafkasource.errors import EncodeError
from kafkasource.formats.avro import native_encode as avro_encoding
from kafkasource.formats.encoding import ColumnEncoding, Encoding
from kafkasource.formats.registry import RegistrySchema
from kafkasource.writing.encoded import encode_batch

pytestmark = pytest.mark.skipif(not avro_encoding.available(), reason="kafkasource._native is not built here")

UTC = datetime.UTC
SCHEMA = {
    "type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "small", "type": "int"},
        {"name": "flag", "type": "boolean"},
        {"name": "ratio", "type": "float"},
        {"name": "score", "type": "double"},
        {"name": "note", "type": ["string", "null"]},
        {"name": "maybe", "type": ["null", "long"], "default": None},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "big", "type": ["null", {"type": "fixed", "name": "Big", "size": 9, "logicalType": "decimal",
                                          "precision": 20, "scale": 4}]},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "blob", "type": "bytes"},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
        {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
            {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]},
        {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
        {"name": "tags", "type": {"type": "array", "items": ["string", "null"]}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "extra", "type": ["null", "string"], "default": None},  # the column lacks it: null
    ]}  # fmt: skip
ARROW = pa.struct([
    ("id", pa.int64()), ("small", pa.int16()), ("flag", pa.bool_()), ("ratio", pa.float32()),
    ("score", pa.float32()), ("note", pa.string()), ("maybe", pa.int64()), ("amount", pa.decimal128(10, 2)),
    ("big", pa.decimal128(12, 3)), ("at", pa.timestamp("us", tz="UTC")), ("at_ms", pa.timestamp("us", tz="UTC")),
    ("local", pa.timestamp("us")), ("day", pa.date32()), ("status", pa.string()), ("blob", pa.binary()),
    ("digest", pa.binary()), ("ref", pa.string()),
    ("address", pa.struct([("city", pa.string()), ("zip", pa.string())])),
    ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))), ("tags", pa.list_(pa.string())),
    ("counts", pa.map_(pa.string(), pa.int64())),
])  # fmt: skip
AT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
BEFORE_EPOCH = datetime.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC)  # -500 µs: -1 ms, floored
REF = "0f8fad5b-d9cb-469f-a165-70867728950e"


def row(i: int, **changes) -> dict:
    value = {
        "id": 2**40 + i, "small": -3 + i, "flag": i % 2 == 0, "ratio": 1.5 + i, "score": 0.1 + i,
        "note": None if i % 2 else f"note {i}", "maybe": None if i % 3 == 0 else -(2**50) * i,
        "amount": [Decimal("-1.28"), Decimal("1.27"), Decimal("0.00"), Decimal("-99999999.99")][i % 4],
        "big": None if i % 3 == 1 else [Decimal("-123456789.123"), Decimal("0.001")][i % 2],
        "at": AT, "at_ms": BEFORE_EPOCH if i % 2 else AT, "local": datetime.datetime(2001, 2, 3, 4, 5, 6, 7 + i),
        "day": datetime.date(1960 + i, 1, 2), "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "blob": bytes(range(i * 3)), "digest": b"\x00\xff" + bytes([i, 7]), "ref": REF,
        "address": None if i % 2 else {"city": f"Oslø {i}", "zip": None if i % 4 == 2 else "0150"},
        "items": [{"sku": f"s{j}", "qty": j - 1} for j in range(i % 3)],
        "tags": ["a", None, "ü"][: i % 4], "counts": [(f"k{j}", j * 1000 - 1) for j in range(i % 3)],
    }  # fmt: skip
    value.update(changes)
    return value


def encoding(schema: dict, dead_letters: str | None = None, schema_id: int = 7) -> Encoding:
    return Encoding(
        (ColumnEncoding("value", "avro", RegistrySchema(schema_id, "AVRO", json.dumps(schema))),), dead_letters, {}
    )


def batch_of(values: list, arrow=ARROW) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array(values, arrow), pa.array([b"k"] * len(values))], ["value", "key"])


def both(batch: pa.RecordBatch, schema: dict, dead_letters: str | None = None) -> tuple[list, list]:
    """Payloads from the native and the Python encoder, after checking the native encoder covered the column."""
    column = encoding(schema, dead_letters).columns[0]
    assert avro_encoding.NativeAvroEncoder(column.schema, "value").encode(batch.column("value")) is not None
    native = encode_batch(batch, encoding(schema, dead_letters), "t", native=True)
    python = encode_batch(batch, encoding(schema, dead_letters), "t", native=False)
    return native.to_pylist(), python.to_pylist()


def read(payload: bytes, schema: dict):
    assert payload[:5] == b"\x00\x00\x00\x00\x07"
    return fastavro.schemaless_reader(io.BytesIO(payload[5:]), fastavro.parse_schema(schema), None)


def test_native_and_python_payloads_are_byte_identical_for_a_rich_schema_and_read_back_exactly():
    """Nested and nullable records, an array of records, nullable items (null second), a map, decimals as bytes and
    as fixed (rescaled), timestamps (micros, millis floored before the epoch, local), a date, an enum, bytes,
    fixed, a uuid, narrower numbers widened, a field the column lacks written as null, a null row as a null
    payload, over a sliced batch (Arrow offsets at every level)."""
    values = [row(i) for i in range(9)]
    values[4] = None
    batch = batch_of(values).slice(1)
    native, python = both(batch, SCHEMA)
    assert native == python
    payloads = [r["value"] for r in native]
    assert payloads[3] is None  # values[4]: a null row
    decoded = [None if p is None else read(p, SCHEMA) for p in payloads]
    expected = []
    for value in values[1:]:
        if value is None:
            expected.append(None)
            continue
        value = dict(value, ratio=pytest.approx(value["ratio"]), score=pytest.approx(value["score"], rel=1e-6))
        value["big"] = None if value["big"] is None else value["big"].quantize(Decimal("0.0001"))
        value["at_ms"] = value["at_ms"].replace(microsecond=value["at_ms"].microsecond // 1000 * 1000)
        value["counts"] = dict(value["counts"])
        value["extra"] = None
        value["ref"] = uuid.UUID(REF)  # fastavro reads a uuid as a UUID
        expected.append(value)
    assert decoded == expected
    assert decoded[0]["at_ms"] == datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


def test_rows_that_do_not_fit_get_the_same_reasons_and_dead_letters_on_both_encoders():
    """Each check encoders.py makes per row, with its path, worded alike on both; an enum name and a map key that
    are not ASCII are worded by Python's repr. Without deadLetterTopic both fail with the same EncodeError."""
    bad = [
        row(0, amount=None),
        row(1, items=[{"sku": "a", "qty": 1}, {"sku": None, "qty": 2}]),
        row(2, status="LOST 'it'"),
        row(3, status="ÉTÉ"),
        row(4, digest=b"\x01\x02\x03"),
        row(5, counts=[("ok", 1), ("k'ø", None)]),
        row(6, counts=[("k\n", None)]),
        row(7, address={"city": None, "zip": "1"}),
        row(8, tags=["x"], items=[{"sku": "a", "qty": None}]),
    ]
    batch = batch_of([row(9), *bad])
    native, python = both(batch, SCHEMA, "dead")
    assert native == python
    reasons = [
        [h["value"].decode() for h in r["headers"] or [] if h["key"] == "kafkasource.error"] for r in native
    ]  # fmt: skip
    assert reasons == [
        [],
        ["value.amount: null for a non-nullable field"],
        ["value.items[1].sku: null for a non-nullable field"],
        ["value.status: \"LOST 'it'\" is not one of the enum's names (NEW, PAID, SHIPPED)"],
        ["value.status: 'ÉTÉ' is not one of the enum's names (NEW, PAID, SHIPPED)"],
        ["value.digest: 3 bytes for a fixed of 4"],
        ['value.counts["k\'ø"]: null where the schema takes none'],
        ["value.counts['k\\n']: null where the schema takes none"],
        ["value.address.city: null for a non-nullable field"],
        ["value.items[0].qty: null for a non-nullable field"],
    ]
    assert [r["topic"] for r in native] == ["t"] + ["dead"] * 9
    native_words = avro_encoding.NativeAvroEncoder(encoding(SCHEMA).columns[0].schema, "value").encode(
        batch.column("value")
    )
    assert native_words is not None
    # the reasons needing Python's repr of a non-ASCII string (rows 4 and 6) are worded by the Python encoder
    worded = [(i, None if i in (4, 6) else reason[0]) for i, reason in enumerate(reasons) if reason]
    assert native_words[1] == worded
    errors = []
    for native_path in (True, False):
        with pytest.raises(EncodeError) as caught:
            encode_batch(batch, encoding(SCHEMA), "t", partition=3, first_row=10, native=native_path)
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert errors[0].startswith(
        "cannot write row 11 of Spark partition 3: the value column does not fit its writer schema: value.amount: "
        "null for a non-nullable field (8 more rows of this batch do not fit)"
    )


def test_decimals_that_do_not_fit_are_named_alike_and_widened_ones_written_alike():
    """A decimal with more digits than the schema's, or more scale, in Python's Decimal wording; integers into a
    decimal; bytes decimals at the two's complement lengths fastavro writes."""
    schema = {"type": "record", "name": "D", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3, "logicalType": "decimal", "precision": 6,
                               "scale": 1}},
        {"name": "n", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 3}}]}  # fmt: skip
    arrow = pa.struct([("d", pa.decimal128(12, 7)), ("f", pa.decimal128(5, 0)), ("n", pa.int32())])
    values = [
        {"d": Decimal(v), "f": Decimal(f), "n": n}
        for v, f, n in [("1.2800000", "-12345", -128), ("-1.2800000", "12345", 99999), ("0.0000000", "0", 0),
                        ("-9999.9900000", "-1", 1), ("0.0000001", "1", 2), ("12345.6700000", "2", 3),
                        ("0E-7", "3", 100000)]
    ]  # fmt: skip
    native, python = both(batch_of(values, arrow), schema, "dead")
    assert native == python
    reasons = [[h["value"].decode() for h in r["headers"] or [] if h["key"] == "kafkasource.error"] for r in native]
    assert reasons == [[], [], [], [], ["value.d: 1E-7 does not fit decimal(6,2)"],
                       ["value.d: 12345.6700000 does not fit decimal(6,2)"],
                       ["value.n: 100000 does not fit decimal(8,3)"]]  # fmt: skip
    d_schema = fastavro.parse_schema(schema)
    assert [fastavro.schemaless_reader(io.BytesIO(r["value"][5:]), d_schema, None) for r in native[:4]] == [
        {"d": Decimal("1.28"), "f": Decimal("-12345.0"), "n": Decimal("-128.000")},
        {"d": Decimal("-1.28"), "f": Decimal("12345.0"), "n": Decimal("99999.000")},
        {"d": Decimal("0.00"), "f": Decimal("0.0"), "n": Decimal("0.000")},
        {"d": Decimal("-9999.99"), "f": Decimal("-1.0"), "n": Decimal("1.000")},
    ]


def test_what_the_native_encoder_does_not_cover_is_encoded_by_python():
    """A union of int and long (fastavro picks the branch by the value), a map with a duplicate key and a column
    type the driver never lets through (int64 into an Avro int) leave the column to the Python encoder, which
    writes it: never a wrong encoding."""
    union = {"type": "record", "name": "U", "fields": [{"name": "u", "type": ["int", "long"]}]}
    batch = batch_of([{"u": 5}], pa.struct([("u", pa.int32())]))
    column = encoding(union).columns[0]
    native = avro_encoding.NativeAvroEncoder(column.schema, "value")
    assert native.encode(batch.column("value")) is None
    assert native.unsupported == "a union of int, long"
    assert encode_batch(batch, encoding(union), "t").column("value").to_pylist() == [b"\x00\x00\x00\x00\x07\x00\x0a"]

    maps = {"type": "map", "values": "long"}
    batch = batch_of([[("a", 1), ("a", 2)]], pa.map_(pa.string(), pa.int64()))
    column = encoding(maps).columns[0]
    native = avro_encoding.NativeAvroEncoder(column.schema, "value")
    assert native.encode(batch.column("value")) is None
    assert native.unsupported == "a map with a duplicate key"
    written = encode_batch(batch, encoding(maps), "t").column("value").to_pylist()
    assert written == [b"\x00\x00\x00\x00\x07\x02\x02a\x04\x00"]

    wide = {"type": "record", "name": "W", "fields": [{"name": "i", "type": "int"}]}
    batch = batch_of([{"i": 1}], pa.struct([("i", pa.int64())]))
    native = avro_encoding.NativeAvroEncoder(encoding(wide).columns[0].schema, "value")
    assert native.encode(batch.column("value")) is None
    assert native.unsupported == "Arrow type l into an Avro int"
    assert encode_batch(batch, encoding(wide), "t").column("value").to_pylist() == [b"\x00\x00\x00\x00\x07\x02"]


def test_arrays_whose_children_start_at_their_own_offsets_encode_alike():
    """Arrow children with offsets of their own (a struct of sliced columns, a list and a map over sliced values,
    sliced again), under a root union with null first: the native encoder reads each level where it starts."""
    schema = ["null", {"type": "record", "name": "R", "fields": [
        {"name": "n", "type": ["null", "long"]}, {"name": "xs", "type": {"type": "array", "items": "string"}},
        {"name": "m", "type": {"type": "map", "values": ["null", "int"]}}]}]  # fmt: skip
    numbers = pa.array([99, 1, None, 3, 4]).slice(1)
    strings = pa.array(["skip", "skip", "a", "bb", "", "ccc"]).slice(2)
    xs = pa.ListArray.from_arrays(pa.array([0, 1, 1, 3, 4]), strings)
    keys, items = pa.array(["z", "k1", "k2", "k3"]).slice(1), pa.array([7, 5, None, 6], pa.int32()).slice(1)
    m = pa.MapArray.from_arrays(pa.array([0, 1, 2, 2, 3]), keys, items)
    column = pa.StructArray.from_arrays([numbers, xs, m], ["n", "xs", "m"], mask=pa.array([False, False, True, False]))
    batch = pa.RecordBatch.from_arrays([column.slice(1)], ["value"])
    native, python = both(batch, schema)
    assert native == python
    parsed = fastavro.parse_schema(schema)
    assert [None if r["value"] is None else fastavro.schemaless_reader(io.BytesIO(r["value"][5:]), parsed, None)
            for r in native] == [{"n": None, "xs": [], "m": {"k2": None}}, None,
                         {"n": 4, "xs": ["ccc"], "m": {"k3": 6}}]  # fmt: skip
