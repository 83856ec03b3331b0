"""Avro decoding into Arrow (kafkasource.formats.avro.decode): the Spark types, schema resolution between writer and
reader versions, every reason a record fails, for both decoders, checked against fastavro's own reading."""

from __future__ import annotations

import datetime
import io
import json
import random
import uuid
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from kafkasource.errors import OptionError
from kafkasource.formats.avro.decode import AvroDecoder, arrow_type
from kafkasource.formats.avro.schema import SchemaError
from kafkasource.formats.decoding import ColumnFormat
from kafkasource.formats.decoding import check_reader as _python_avro_reader
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import schema_ids
from kafkasource.runtime import native_extension

UTC = datetime.UTC


def frame(schema_id: int, schema: dict, record) -> bytes:
    """The schema-registry wire format of `record` written with `schema`, as fastavro encodes it."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema, _write_hint=False), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def decode(decoder: str, reader: dict, payloads: list, writers: dict[int, dict]) -> tuple[list, list]:
    """Values and reasons as Python lists, after checking the arrays are valid and of the reader's type."""
    avro = AvroDecoder(json.dumps(reader), native=decoder == "native")
    values, reasons = avro.decode(pa.array(payloads, pa.binary()),
                                  {i: RegistrySchema(i, "AVRO", json.dumps(schema)) for i, schema in writers.items()})
    values.validate(full=True)
    reasons.validate(full=True)
    assert values.type == arrow_type(json.dumps(reader)) == avro.arrow_type
    assert reasons.type == pa.string() and len(values) == len(reasons) == len(payloads)
    return values.to_pylist(), reasons.to_pylist()


def record(name: str, *fields, **extra) -> dict:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t, **d} for n, t, *rest in fields
                                                       for d in (rest[0] if rest else {},)], **extra}


