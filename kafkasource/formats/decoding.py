"""valueFormat / keyFormat: keys and values in a schema registry's wire format, decoded into typed columns.

The options are read and the reader schemas fetched when the query is defined (Spark fixes a source's schema
then). On the executors each Arrow batch the read path produced gets its `key`/`value` column decoded, record
by record with the writer schema its id names (fetched once per process), into the reader schema's type. The
bytes stay beside it (`key_raw`, `value_raw`). A record that cannot be decoded fails the task, naming it
(onDecodeError=fail), or becomes a null value with the reason in `key_error`/`value_error` (onDecodeError=keep).
A registry that cannot be asked fails the task in both modes: an outage says nothing about the records; so does
a writer schema whose references the registry lost.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.errors import DecodeError, OptionError
from kafkasource.formats.registry import WRITER_SCHEMAS, RegistrySchema, UnknownSchemaId, reader_schema, registry_config
from kafkasource.formats.wire_format import describe_prefix, schema_ids
from kafkasource.planning.subscription import Subscription
from kafkasource.records.schema import arrow_schema
from kafkasource.runtime import native_extension

Format = Literal["binary", "avro", "protobuf", "json"]
FORMATS: tuple[Format, ...] = ("binary", "avro", "protobuf", "json")
OnDecodeError = Literal["fail", "keep"]
# the registry's name for each format's schemas
SCHEMA_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
# each format's decoder: a module with arrow_type(reader schema text, **settings) and a class taking (reader
# schema text, native, **settings) whose decode(payloads, writer RegistrySchemas by id) gives (values, reasons);
# settings: ColumnFormat.settings()
DECODERS = {
    "avro": ("kafkasource.formats.avro", "AvroDecoder"),
    "json": ("kafkasource.formats.json_schema", "JsonSchemaDecoder"),
    "protobuf": ("kafkasource.formats.protobuf", "ProtobufDecoder"),
}
# the form each format's schemas are asked for: Protobuf's serialized (a descriptor), not .proto text
SCHEMA_FORMS = {"protobuf": "serialized"}
COLUMNS = ("key", "value")
OPTIONS = (
    "valueFormat",
    "keyFormat",
    "valueSubject",
    "keySubject",
    "valueSchemaVersion",
    "keySchemaVersion",
    "valueSchemaId",
    "keySchemaId",
    "valueMessage",
    "keyMessage",
    "onDecodeError",
)


@dataclass(frozen=True)
class ColumnFormat:
    """How one column (key or value) is decoded: its format and the reader schema fixed at definition."""

    column: str
    format: Format
    reader: RegistrySchema
    message: str | None = None  # protobuf: the reader message (None: the file's first)

    def settings(self) -> dict:
        """What the format's decoder takes besides the reader schema: the schemas it references, and the reader
        message (Protobuf)."""
        if self.format == "protobuf":
            return {"references": self.reader.references, "message": self.message}
        return {"references": self.reader.references}

    def arrow_type(self) -> pa.DataType:
        return _arrow_type(self)


@functools.lru_cache(maxsize=64)
def _arrow_type(column: ColumnFormat) -> pa.DataType:
    """The column's type, from its reader schema parsed once per process: every decoded batch's schema asks for it
    (the decoder parses the schema once more, for itself)."""
    return _decoder_module(column.format).arrow_type(column.reader.text, **column.settings())


@dataclass(frozen=True)
class Decoding:
    """Everything the executors need to decode: small and picklable (no clients)."""

    columns: tuple[ColumnFormat, ...]
    on_error: OnDecodeError
    native: bool  # the Avro decoder in the native extension (the read path's choice), else the Python one
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


# ---- options, on the driver --------------------------------------------------------------------------------


def read_format(options: Mapping[str, str], column: str) -> Format:
    raw = options.get(f"{column}Format".lower())
    if raw is None:
        return "binary"
    chosen = raw.lower()
    if chosen not in FORMATS:
        raise OptionError(
            f"option {column}Format must be one of {', '.join(FORMATS)} (json: JSON Schema in the "
            f"registry's wire format), got {raw[:40]!r}"
        )
    return chosen


def read_schema_choice(options: Mapping[str, str], column: str, role: str) -> tuple[int | None, int | None]:
    """A column's {column}SchemaId and {column}SchemaVersion (None: latest), the id refused beside a subject or a
    version; `role` (reader, writer) names the schema in the message."""
    schema_id = read_schema_number(options, f"{column}SchemaId")
    version_raw = options.get(f"{column}SchemaVersion".lower())
    if schema_id is not None and (version_raw is not None or options.get(f"{column}Subject".lower()) is not None):
        raise OptionError(
            f"option {column}SchemaId names the {role} schema by itself; remove {column}Subject "
            f"and {column}SchemaVersion, or {column}SchemaId"
        )
    if version_raw is None or version_raw.lower() == "latest":
        return schema_id, None
    return schema_id, read_schema_number(options, f"{column}SchemaVersion")


def read_schema_number(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 2**31:
        raise OptionError(f"option {name} must be a positive whole number, got {raw[:40]!r}")
    return int(raw)


def _subject(options: Mapping[str, str], column: str, subscription: Subscription) -> str | None:
    subject = options.get(f"{column}Subject".lower())
    if subject is not None:
        return subject
    if options.get(f"{column}SchemaId".lower()) is not None:
        return None
    topics = subscription.named_topics()  # subscribe and assign name theirs; a pattern names none
    if len(topics) != 1:
        raise OptionError(
            f"option {column}Format reads every topic with one reader schema, and "
            f"{subscription.describe()} does not name exactly one topic to take it from "
            f"(<topic>-{column}): set {column}Subject (the subject whose schema to read with) or "
            f"{column}SchemaId"
        )
    return f"{topics[0]}-{column}"


def parse_decoding(options: Mapping[str, str], subscription: Subscription, read_path: str) -> Decoding | None:
    """The decoding the options ask for (None: key and value stay binary), its reader schemas fetched now.
    `options` holds the options given a value: lower-case names, values stripped (as options.parse_options
    reads them)."""
    formats = {column: read_format(options, column) for column in COLUMNS}
    on_error_raw = options.get("onDecodeError".lower()) or "fail"
    on_error: OnDecodeError
    if on_error_raw.lower() == "fail":
        on_error = "fail"
    elif on_error_raw.lower() == "keep":
        on_error = "keep"
    else:
        raise OptionError(f"option onDecodeError must be fail or keep, got {on_error_raw[:40]!r}")
    decoded = [column for column in COLUMNS if formats[column] != "binary"]
    registry_options = [name for name in options if name.startswith("schema.registry.")]
    if not decoded:
        named = [name for name in OPTIONS[2:] if options.get(name.lower()) is not None] + registry_options
        if named:
            raise OptionError(
                f"option {named[0]} has no effect while valueFormat and keyFormat are binary; set "
                "valueFormat or keyFormat (avro, protobuf or json), or remove it"
            )
        return None
    config = registry_config(options)
    columns: list[ColumnFormat] = []
    subjects: dict[str, str | None] = {}
    for column in decoded:
        schema_id, version = read_schema_choice(options, column, "reader")
        subject = _subject(options, column, subscription)
        reader = reader_schema(config, column, subject, version, schema_id, SCHEMA_FORMS.get(formats[column]))
        expected = SCHEMA_TYPES[formats[column]]
        if reader.schema_type != expected:
            raise OptionError(
                f"{column}Format is {formats[column]}, but the reader schema (id {reader.schema_id}) "
                f"is of type {reader.schema_type}; set {column}Format to match it"
            )
        message = options.get(f"{column}Message".lower())
        if message is not None and formats[column] != "protobuf":
            raise OptionError(
                f"option {column}Message names a Protobuf message; it has no effect with "
                f"{column}Format={formats[column]}; remove it"
            )
        columns.append(ColumnFormat(column, formats[column], reader, message))
        subjects[column] = subject
    for chosen in columns:
        try:
            chosen.arrow_type()
        except Exception as exc:
            raise OptionError(
                f"the {chosen.column} column's reader schema (id {chosen.reader.schema_id}) cannot be read: {exc}"
            ) from None
    native_avro = read_path != "python" and native_extension.avro_decoder_available()
    for chosen in columns:
        if chosen.format == "avro" and not native_avro:
            _python_avro_reader(chosen, subjects[chosen.column])
    return Decoding(tuple(columns), on_error, native_avro, config)


def _python_avro_reader(column: ColumnFormat, subject: str | None) -> None:
    """Refuses now, naming the schema, a reader schema the Python Avro decoder cannot read (fastavro refuses a
    few that our parser, and so the native decoder, reads), rather than on every executor's first batch."""
    from kafkasource.formats.avro import AvroDecoder
    from kafkasource.formats.avro_schema import SchemaError

    try:
        AvroDecoder(column.reader.text, native=False, references=column.reader.references)
    except SchemaError as exc:
        named = f"id {column.reader.schema_id}" + (f", subject {subject}" if subject else "")
        raise OptionError(
            f"the {column.column} column's reader schema ({named}) cannot be read by the Python Avro decoder: "
            f"{exc}; the native Avro decoder reads it (readPath auto or native, kafkasource._native built)"
        ) from None


