"""The sink's valueFormat=json / keyFormat=json before any data moves: what the driver refuses, in the error's words,
and plain JSON needing no schema registry."""

from __future__ import annotations

import pytest
from pyspark.sql.types import BinaryType, IntegerType, MapType, StringType, StructField, StructType

from kafkasource.errors import ColumnError, OptionError
from kafkasource.options.sink import parse_sink_options


def sink_options(**options: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t", **options}


def schema_of(value_type) -> StructType:
    return StructType([StructField("value", value_type)])


STRUCT = StructType([StructField("a", IntegerType())])


@pytest.mark.parametrize(("options", "schema", "error", "message"), [
    ({"valueFormat": "json"}, schema_of(StringType()), ColumnError,
     "option valueFormat=json writes a struct value column as JSON, but value is string: make it a struct "
     "(struct(...) AS value), or remove valueFormat to write a string or binary value as it is"),
    ({"valueFormat": "json"}, schema_of(StructType([StructField("m", MapType(BinaryType(), IntegerType()))])),
     ColumnError, "option valueFormat=json cannot write value.m, a map with binary keys; convert it in Spark first "
     "(CAST AS STRING), or write to_json(...) AS value and remove valueFormat"),
    ({"keyFormat": "json"}, schema_of(STRUCT), ColumnError,
     "option keyFormat is json, but the DataFrame has no key column; add one (a struct of the fields to write as "
     "JSON), or remove keyFormat"),
    ({"valueFormat": "json", "valueSubject": "orders-value"}, schema_of(STRUCT), OptionError,
     "option valueSubject names a schema in the registry; valueFormat=json writes the value struct as plain JSON "
     "(to_json's text): remove valueSubject, or set valueFormat=json-schema to write JSON Schema through the "
     "registry"),
    ({"valueFormat": "json", "json.timeZone": "Mars/Olympus"}, schema_of(STRUCT), OptionError,
     "option json.timeZone must be a region (Europe/Paris) or an offset (+01:00, UTC), got 'Mars/Olympus'"),
    ({"valueFormat": "json", "json.ignoreNullFields": "yes"}, schema_of(STRUCT), OptionError,
     "option json.ignoreNullFields must be true or false, got 'yes'"),
    ({"json.ignoreNullFields": "false"}, schema_of(STRUCT), OptionError,
     "option json.ignoreNullFields has no effect while valueFormat and keyFormat are binary; set valueFormat or "
     "keyFormat (json, avro, protobuf or json-schema), or remove it"),
], ids=["string-value", "binary-map-keys", "no-key-column", "registry-option", "unknown-zone", "not-a-boolean",
        "json-option-without-json"])
def test_the_driver_refuses_what_it_cannot_write_as_json_naming_the_option(options, schema, error, message):
    with pytest.raises(error) as refused:
        parse_sink_options(sink_options(**options), streaming=False, schema=schema)
    assert str(refused.value) == message


def test_plain_json_on_the_sink_needs_no_registry():
    """valueFormat=json without schema.registry.url: the encoding is the column's, with the options' zone."""
    parsed = parse_sink_options(sink_options(valueFormat="json", **{"json.timeZone": "+05:30"}), streaming=False,
                                schema=schema_of(STRUCT))
    assert parsed.encoding is not None
    (column,) = parsed.encoding.columns
    assert (column.column, column.format, column.schema.time_zone, column.schema.ignore_null_fields) == \
        ("value", "json", "+05:30", True)
    assert parsed.encoding.registry == {}