def test_arrow_types_are_the_ones_spark_from_avro_gives():
    schema = record(
        "Everything",
        ("b", "boolean"), ("i", "int"), ("l", "long"), ("f", "float"), ("d", "double"), ("by", "bytes"),
        ("s", "string"), ("n", "null"),
        ("e", {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN"]}),
        ("fx", {"type": "fixed", "name": "Four", "size": 4}),
        ("a", {"type": "array", "items": "long"}), ("m", {"type": "map", "values": "string"}),
        ("r", record("Inner", ("x", "int"))),
        ("dec", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
        ("decfx", {"type": "fixed", "name": "Dec", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}),
        ("date", {"type": "int", "logicalType": "date"}),
        ("tsm", {"type": "long", "logicalType": "timestamp-millis"}),
        ("tsu", {"type": "long", "logicalType": "timestamp-micros"}),
        ("ltsm", {"type": "long", "logicalType": "local-timestamp-millis"}),
        ("ltsu", {"type": "long", "logicalType": "local-timestamp-micros"}),
        ("tm", {"type": "int", "logicalType": "time-millis"}),
        ("tu", {"type": "long", "logicalType": "time-micros"}),
        ("u", {"type": "string", "logicalType": "uuid"}),
        ("opt", ["null", "string"]), ("opt_last", ["int", "null"]),
        ("il", ["int", "long"]), ("fd", ["null", "float", "double"]),
        ("multi", ["null", "int", "string", "Inner"]), ("two", ["boolean", "bytes"]),
        ("bad_decimal", {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 3}),
        ("ref", "Colour"))
    struct = pa.struct
    assert arrow_type(json.dumps(schema)) == struct([
        ("b", pa.bool_()), ("i", pa.int32()), ("l", pa.int64()), ("f", pa.float32()), ("d", pa.float64()),
        ("by", pa.binary()), ("s", pa.string()), ("n", pa.null()), ("e", pa.string()), ("fx", pa.binary()),
        ("a", pa.list_(pa.int64())), ("m", pa.map_(pa.string(), pa.string())), ("r", struct([("x", pa.int32())])),
        ("dec", pa.decimal128(10, 2)), ("decfx", pa.decimal128(18, 4)), ("date", pa.date32()),
        ("tsm", pa.timestamp("us", tz="UTC")), ("tsu", pa.timestamp("us", tz="UTC")),
        ("ltsm", pa.timestamp("us")), ("ltsu", pa.timestamp("us")), ("tm", pa.int32()), ("tu", pa.int64()),
        ("u", pa.string()), ("opt", pa.string()), ("opt_last", pa.int32()), ("il", pa.int64()),
        ("fd", pa.float64()),
        ("multi", struct([("member0", pa.int32()), ("member1", pa.string()),
                          ("member2", struct([("x", pa.int32())]))])),
        ("two", struct([("member0", pa.bool_()), ("member1", pa.binary())])),
        ("bad_decimal", pa.binary()),  # an invalid decimal is its underlying type, as the specification says
        ("ref", pa.string())])


@pytest.mark.parametrize("schema, error", [
    (record("Node", ("next", ["null", "Node"])), "record Node refers to itself"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 39}, "wider than Spark's 38 digits"),
    (["null"], "a union with no branch but null"),
    ({"type": "record", "name": "R", "fields": [{"name": "x", "type": "Missing"}]}, "unknown type 'Missing'"),
    ({"type": "record", "name": "R", "fields": [{"type": "int"}]}, "KeyError: 'name'"),
    ({"type": "fixed", "name": "F"}, "KeyError: 'size'"),
])
def test_reader_schemas_without_a_spark_type_are_refused(schema, error):
    with pytest.raises(ValueError, match=error):
        arrow_type(json.dumps(schema))


def test_schema_ids_are_the_distinct_ids_of_prefixed_payloads():
    payloads = pa.array([b"\x00\x00\x00\x00\x07abc", None, b"\x00\x00\x00\x01\x00", b"\x01\x00\x00\x00\x09x",
                         b"\x00\x00\x00", b"\x00\x00\x00\x00\x07", b"\x00\xff\xff\xff\xff"], pa.binary())
    assert schema_ids(payloads) == [7, 256, 2**32 - 1]
    assert schema_ids(pa.array([], pa.binary())) == []


def test_primitives(decoder):
    schema = record("P", ("b", "boolean"), ("i", "int"), ("l", "long"), ("f", "float"), ("d", "double"),
                    ("by", "bytes"), ("s", "string"), ("n", "null"))
    rows = [{"b": True, "i": -2**31, "l": 2**63 - 1, "f": 1.5, "d": -0.1, "by": b"\x00\xff", "s": "ünï €", "n": None},
            {"b": False, "i": 2**31 - 1, "l": -2**63, "f": -3.25, "d": 1e300, "by": b"", "s": "", "n": None}]
    values, reasons = decode(decoder, schema, [frame(1, schema, row) for row in rows], {1: schema})
    assert reasons == [None, None]
    assert values == rows


def test_nested_records_arrays_maps_enums_fixed(decoder):
    point = record("Point", ("x", "int"), ("y", "int"))
    schema = record(
        "Shape", ("name", "string"), ("corners", {"type": "array", "items": point}),
        ("tags", {"type": "map", "values": {"type": "array", "items": "string"}}),
        ("colour", {"type": "enum", "name": "Colour", "symbols": ["RED", "GREEN", "BLUE"]}),
        ("hash", {"type": "fixed", "name": "Hash", "size": 3}),
        ("centre", "Point"), ("nested", record("Outer", ("inner", record("Inner", ("deep", ["null", "Point"]))))))
    rows = [{"name": "square", "corners": [{"x": 0, "y": 0}, {"x": 0, "y": 1}], "tags": {"a": ["1", "2"], "b": []},
             "colour": "BLUE", "hash": b"\x01\x02\x03", "centre": {"x": 5, "y": -5},
             "nested": {"inner": {"deep": {"x": 1, "y": 2}}}},
            {"name": "", "corners": [], "tags": {}, "colour": "RED", "hash": b"\x00\x00\x00",
             "centre": {"x": 0, "y": 0}, "nested": {"inner": {"deep": None}}}]
    values, reasons = decode(decoder, schema, [frame(3, schema, row) for row in rows], {3: schema})
    for row in rows:
        row["tags"] = list(row["tags"].items())  # pyarrow's Python form of a map
    assert reasons == [None, None]
    assert values == rows


def test_logical_types(decoder):
    schema = record(
        "L", ("dec", {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}),
        ("decfx", {"type": "fixed", "name": "Dec", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0}),
        ("date", {"type": "int", "logicalType": "date"}),
        ("tsm", {"type": "long", "logicalType": "timestamp-millis"}),
        ("tsu", {"type": "long", "logicalType": "timestamp-micros"}),
        ("ltsm", {"type": "long", "logicalType": "local-timestamp-millis"}),
        ("ltsu", {"type": "long", "logicalType": "local-timestamp-micros"}),
        ("tm", {"type": "int", "logicalType": "time-millis"}), ("tu", {"type": "long", "logicalType": "time-micros"}),
        ("u", {"type": "string", "logicalType": "uuid"}))
    moment = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    rows = [{"dec": Decimal("-1234567.89"), "decfx": Decimal(10**38 - 1), "date": datetime.date(1969, 12, 31),
             "tsm": moment.replace(microsecond=123000), "tsu": moment,
             "ltsm": datetime.datetime(1900, 1, 1, 0, 0, 0, 1000), "ltsu": datetime.datetime(2100, 1, 1, 0, 0, 0, 1),
             "tm": datetime.time(12, 0, 0, 5000), "tu": datetime.time(23, 59, 59, 999999),
             "u": uuid.UUID("12345678-1234-5678-1234-567812345678")},
            {"dec": Decimal("0.01"), "decfx": Decimal(-10**38 + 1), "date": datetime.date(2024, 1, 1),
             "tsm": datetime.datetime(1960, 1, 1, tzinfo=UTC), "tsu": datetime.datetime(1970, 1, 1, tzinfo=UTC),
             "ltsm": datetime.datetime(2000, 1, 1), "ltsu": datetime.datetime(1970, 1, 1),
             "tm": datetime.time(0, 0), "tu": datetime.time(0, 0, 0, 1), "u": uuid.UUID(int=0)}]
    values, reasons = decode(decoder, schema, [frame(9, schema, row) for row in rows], {9: schema})
    for row in rows:
        row["tm"] = (((row["tm"].hour * 60 + row["tm"].minute) * 60 + row["tm"].second) * 1000
                     + row["tm"].microsecond // 1000)
        row["tu"] = ((row["tu"].hour * 60 + row["tu"].minute) * 60 + row["tu"].second) * 10**6 + row["tu"].microsecond
        row["u"] = str(row["u"])
    assert reasons == [None, None]
    assert values == rows


def test_unions(decoder):
    inner = record("Inner", ("x", "int"))
    colour = {"type": "enum", "name": "Colour", "symbols": ["RED"]}
    schema = record("U", ("opt", ["null", "string"]), ("opt_last", [inner, "null"]), ("il", ["null", "int", "long"]),
                    ("multi", ["null", "int", "string", "Inner", colour, {"type": "array", "items": "int"}]))
    rows = [{"opt": "a", "opt_last": {"x": 1}, "il": 2**40, "multi": 7},
            {"opt": None, "opt_last": None, "il": None, "multi": "seven"},
            {"opt": "", "opt_last": None, "il": -1, "multi": ("Inner", {"x": 3})},
            {"opt": None, "opt_last": {"x": 2}, "il": 0, "multi": ("Colour", "RED")},
            {"opt": None, "opt_last": None, "il": 3, "multi": [1, 2]},
            {"opt": None, "opt_last": None, "il": 3, "multi": None}]
    values, reasons = decode(decoder, schema, [frame(2, schema, row) for row in rows], {2: schema})
    members = [{"member0": 7}, {"member1": "seven"}, {"member2": {"x": 3}}, {"member3": "RED"}, {"member4": [1, 2]},
               None]
    expected = []
    for row, member in zip(rows, members, strict=True):
        if member is not None:
            member = {f"member{i}": member.get(f"member{i}") for i in range(5)}
        expected.append({**row, "multi": member})
    assert reasons == [None] * len(rows)
    assert values == expected


READER = record(
    "Order", ("id", "long"), ("amount", "double"), ("note", "bytes"),
    ("status", {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "OTHER"], "default": "OTHER"}),
    ("channel", "string", {"default": "web"}), ("tags", {"type": "array", "items": "string"}, {"default": ["x"]}),
    ("customer", ["null", record("Customer", ("name", "string"))], {"default": None}),
    ("limits", record("Limits", ("low", "int"), ("high", ["null", "long"])), {"default": {"low": 1, "high": 2}}),
    ("rate", "float", {"aliases": ["ratio"]}))
WRITER_V1 = record(
    "Order", ("id", "int"), ("amount", "float"), ("note", "string"), ("legacy", {"type": "map", "values": "int"}),
    ("status", {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "REFUNDED"]}),
    ("ratio", "int"),
    ("obsolete", record("Old", ("a", ["null", "string", "int"]), ("b", {"type": "fixed", "name": "F2", "size": 2}))))
WRITER_V2 = READER


def test_two_writer_versions_resolve_into_one_reader(decoder):
    v1 = {"id": 7, "amount": 2.5, "note": "héllo", "legacy": {"k": 1}, "status": "REFUNDED", "ratio": 3,
          "obsolete": {"a": "gone", "b": b"zz"}}
    v2 = {"id": 2**40, "amount": 0.1, "note": b"\xff", "status": "PAID", "channel": "app", "tags": ["a"],
          "customer": {"name": "Ann"}, "limits": {"low": -1, "high": None}, "rate": 0.5}
    values, reasons = decode(decoder, READER,
                             [frame(1, WRITER_V1, v1), frame(2, WRITER_V2, v2), frame(1, WRITER_V1, v1)],
                             {1: WRITER_V1, 2: WRITER_V2})
    from_v1 = {"id": 7, "amount": 2.5, "note": "héllo".encode(), "status": "OTHER", "channel": "web", "tags": ["x"],
               "customer": None, "limits": {"low": 1, "high": 2}, "rate": 3.0}
    assert reasons == [None] * 3
    assert values == [from_v1, v2, from_v1]


def test_null_payloads_are_null_values_with_no_reason(decoder):
    schema = record("R", ("x", "int"))
    values, reasons = decode(decoder, schema, [None, frame(1, schema, {"x": 1}), None], {1: schema})
    assert values == [None, {"x": 1}, None]
    assert reasons == [None, None, None]


NOT_RESOLVABLE = "writer schema {} cannot be resolved into the reader schema: "


# ---- reader defaults: written in Avro binary by fastavro from their JSON, once per reader field ----

LACKING = record("R", ("id", "int"))  # a writer without the reader's other fields: their defaults fill them


def test_defaults_take_a_later_union_branch_and_the_underlying_types_json(decoder):
    """A union's default may be for any branch it fits (Avro 1.12), not only the first; a logical type's default
    is its underlying type's JSON (a date's days), and a double's may be a JSON integer."""
    reader = record("R", ("id", "int"), ("note", ["null", "string"], {"default": "none"}),
                    ("score", "double", {"default": 2}),
                    ("day", {"type": "int", "logicalType": "date"}, {"default": 3}),
                    ("labels", {"type": "map", "values": ["null", "long"]}, {"default": {"a": 1, "b": None}}))
    values, reasons = decode(decoder, reader, [frame(1, LACKING, {"id": 1})], {1: LACKING})
    assert reasons == [None]
    assert values == [{"id": 1, "note": "none", "score": 2.0, "day": datetime.date(1970, 1, 4),
                       "labels": [("a", 1), ("b", None)]}]


IN = record("In", ("a", "int"), ("b", "string", {"default": "dflt"}), ("c", ["null", "bytes"], {"default": None}))


def test_bytes_fixed_union_record_and_enum_defaults_decode_alike_on_both_decoders(decoder):
    """Each decoder reads the Avro binary written of a default, so the Python decoder gives what the native one
    gives: bytes and fixed from latin-1 text (not that text's UTF-8), a union's value for the first branch it
    fits, a nested record's missing fields from their own defaults (and the same value in every record that takes
    it), an enum's symbol; fastavro alone would hand over the default's JSON as it stands."""
    reader = record(
        "R", ("id", "int"), ("raw", "bytes", {"default": "\u00ff\u0001a"}),
        ("pair", {"type": "fixed", "name": "F", "size": 2}, {"default": "\u00ffb"}),
        ("maybe", ["null", "bytes"], {"default": None}), ("text", ["string", "bytes"], {"default": "\u00e9"}),
        ("ratio", ["float", "double"], {"default": 0.1}),  # the first branch it fits: float
        ("price", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}, {"default": "\u0001\u0000"}),
        ("at", {"type": "long", "logicalType": "timestamp-millis"}, {"default": 1_700_000_000_000}),
        ("inner", IN, {"default": {"a": 3}}),
        ("either", ["In", "long"], {"default": {"a": 4, "b": "x"}}),  # a struct of member0, member1
        ("many", {"type": "array", "items": "In"}, {"default": [{"a": 5}]}),
        ("kind", {"type": "enum", "name": "K", "symbols": ["A", "B"]}, {"default": "B"}),
        ("id2", {"type": "string", "logicalType": "uuid"}, {"default": "6f1f8c3e-2b4a-4d7e-9a51-0c2d3e4f5a6b"}))
    values, reasons = decode(decoder, reader, [frame(1, LACKING, {"id": 1}), frame(1, LACKING, {"id": 2})],
                             {1: LACKING})
    assert reasons == [None, None]
    expected = {"raw": b"\xff\x01a", "pair": b"\xffb", "maybe": None, "text": {"member0": "\u00e9", "member1": None},
                "ratio": 0.10000000149011612,
                "price": Decimal("2.56"), "at": datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
                "inner": {"a": 3, "b": "dflt", "c": None},
                "either": {"member0": {"a": 4, "b": "x", "c": None}, "member1": None},
                "many": [{"a": 5, "b": "dflt", "c": None}], "kind": "B", "id2": "6f1f8c3e-2b4a-4d7e-9a51-0c2d3e4f5a6b"}
    assert values == [{"id": 1, **expected}, {"id": 2, **expected}]


