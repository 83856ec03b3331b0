"""valueFormat=json's options refused before any data moves, each with the exact message (no broker, no Spark), and
the pure parts of the decoder: the DDL parser, Java's number text, Spark's date and timestamp strings."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkasource.errors import OptionError
from kafkasource.formats.plain_json.datetimes import parse_date, parse_timestamp, zone
from kafkasource.formats.plain_json.ddl import parse_ddl
from kafkasource.formats.plain_json.decode import PlainJsonDecoder
from kafkasource.formats.plain_json.options import PlainJsonOptions
from kafkasource.formats.plain_json.schema import read_schema
from kafkasource.formats.plain_json.text import Flt, Obj
from kafkasource.formats.plain_json.written import java_text
from kafkasource.options import parse_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "orders"}
DDL_HINT = 'write Spark DDL like "order_id BIGINT, customer STRING" or Spark\'s JSON form of a StructType'


@pytest.mark.parametrize("options, message", [
    ({"valueFormat": "json"},
     "option valueSchema is required with valueFormat=json: the schema to read the JSON with, as Spark DDL "
     "(\"order_id BIGINT, customer STRING\") or Spark's JSON form of a StructType (StructType.json()); for JSON "
     "Schema through the registry, set valueFormat=json-schema"),
    ({"keyFormat": "json", "valueFormat": "json", "valueSchema": "a INT"},
     "option keySchema is required with keyFormat=json: the schema to read the JSON with, as Spark DDL "
     "(\"order_id BIGINT, customer STRING\") or Spark's JSON form of a StructType (StructType.json()); for JSON "
     "Schema through the registry, set keyFormat=json-schema"),
    ({"valueFormat": "avro", "valueSchema": "a INT", "schema.registry.url": "http://127.0.0.1:9"},
     "option valueSchema is the schema of plain JSON; it has no effect with valueFormat=avro: set valueFormat=json "
     "to read plain JSON with it, or remove it"),
    ({"valueSchema": "a INT"},
     "option valueSchema has no effect while valueFormat and keyFormat are binary; set valueFormat or keyFormat "
     "(json, avro, protobuf or json-schema), or remove it"),
    ({"valueFormat": "json", "valueSchema": "order_id BIGNUM"},
     "option valueSchema cannot be read: it is not a Spark DDL schema: expected a type (bigint, binary, boolean, "
     "byte, date, double, float, int, integer, long, real, short, smallint, string, timestamp, timestamp_ltz, "
     f"timestamp_ntz, tinyint, decimal(p,s), array, map, struct) at 'BIGNUM'; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "a INT b STRING"},
     f"option valueSchema cannot be read: it is not a Spark DDL schema: expected a comma and the next field, or the "
     f"end of the schema at 'b'; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "a ARRAY<INT"},
     f"option valueSchema cannot be read: it is not a Spark DDL schema: expected '>' closing the array at the end; "
     f"{DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": '{"type": "struct"}'},
     "option valueSchema cannot be read: it starts with '{' and is not Spark's JSON form of a StructType "
     f"(KeyError: 'fields'); {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "MAP<INT, STRING>"},
     f"option valueSchema cannot be read: the schema is a map with int keys: JSON's are strings; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "m MAP<INT, STRING>"},
     f"option valueSchema cannot be read: field m is a map with int keys: JSON's are strings; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "a INT, a STRING"},
     f"option valueSchema cannot be read: field a is named twice; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "d DECIMAL(40,2)"},
     "option valueSchema cannot be read: it is not a Spark DDL schema: decimal(40,2) is not a Spark decimal: "
     f"precision 1 to 38, scale at most it; {DDL_HINT}"),
    ({"valueFormat": "json", "valueSchema": "a INT", "json.mode": "DROPMALFORMED"},
     "option json.mode must be PERMISSIVE or FAILFAST, got 'DROPMALFORMED' (DROPMALFORMED drops rows, which "
     "from_json does not do either)"),
    ({"valueFormat": "json", "valueSchema": "a INT", "json.allowComments": "yes"},
     "option json.allowComments must be true or false, got 'yes'"),
    ({"valueFormat": "json", "valueSchema": "a INT", "json.timeZone": "Mars/Olympus"},
     "option json.timeZone must be a region (Europe/Paris) or an offset (+01:00, UTC), got 'Mars/Olympus'"),
    ({"valueFormat": "json", "valueSchema": "a INT", "json.timestampFormat": "yyyy"},
     "option json.timestampFormat is not read by kafkasource's plain JSON: timestamps are read in Spark's default "
     "forms (ISO 8601 and the like); remove it, or read the field as STRING and convert it with "
     "to_timestamp(field, format)"),
    ({"valueFormat": "json", "valueSchema": "a INT", "schema.registry.url": "http://127.0.0.1:9"},
     "option schema.registry.url has no effect with json (plain JSON, read with the schema valueSchema or keySchema "
     "gives, needs no registry): remove it, or set valueFormat/keyFormat=json-schema to read JSON Schema through "
     "the registry"),
    ({"valueFormat": "json", "valueSchema": "a INT", "valueSubject": "orders-value"},
     "option valueSubject names a schema in the registry; valueFormat=json reads plain JSON with the schema "
     "valueSchema gives: remove valueSubject, or set valueFormat=json-schema to read JSON Schema through the "
     "registry"),
    ({"json.mode": "FAILFAST"},
     "option json.mode has no effect while valueFormat and keyFormat are binary; set valueFormat or keyFormat "
     "(json, avro, protobuf or json-schema), or remove it"),
])
def test_plain_json_options_are_refused_with_what_to_write(options, message):
    with pytest.raises(OptionError) as error:
        parse_options({**BASE, **options})
    assert str(error.value) == message


def test_an_unknown_json_option_suggests_the_closest():
    with pytest.raises(OptionError) as error:
        parse_options({**BASE, "valueFormat": "json", "valueSchema": "a INT", "json.timezon": "UTC"})
    assert str(error.value).startswith("unknown option 'json.timezon': did you mean json.timeZone? ")


def test_a_parsed_plain_json_decoding_needs_no_registry_and_gives_the_struct_column():
    parsed = parse_options({**BASE, "valueFormat": "JSON", "valueSchema": "order_id BIGINT, tags ARRAY<STRING>",
                            "json.mode": "failfast", "json.timeZone": "Europe/Paris", "onDecodeError": "keep"})
    assert parsed.decoding is not None and parsed.decoding.registry == {}
    (column,) = parsed.decoding.columns
    assert (column.format, column.reader.options.mode, column.reader.options.time_zone) == (
        "json", "FAILFAST", "Europe/Paris")
    fields = {f.name: str(f.type) for f in parsed.decoding.output_fields(False)}
    assert fields["value"] == "struct<order_id: int64, tags: list<item: string>>"
    assert (fields["value_raw"], fields["value_error"]) == ("binary", "string")


@pytest.mark.parametrize("ddl, simple", [
    ("a INT", "struct<a:int>"),
    ("`weird name` STRING NOT NULL COMMENT 'it\\'s', b BIGINT", "struct<weird name:string,b:bigint>"),
    ("STRUCT<a: DECIMAL, b: DEC(5), c: NUMERIC(7,3)>", "struct<a:decimal(10,0),b:decimal(5,0),c:decimal(7,3)>"),
    ("m MAP<STRING, ARRAY<STRUCT<x: SHORT, y: BYTE>>>", "struct<m:map<string,array<struct<x:smallint,y:tinyint>>>>"),
    ("t TIMESTAMP, n TIMESTAMP_NTZ, l TIMESTAMP_LTZ, d DATE, b BINARY, f REAL, g LONG",
     "struct<t:timestamp,n:timestamp_ntz,l:timestamp,d:date,b:binary,f:float,g:bigint>"),
    ("`a``b` int, e STRUCT<>", "struct<a`b:int,e:struct<>>"),
    ("ARRAY<STRUCT<a: INT>>", "array<struct<a:int>>"),
    ("map<string, array<double>>", "map<string,array<double>>"),
    ("array INT, map STRING", "struct<array:int,map:string>"),
])
def test_the_ddl_parser_reads_sparks_forms(ddl, simple):
    assert parse_ddl(ddl).simpleString() == simple


def test_a_schema_is_read_nullable_throughout_as_from_json_reads_it():
    schema = read_schema("a INT NOT NULL, s STRUCT<b: ARRAY<INT> NOT NULL>")
    assert [f.nullable for f in schema.fields] == [True, True]
    assert schema.fields[1].dataType.fields[0].nullable is True


@pytest.mark.parametrize("value, text", [
    ("1.50", "1.5"), ("1e3", "1000.0"), ("1e20", "1.0E20"), ("1E-5", "1.0E-5"), ("0.001", "0.001"),
    ("0.0001", "1.0E-4"), ("1234567.0", "1234567.0"), ("12345678.0", "1.2345678E7"), ("-0.0", "-0.0"),
    ("NaN", '"NaN"'), ("-Infinity", '"-Infinity"'),
])
def test_numbers_in_a_string_field_are_written_as_javas_double_to_string(value, text):
    assert java_text(Flt(value)) == text


def test_strings_in_a_string_field_keep_jacksons_escapes_and_pair_characters_past_the_bmp():
    assert java_text(Obj([("k", 'é"\\\x01\n😀')])) == '{"k":"é\\"\\\\\\u0001\\n\\uD83D\\uDE00"}'


def test_timestamps_and_dates_in_sparks_default_forms():
    utc = zone("UTC")
    assert parse_timestamp("2024-03-01T12:34:56.1234567Z", utc) == 1709296496123456
    assert parse_timestamp("2024-03-01 12:34:56 Europe/Paris", utc) == 1709292896000000
    assert parse_timestamp("2024-03-01T12:34:56GMT+01:00", utc) == 1709292896000000
    assert parse_timestamp("12:34:56", utc) is None
    assert (parse_date("2024-3-1T99"), parse_date("123"), parse_date("03/01/2024")) == (19783, 123, None)


def test_the_decoder_gives_permissive_rows_and_failfast_reasons():
    schema = read_schema("a INT, b STRING, _corrupt_record STRING")
    payloads = pa.array([b'{"a": "x", "b": 1.50}', b"oops", b"  ", None], pa.binary())
    values, reasons = PlainJsonDecoder(schema, PlainJsonOptions()).decode(payloads)
    assert values.to_pylist() == [{"a": None, "b": "1.5", "_corrupt_record": '{"a": "x", "b": 1.50}'},
                                  {"a": None, "b": None, "_corrupt_record": "oops"}, None, None]
    assert reasons.to_pylist() == [None, None, None, None]
    values, reasons = PlainJsonDecoder(schema, PlainJsonOptions(mode="FAILFAST")).decode(payloads)
    assert values.to_pylist() == [None, None, None, None]
    assert reasons.to_pylist() == [
        'the record does not fit the schema: field a: a string ("x") cannot be int',
        "malformed JSON: unexpected character 'o' at character 0", None, None]
