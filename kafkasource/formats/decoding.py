"""valueFormat / keyFormat: keys and values in a schema registry's wire format, or plain JSON with a schema the options
give (valueFormat=json, valueSchema), decoded into typed columns.

The options are read (kafkasource.options.formats) and the reader schemas fetched when the query is defined (Spark
fixes a source's schema then). On the executors each Arrow batch the read path produced gets its `key`/`value`
column decoded, record by record with the writer schema its id names (fetched once per process), into the reader
schema's type, by the decoder of its format (kafkasource.formats.table). The bytes stay beside it (`key_raw`,
`value_raw`). A record that cannot be decoded fails the task, naming it (onDecodeError=fail), or becomes a null
value with the reason in `key_error`/`value_error` (onDecodeError=keep). A registry that cannot be asked fails the
task in both modes: an outage says nothing about the records; so does a writer schema whose references the
registry lost. Plain JSON needs no registry: its schema travels in the options (kafkasource.formats.plain_json).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.errors import DecodeError, OptionError
from kafkasource.formats.plain_json.options import PlainJsonOptions
from kafkasource.formats.registry import WRITER_SCHEMAS, RegistrySchema, SchemaChoice, UnknownSchemaId, reader_schema
from kafkasource.formats.table import FORMATS, Decoder, Format
from kafkasource.formats.wire_format import describe_prefix, schema_ids
from kafkasource.records.schema import arrow_schema
from kafkasource.runtime import native_extension

OnDecodeError = Literal["fail", "keep"]


@dataclass(frozen=True)
class PlainJson:
    """valueFormat=json: the struct to read into, in Spark's JSON form (what the executors parse without a JVM), and
    the json.* options."""

    schema_json: str
    options: PlainJsonOptions


@dataclass(frozen=True)
class ColumnFormat:
    """How one column (key or value) is decoded: its format and the reader schema fixed at definition (a registry's
    schema, or plain JSON's)."""

    column: str
    format: Format
    reader: RegistrySchema | PlainJson
    message: str | None = None  # protobuf: the reader message (None: the file's first)

    @property
    def registry(self) -> bool:
        return self.format in FORMATS

    def arrow_type(self) -> pa.DataType:
        return _arrow_type(self)


@functools.lru_cache(maxsize=64)
def _arrow_type(column: ColumnFormat) -> pa.DataType:
    """The column's type, from its reader schema parsed once per process: every decoded batch's schema asks for it
    (the decoder parses the schema once more, for itself)."""
    if isinstance(column.reader, PlainJson):
        from kafkasource.formats.plain_json.schema import arrow_type

        return arrow_type(_plain_schema(column.reader))
    return FORMATS[column.format].code.arrow_type(column.reader, column.message)


def _plain_schema(reader: PlainJson):
    from kafkasource.formats.plain_json.schema import parse_json_type

    return parse_json_type(reader.schema_json)


@dataclass(frozen=True)
class Decoding:
    """Everything the executors need to decode: small and picklable (no clients)."""

    columns: tuple[ColumnFormat, ...]
    on_error: OnDecodeError
    native: bool  # the native extension's decoders (Avro, plain JSON): the read path's choice, else the Python ones
    registry: dict[str, object] = field(repr=False)  # may hold secrets: never print

    def output_fields(self, include_headers: bool) -> list[pa.Field]:
        decoded = {c.column: c for c in self.columns}
        fields = [
            pa.field(f.name, decoded[f.name].arrow_type()) if f.name in decoded else f
            for f in arrow_schema(include_headers)
        ]
        for column in self.columns:
            fields.append(pa.field(f"{column.column}_raw", pa.binary()))
            if self.on_error == "keep":
                fields.append(pa.field(f"{column.column}_error", pa.string()))
        return fields


def output_schema(decoding: Decoding | None, include_headers: bool):
    """The source's Spark schema: Spark's Kafka columns, key/value typed where decoded, and their bytes and
    reasons."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from kafkasource.records.schema import schema_ddl

    if decoding is None:
        return schema_ddl(include_headers)
    # explicit: pyspark 4.2 made True the default, 4.0 and 4.1 default to False (a zone-less Arrow timestamp, such as
    # Avro's local-timestamp-millis, would read as a zoned timestamp there)
    return from_arrow_schema(pa.schema(decoding.output_fields(include_headers)), prefer_timestamp_ntz=True)


# ---- the reader schemas, on the driver ------------------------------------------------------------------------


def fetch_reader(config: Mapping[str, object], column: str, fmt: Format, choice: SchemaChoice) -> RegistrySchema:
    """The column's reader schema, as the options name it, refused if it is of another format."""
    chosen = FORMATS[fmt]
    reader = reader_schema(config, column, choice.subject, choice.version, choice.schema_id, chosen.schema_form)
    if reader.schema_type != chosen.schema_type:
        raise OptionError(
            f"{column}Format is {fmt}, but the reader schema (id {reader.schema_id}) "
            f"is of type {reader.schema_type}; set {column}Format to match it"
        )
    return reader


def checked_decoding(
    columns: tuple[ColumnFormat, ...],
    subjects: Mapping[str, str | None],
    on_error: OnDecodeError,
    config: dict[str, object],
    read_path: str,
) -> Decoding:
    """The decoding of `columns`, each reader schema refused now, naming it, if it cannot be read (by the decoder
    the read path runs), rather than on every executor's first batch."""
    for chosen in columns:
        try:
            chosen.arrow_type()
        except Exception as exc:
            named = f" (id {chosen.reader.schema_id})" if isinstance(chosen.reader, RegistrySchema) else ""
            raise OptionError(f"the {chosen.column} column's reader schema{named} cannot be read: {exc}") from None
    native_avro = read_path != "python" and native_extension.avro_decoder_available()
    for chosen in columns:
        if chosen.registry:
            check_reader(chosen, subjects[chosen.column], native_avro)
    return Decoding(columns, on_error, native_avro, config)


def check_reader(column: ColumnFormat, subject: str | None, native: bool = False) -> None:
    """Refuses a reader schema the decoder of its format cannot read (the Python Avro decoder refuses a few that
    fastavro refuses and our parser, and so the native decoder, reads), naming the schema."""
    assert isinstance(column.reader, RegistrySchema)
    why = FORMATS[column.format].code.reader_refusal(column.reader, native)
    if why is not None:
        named = f"id {column.reader.schema_id}" + (f", subject {subject}" if subject else "")
        raise OptionError(f"the {column.column} column's reader schema ({named}) cannot be read by {why}")


# ---- decoding, on the executors ------------------------------------------------------------------------------


_DECODERS: dict[tuple, Decoder] = {}  # per process: a decoder keeps what it learnt of each writer schema


def _decoder(column: ColumnFormat, native_decoder: bool) -> Decoder:
    key = (column.format, column.reader, native_decoder, column.message)
    found = _DECODERS.get(key)
    if found is None:
        if isinstance(column.reader, PlainJson) and native_decoder and native_extension.has("json_decoder"):
            from kafkasource.formats.plain_json.native_decode import NativePlainJsonDecoder

            found = NativePlainJsonDecoder(_plain_schema(column.reader), column.reader.options)
        elif isinstance(column.reader, PlainJson):
            from kafkasource.formats.plain_json.decode import PlainJsonDecoder

            found = PlainJsonDecoder(_plain_schema(column.reader), column.reader.options)
        else:
            found = FORMATS[column.format].code.decoder(column.reader, column.message, native_decoder)
        _DECODERS[key] = found
    return found


def decode_batches(batches: Iterator[pa.RecordBatch], decoding: Decoding | None) -> Iterator[pa.RecordBatch]:
    """The read path's batches with key/value decoded as `decoding` says (unchanged when None)."""
    if decoding is None:
        yield from batches
        return
    for batch in batches:
        yield decode_batch(batch, decoding)


def decode_batch(batch: pa.RecordBatch, decoding: Decoding) -> pa.RecordBatch:
    include_headers = "headers" in batch.schema.names
    columns = {name: batch.column(name) for name in batch.schema.names}
    extra = []
    for column in decoding.columns:
        payloads = columns[column.column]
        writers: dict[int, RegistrySchema] = {}
        form = FORMATS[column.format].schema_form if column.registry else None
        for schema_id in schema_ids(payloads) if column.registry else ():
            try:
                writers[schema_id] = WRITER_SCHEMAS.get(decoding.registry, schema_id, form)
            except UnknownSchemaId:
                continue  # the decoder says "unknown schema id" for its records
        values, reasons = _decoder(column, decoding.native).decode(payloads, writers)
        if reasons.null_count < len(reasons):
            if decoding.on_error == "fail":
                raise _decode_error(batch, column, payloads, reasons)
        columns[column.column] = values
        extra.append(payloads)
        if decoding.on_error == "keep":
            extra.append(reasons)
    arrays = [columns[name] for name in batch.schema.names] + extra
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(decoding.output_fields(include_headers)))


def _decode_error(batch: pa.RecordBatch, chosen: ColumnFormat, payloads: pa.Array, reasons: pa.Array) -> DecodeError:
    column = chosen.column
    row = pc.index(pc.is_valid(reasons), True).as_py()
    topic = batch.column("topic")[row].as_py()
    partition = batch.column("partition")[row].as_py()
    offset = batch.column("offset")[row].as_py()
    bad = len(reasons) - reasons.null_count
    more = f" ({bad - 1} more in this batch)" if bad > 1 else ""
    prefix = f" ({describe_prefix(payloads[row].as_py())})" if chosen.registry else " (json.mode=FAILFAST)"
    return DecodeError(
        f"cannot decode the {column} of the record at {topic}-{partition} offset {offset}"
        f"{prefix}: {reasons[row].as_py()}{more}. Set "
        "onDecodeError=keep to keep such records as a null "
        f"{column} with their bytes ({column}_raw) and the reason ({column}_error)"
    )