@pytest.mark.parametrize("field_type, default, why, value", [
    ("int", "x", "int: R.x is <x> of type <class 'str'> expected int", 5),
    ("int", 2**31, "int: R.x is <2147483648> of type <class 'int'> expected int", 5),
    ("float", 1e39, "float: R.x is 1e+39, beyond a float's range", 0.5),
    ("bytes", "\u20ac", "bytes: R.x: 'latin-1' codec can't encode character '\\u20ac' in position 0: ordinal not in "
                        "range(256)", b"b"),
    ({"type": "fixed", "name": "F", "size": 2}, "abc", "fixed F: R.x has 3 bytes, not 2", b"ab"),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, "B", 'enum E: R.x is "B", not one of its symbols', "A"),
    (["null", "int"], "s", "union: R.x fits no branch of the union", None),
    (record("In", ("a", "int"), ("b", "string")), {"a": 3},
     "record In: R.x has no value for field b, which has no default", {"a": 1, "b": "z"}),
    ({"type": "array", "items": ["null", {"type": "fixed", "name": "G", "size": 1}]}, [None, "a", "bc"],
     "array: R.x[2] fits no branch of the union", [None, b"a"]),
])
def test_a_default_that_does_not_fit_is_the_reason_of_writers_lacking_its_field_alone(decoder, field_type, default,
                                                                                     why, value):
    """Where the writer has the field the default is never read, and its records decode (the Python decoder once
    refused such a reader schema outright, and such a writer schema, as fastavro's parsing does)."""
    reader = record("R", ("id", "int"), ("x", field_type, {"default": default}))
    having = record("R", ("id", "int"), ("x", field_type))
    payloads = [frame(1, LACKING, {"id": 1}), frame(2, having, {"id": 2, "x": value}),
                frame(3, having, {"id": 3, "x": value})]  # 3: the reader itself, its default as unfit as the reader's
    values, reasons = decode(decoder, reader, payloads, {1: LACKING, 2: having, 3: reader})
    assert values == [None, {"id": 2, "x": value}, {"id": 3, "x": value}]
    assert reasons == [NOT_RESOLVABLE.format(1) + f"the default of R.x, {json.dumps(default)}, is not a {why}", None,
                       None]