# ---- decoding, on the executors ------------------------------------------------------------------------------


def _decoder_module(fmt: Format):
    import importlib

    return importlib.import_module(DECODERS[fmt][0])


_DECODERS: dict[tuple, object] = {}  # per process: a decoder keeps what it learnt of each writer schema


def _decoder(column: ColumnFormat, native_decoder: bool):
    key = (column.format, column.reader, native_decoder, column.message)
    found = _DECODERS.get(key)
    if found is None:
        decoder_class = getattr(_decoder_module(column.format), DECODERS[column.format][1])
        found = _DECODERS[key] = decoder_class(
            column.reader.text, native_decoder and column.format == "avro", **column.settings()
        )
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
        writers = {}
        for schema_id in schema_ids(payloads):
            try:
                writers[schema_id] = WRITER_SCHEMAS.get(decoding.registry, schema_id, SCHEMA_FORMS.get(column.format))
            except UnknownSchemaId:
                continue  # the decoder says "unknown schema id" for its records
        values, reasons = _decoder(column, decoding.native).decode(payloads, writers)
        if reasons.null_count < len(reasons):
            if decoding.on_error == "fail":
                raise _decode_error(batch, column.column, payloads, reasons)
        columns[column.column] = values
        extra.append(payloads)
        if decoding.on_error == "keep":
            extra.append(reasons)
    arrays = [columns[name] for name in batch.schema.names] + extra
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(decoding.output_fields(include_headers)))


def _decode_error(batch: pa.RecordBatch, column: str, payloads: pa.Array, reasons: pa.Array) -> DecodeError:
    row = pc.index(pc.is_valid(reasons), True).as_py()
    topic = batch.column("topic")[row].as_py()
    partition = batch.column("partition")[row].as_py()
    offset = batch.column("offset")[row].as_py()
    bad = len(reasons) - reasons.null_count
    more = f" ({bad - 1} more in this batch)" if bad > 1 else ""
    return DecodeError(
        f"cannot decode the {column} of the record at {topic}-{partition} offset {offset} "
        f"({describe_prefix(payloads[row].as_py())}): {reasons[row].as_py()}{more}. Set "
        "onDecodeError=keep to keep such records as a null "
        f"{column} with their bytes ({column}_raw) and the reason ({column}_error)"
    )