# schemas our parser reads and fastavro refuses: the native decoder reads them, defaults too; the Python one says
# why it cannot, naming the schema
# (the field, its value as the reader's default gives it, fastavro's reason, the field's encoding of that value)
FASTAVRO_REFUSES = [
    pytest.param(("kind", {"type": "enum", "name": "E", "symbols": ["in-stock", "gone"]}, {"default": "gone"}),
                 "gone", "SchemaParseException: Every symbol must match the regular expression "
                 "[A-Za-z_][A-Za-z0-9_]*", b"\x02", id="enum-symbol-not-a-name"),
    pytest.param(("pair", ["null", {"type": "fixed", "name": "F", "size": 1},
                           {"type": "fixed", "name": "F", "size": 1}], {"default": None}),
                 None, "SchemaParseException: redefined named type: F", b"\x00", id="named-type-twice"),
    pytest.param(("price", {"type": "fixed", "name": "P", "size": 1, "logicalType": "decimal", "precision": 4},
                  {"default": "\u0007"}), Decimal(7),
                 "SchemaParseException: decimal precision of 4 doesn't fit into array of length 1", b"\x07",
                 id="decimal-wider-than-its-fixed"),
]


@pytest.mark.parametrize("extra, value, why, encoded", FASTAVRO_REFUSES)
def test_a_reader_schema_fastavro_refuses_reads_on_the_native_decoder_defaults_included(extra, value, why, encoded):
    if not native_extension.avro_decoder_available():
        pytest.skip("the native extension is not built")
    reader = record("R", ("id", "int"), extra)
    values, reasons = decode("native", reader, [frame(1, LACKING, {"id": 1})], {1: LACKING})
    assert (values, reasons) == ([{"id": 1, extra[0]: value}], [None])
    with pytest.raises(SchemaError) as refused:
        AvroDecoder(json.dumps(reader), native=False)
    assert str(refused.value) == f"fastavro does not read it: {why}"


@pytest.mark.parametrize("extra, value, why, encoded", FASTAVRO_REFUSES)
def test_a_writer_schema_fastavro_refuses_is_its_records_reason_on_the_python_decoder_alone(decoder, extra, value,
                                                                                           why, encoded):
    reader = record("R", ("id", "int"))
    writer = record("R", ("id", "int"), (*extra[:2], {}))  # fastavro cannot write with it: its field by hand
    values, reasons = decode(decoder, reader, [frame(1, reader, {"id": 1}) + encoded], {1: writer})
    if decoder == "native":
        assert (values, reasons) == ([{"id": 1}], [None])
    else:
        assert (values, reasons) == ([None], [NOT_RESOLVABLE.format(1) + f"it is not a valid Avro schema: fastavro "
                                                                          f"does not read it: {why}"])


def test_a_reader_schema_fastavro_refuses_is_refused_at_definition_for_the_python_decoder_naming_its_subject():
    reader = record("R", ("id", "int"), FASTAVRO_REFUSES[0].values[0])
    column = ColumnFormat("value", "avro", RegistrySchema(12, "AVRO", json.dumps(reader)))
    with pytest.raises(OptionError) as refused:
        _python_avro_reader(column, "orders-value")
    assert str(refused.value) == (
        "the value column's reader schema (id 12, subject orders-value) cannot be read by the Python Avro decoder: "
        f"fastavro does not read it: {FASTAVRO_REFUSES[0].values[2]}; the native Avro decoder reads it (readPath "
        "auto or native, kafkasource._native built)")
    _python_avro_reader(ColumnFormat("value", "avro", RegistrySchema(13, "AVRO", json.dumps(IN))), "orders-value")


def test_every_failure_has_its_reason_and_the_other_records_decode(decoder):
    reader = record("R", ("x", "long"), ("e", {"type": "enum", "name": "E", "symbols": ["A"]}, {"default": "A"}),
                    ("s", "string", {"default": ""}))
    good = record("R", ("x", "int"))
    no_default = record("R", ("y", "int"))
    wrong_type = record("R", ("x", "string"))
    enum_writer = record("R", ("x", "int"), ("e", {"type": "enum", "name": "E", "symbols": ["A", "B"]}))
    union_writer = record("R", ("x", ["int", "string"]))
    payloads = [
        frame(1, good, {"x": 1}),
        b"{\"x\": 1}",                                     # JSON, no prefix
        b"\x00\x00\x00",                                   # shorter than the prefix
        frame(99, good, {"x": 1}),                         # an id the caller found no schema for
        frame(2, no_default, {"y": 1}),
        frame(3, wrong_type, {"x": "one"}),
        frame(4, enum_writer, {"x": 1, "e": "B"}),         # a symbol the reader lacks: resolved per record
        frame(4, enum_writer, {"x": 2, "e": "A"}),
        frame(5, union_writer, {"x": "str"}),              # a union branch the reader cannot take
        frame(5, union_writer, {"x": 5}),
        frame(1, good, {"x": 2**20})[:-1],                 # cut short
        b"\x00\x00\x00\x00\x01",                           # the prefix and nothing
        frame(6, good, {"x": 1}),                          # a writer schema that is not a schema
        frame(7, record("R", ("x", "int"), ("s", "string")), {"x": 1, "s": "a"})[:-1] + b"\xff",  # invalid UTF-8
        None,
        frame(1, good, {"x": 3}),
    ]
    writers = {1: good, 2: no_default, 3: wrong_type, 4: enum_writer, 5: union_writer, 6: {"type": "nope"},
               7: record("R", ("x", "int"), ("s", "string"))}
    values, reasons = decode(decoder, reader, payloads, writers)
    ok = {"x": 1, "e": "A", "s": ""}
    assert values == [ok, None, None, None, None, None, None, {**ok, "x": 2}, None, {**ok, "x": 5}, None, None, None,
                      None, None, {**ok, "x": 3}]
    malformed = [reasons[i] for i in (10, 11, 13)]
    assert all(reason.startswith("malformed Avro record: ") for reason in malformed), malformed
    assert reasons[:10] + [reasons[12], reasons[14], reasons[15]] == [
        None, "no schema-registry wire-format prefix", "no schema-registry wire-format prefix", "unknown schema id 99",
        NOT_RESOLVABLE.format(2) + "the reader's field R.x has no default and the writer's R has no such field",
        NOT_RESOLVABLE.format(3) + "field R.x: the writer's string cannot be read as the reader's long",
        reasons[6], None, reasons[8], None,
        NOT_RESOLVABLE.format(6) + "it is not a valid Avro schema: unknown type 'nope'",
        None, None]
    assert reasons[6].startswith(NOT_RESOLVABLE.format(4)) and "B" in reasons[6], reasons[6]
    assert reasons[8].startswith(NOT_RESOLVABLE.format(5)), reasons[8]


def test_a_decimal_wider_than_the_reader_allows_is_malformed(decoder):
    schema = record("R", ("d", {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 1}))
    # 2 bytes: 12345 unscaled, 5 digits (fastavro refuses to write it)
    too_wide = b"\x00\x00\x00\x00\x01" + b"\x04\x30\x39"
    values, reasons = decode(decoder, schema, [too_wide, frame(1, schema, {"d": Decimal("-99.9")})], {1: schema})
    assert values == [None, {"d": Decimal("-99.9")}]
    assert reasons[0].startswith("malformed Avro record: ") and "does not fit decimal(3, 1)" in reasons[0], reasons[0]
    assert reasons[1] is None


# ---- thousands of generated records, field by field against fastavro's own reading ----

GENERATED = record(
    "Event", ("id", "long"), ("flag", "boolean"), ("count", ["null", "int"]), ("score", "double"),
    ("ratio", "float"), ("name", "string"), ("blob", ["null", "bytes"]),
    ("kind", {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}),
    ("at", {"type": "long", "logicalType": "timestamp-micros"}),
    ("price", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}),
    ("day", {"type": "int", "logicalType": "date"}),
    ("labels", {"type": "map", "values": ["null", "long"]}),
    ("items", {"type": "array", "items": record("Item", ("sku", "string"), ("qty", "int"))}),
    ("choice", ["null", "string", "long", "Item"]))
GENERATED_OLD = record(  # the older version: fewer fields, narrower types
    "Event", ("id", "int"), ("flag", "boolean"), ("score", "float"), ("ratio", "float"), ("name", "string"),
    ("kind", {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}),
    ("at", {"type": "long", "logicalType": "timestamp-micros"}),
    ("price", {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}),
    ("day", {"type": "int", "logicalType": "date"}),
    ("labels", {"type": "map", "values": ["null", "long"]}),
    ("items", {"type": "array", "items": record("Item", ("sku", "string"), ("qty", "int"))}),
    ("choice", ["null", "string", "long", "Item"]), ("dropped", "string"))
for f in GENERATED["fields"]:
    if f["name"] in ("count", "blob"):
        f["default"] = None


def generated_record(rng: random.Random, old: bool) -> dict:
    def text() -> str:
        return "".join(rng.choice("abcé€😀 ") for _ in range(rng.randrange(12)))

    def item() -> dict:
        return {"sku": text(), "qty": rng.randrange(-2**31, 2**31)}

    row = {
        "id": rng.randrange(-2**31, 2**31) if old else rng.randrange(-2**63, 2**63), "flag": rng.random() < 0.5,
        "score": float(rng.randrange(-1000, 1000)) / 8 if old else rng.uniform(-1e12, 1e12),
        "ratio": rng.randrange(-1000, 1000) / 4, "name": text(), "kind": rng.choice("ABC"),
        "at": datetime.datetime(1970, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=rng.randrange(-2**55, 2**55)),
        "price": Decimal(rng.randrange(-10**12 + 1, 10**12)).scaleb(-3),
        "day": datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randrange(-100_000, 100_000)),
        "labels": {text(): rng.choice([None, rng.randrange(-2**63, 2**63)]) for _ in range(rng.randrange(4))},
        "items": [item() for _ in range(rng.randrange(4))],
        "choice": rng.choice([None, text(), rng.randrange(-2**63, 2**63), ("Item", item())]),
    }
    if old:
        row["dropped"] = text()
    else:
        row["count"] = rng.choice([None, rng.randrange(-2**31, 2**31)])
        row["blob"] = rng.choice([None, rng.randbytes(rng.randrange(20))])
    return row


def as_arrow_python(row: dict) -> dict:
    """fastavro's reading of an Event as pyarrow gives it back: maps as pairs, the union as its members."""
    choice = row["choice"]
    members = {"member0": None, "member1": None, "member2": None}
    if isinstance(choice, tuple):
        members["member2"] = choice[1]
    elif isinstance(choice, str):
        members["member0"] = choice
    elif choice is not None:
        members["member1"] = choice
    return {**row, "labels": list(row["labels"].items()), "choice": members if choice is not None else None}


def test_thousands_of_generated_records_equal_fastavros_reading_field_by_field(decoder):
    rng = random.Random(26)
    writers = {1: GENERATED_OLD, 2: GENERATED}
    payloads = []
    for _ in range(3000):
        schema_id = rng.choice([1, 2])
        payloads.append(frame(schema_id, writers[schema_id], generated_record(rng, old=schema_id == 1)))
    values, reasons = decode(decoder, GENERATED, payloads, writers)
    assert reasons == [None] * len(payloads)
    reader = fastavro.parse_schema(GENERATED, _write_hint=False)
    parsed = {i: fastavro.parse_schema(schema, _write_hint=False) for i, schema in writers.items()}
    for payload, value in zip(payloads, values, strict=True):
        expected = fastavro.schemaless_reader(io.BytesIO(payload[5:]), parsed[int.from_bytes(payload[1:5], "big")],
                                              reader, return_named_type=True)
        expected = as_arrow_python(expected)
        assert value.keys() == expected.keys()
        for name in expected:
            assert value[name] == expected[name], (name, value, expected)


def test_the_native_decoder_is_refused_clearly_where_the_extension_lacks_it(monkeypatch):
    monkeypatch.setattr(native_extension, "EXTENSION", None)
    with pytest.raises(RuntimeError, match="the native Avro decoder is not available"):
        AvroDecoder(json.dumps(record("R", ("x", "int"))), native=True)


def test_a_record_failing_halfway_leaves_nothing_behind(decoder):
    """A record cut short inside a nested list fails alone: the rows before and after it are whole."""
    schema = record("R", ("id", "int"),
                    ("items", {"type": "array", "items": record("I", ("tags", {"type": "map", "values": "string"}))}),
                    ("after", "string"))
    rows = [{"id": i, "items": [{"tags": {"k": "v" * i}}, {"tags": {}}] * i, "after": f"end{i}"} for i in range(4)]
    payloads = [frame(1, schema, row) for row in rows]
    payloads[2] = payloads[2][:-9]  # inside the second item's map
    values, reasons = decode(decoder, schema, payloads, {1: schema})
    assert reasons[2].startswith("malformed Avro record: ") and reasons[:2] + reasons[3:] == [None, None, None]
    for row in rows:
        row["items"] = [{"tags": list(item["tags"].items())} for item in row["items"]]
    assert values == [rows[0], rows[1], None, rows[3]]


def test_a_slice_of_payloads_decodes_as_its_copy_and_no_payloads_as_nothing(decoder):
    schema = record("R", ("s", "string"))
    payloads = pa.array([frame(1, schema, {"s": str(i)}) if i % 3 else None for i in range(10)], pa.binary())
    avro = AvroDecoder(json.dumps(schema), native=decoder == "native")
    values, reasons = avro.decode(payloads.slice(3, 5), {1: RegistrySchema(1, "AVRO", json.dumps(schema))})
    assert values.to_pylist() == [None, {"s": "4"}, {"s": "5"}, None, {"s": "7"}]
    assert reasons.to_pylist() == [None] * 5
    values, reasons = avro.decode(pa.array([], pa.binary()), {1: RegistrySchema(1, "AVRO", json.dumps(schema))})
    assert (len(values), len(reasons), values.type) == (0, 0, avro.arrow_type)


def test_blocks_with_negative_counts_and_sizes_are_read_and_skipped(decoder):
    """Writers may prefix an array or map block with a negative count and the block's size in bytes (Java's
    blocking encoder does): read where the reader wants the items, skipped by its size where it does not."""
    writer = record("R", ("a", {"type": "array", "items": "int"}), ("gone", {"type": "map", "values": "string"}),
                    ("b", "int"))
    reader = record("R", ("a", {"type": "array", "items": "long"}), ("b", "int"))
    body = bytes([3, 4, 2, 4, 0,            # a: -2 items in 2 bytes, 1 and 2, end
                  1, 10, 2, ord("k"), 4, ord("x"), ord("y"), 0,  # gone: -1 entry in 5 bytes, "k" -> "xy", end
                  10])                      # b: 5
    payload = b"\x00\x00\x00\x00\x01" + body
    assert fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(writer)) == \
        {"a": [1, 2], "gone": {"k": "xy"}, "b": 5}  # the bytes are what the comments say
    values, reasons = decode(decoder, reader, [payload], {1: writer})
    assert reasons == [None]
    assert values == [{"a": [1, 2], "b": 5}]


def test_a_primitive_writer_schema_decodes_on_both_decoders(decoder):
    """fastavro parses the Avro schema "string" to the Python string 'string': the Python decoder once took that
    parsed writer for the reason it could not be used, and gave every such record null with the reason "string"."""
    values, reasons = decode(decoder, "string", [frame(7, "string", "hello"), frame(7, "string", "")], {7: "string"})
    assert values == ["hello", ""]
    assert reasons == [None, None]
    values, reasons = decode(decoder, "long", [frame(8, "int", 42), b"\x00\x00"], {8: "int"})  # int promoted to long
    assert values == [42, None]
    assert reasons == [None, "no schema-registry wire-format prefix"]
