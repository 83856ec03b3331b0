"""The sink's valueFormat / keyFormat: a struct (or the schema's type) key/value column written in a schema registry's
wire format, symmetric with reading (kafkasource.formats.decoding).

On the driver, when the writer is built: the options are read, each column's writer schema is fetched (a subject's
version, the latest by default, or an id), or registered when the subject has none and auto.register.schemas is
true, and the column's Spark type is checked against it (kafkasource.formats.encoders): a ColumnError names every
field that does not fit before any data moves.

On the executors, an Arrow step before the producer (kafkasource.writing.encoded): each record batch's key/value
column is replaced by a binary column of payloads (a zero byte, the schema id in 4 bytes, for Protobuf the message
indexes, then the record), so whichever producer writes the batch sees binary columns only. An Avro column is
encoded in one call by the native encoder where the extension has it and it covers the schema and the column
(kafkasource.formats.avro_encoding: the same bytes and reasons as Python's), else row by row in Python. Each row
that does not fit the schema is named with its column and why, for the sink to fail the task or dead-letter the
row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from kafkasource.errors import ColumnError, OptionError
from kafkasource.formats import decoding
from kafkasource.formats.decoding import COLUMNS, SCHEMA_FORMS, SCHEMA_TYPES, Format, read_format, read_schema_choice
from kafkasource.formats.registry import RegistrySchema, registry_config, sink_schema
from kafkasource.options.values import check_topic_name, option_text, read_bool

# the sink's options for registry formats (the reader's, but for what to do with a record that does not decode);
# schema.registry.* besides
OPTIONS = tuple(o for o in decoding.OPTIONS if o != "onDecodeError") + ("auto.register.schemas", "deadLetterTopic")


@dataclass(frozen=True)
class ColumnEncoding:
    column: str
    format: Format
    schema: RegistrySchema
    message: str | None = None


@dataclass(frozen=True)
class Encoding:
    """What the executors need to encode: small and picklable (no clients)."""

    columns: tuple[ColumnEncoding, ...]
    dead_letter_topic: str | None
    registry: dict[str, object] = field(repr=False)  # may hold secrets: never print

    @property
    def formatted(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.columns)


# ---- on the driver -------------------------------------------------------------------------------------------


def parse_encoding(raw_options: Mapping[str, str], schema, topic: str | None) -> Encoding | None:
    """The encoding the sink's options ask for (None: key and value written as they are), its writer schemas
    fetched or registered now and the DataFrame's `schema` (a pyspark StructType) checked against them."""
    options = {str(k).lower(): str(v).strip() for k, v in raw_options.items()}
    formats = {column: read_format(options, column) for column in COLUMNS}
    encoded = [column for column in COLUMNS if formats[column] != "binary"]
    if not encoded:
        named = [n for n in OPTIONS[2:] if options.get(n.lower()) is not None]
        named += [n for n in options if n.startswith("schema.registry.")]
        if named:
            raise OptionError(
                f"option {named[0]} has no effect while valueFormat and keyFormat are binary; set "
                "valueFormat or keyFormat (avro, protobuf or json), or remove it"
            )
        return None
    auto_register = read_bool(options, "auto.register.schemas", False)
    dead_letter = option_text(options, "deadLetterTopic")
    if dead_letter is not None:
        check_topic_name("deadLetterTopic", dead_letter)
    types = {f.name: f.dataType for f in schema.fields}
    config = registry_config(options)
    columns = []
    for column in encoded:
        fmt = formats[column]
        if column not in types:
            raise ColumnError(
                f"option {column}Format is {fmt}, but the DataFrame has no {column} column; add one (a struct "
                f"of the schema's fields), or remove {column}Format"
            )
        message = options.get(f"{column}Message".lower())
        if message is not None and fmt != "protobuf":
            raise OptionError(
                f"option {column}Message names a Protobuf message; it has no effect with "
                f"{column}Format={fmt}; remove it"
            )
        written = _writer_schema(options, config, column, fmt, topic, types[column], auto_register)
        _check(column, fmt, written, message, types[column])
        columns.append(ColumnEncoding(column, fmt, written, message))
    return Encoding(tuple(columns), dead_letter, config)


def _writer_schema(options, config, column: str, fmt: Format, topic, data_type, auto_register: bool) -> RegistrySchema:
    schema_id, version = read_schema_choice(options, column, "writer")
    subject = options.get(f"{column}Subject".lower())
    if schema_id is None and subject is None:
        if topic is None:
            raise OptionError(
                f"option {column}Format takes its writer schema from the subject <topic>-{column} (the topic name "
                f"strategy), and no topic option names the topic: set the topic option, or {column}Subject "
                f"(the subject whose schema to write with) or {column}SchemaId"
            )
        subject = f"{topic}-{column}"

    def derive() -> str:
        from kafkasource.formats.derived_schemas import derive_schema
        from kafkasource.formats.encoders import SchemaUnfit

        try:
            return derive_schema(fmt, data_type, column)
        except SchemaUnfit as exc:
            raise ColumnError(f"auto.register.schemas cannot derive a schema for the {column} column: {exc}") from None

    written = sink_schema(
        config,
        column,
        subject,
        version,
        schema_id,
        SCHEMA_FORMS.get(fmt),
        SCHEMA_TYPES[fmt],
        derive if auto_register and version is None and schema_id is None else None,
    )
    if written.schema_type != SCHEMA_TYPES[fmt]:
        raise OptionError(
            f"{column}Format is {fmt}, but the writer schema (id {written.schema_id}) is of type "
            f"{written.schema_type}; set {column}Format to match it"
        )
    return written


def _check(column: str, fmt: Format, written: RegistrySchema, message: str | None, data_type) -> None:
    """The column's Spark type against the writer schema; ColumnError naming each field that does not fit."""
    from kafkasource.formats.encoders import SchemaUnfit, check_fit, first_problems

    which = f"the {column} column's writer schema (id {written.schema_id})"
    try:
        shape = encoder(column, fmt, written, message).shape
    except SchemaUnfit as exc:
        raise ColumnError(f"{which} cannot be written: {exc}") from None
    except ValueError as exc:  # the read side's refusals: a recursive type, an over-wide decimal, a bad message name
        raise OptionError(f"{which} cannot be read: {exc}") from None
    problems = check_fit(data_type, shape, column)
    if problems:
        raise ColumnError(
            f"the {column} column ({data_type.simpleString()}) does not fit its writer schema (id "
            f"{written.schema_id}, {fmt}): {first_problems(problems)}"
        )


# ---- on the executors ----------------------------------------------------------------------------------------

_ENCODERS: dict[tuple, object] = {}  # per process: each writer schema parsed once


def encoder(column: str, fmt: Format, schema: RegistrySchema, message: str | None):
    from kafkasource.formats.encoders import Encoder

    key = (column, fmt, schema, message)
    found = _ENCODERS.get(key)
    if found is None:
        found = _ENCODERS[key] = Encoder(fmt, schema, message, column)
    return found


# the rows of a batch that do not fit, by row: (column, reason) for each of its columns that does not
BadRows = dict[int, list[tuple[str, str]]]


def encode_columns(
    batch: pa.RecordBatch, encoding: Encoding, native: bool = True
) -> tuple[dict[str, pa.Array], BadRows]:
    """The batch's columns by name, its formatted ones encoded (a row that does not fit holds null there), and the
    rows that do not fit. `native`: Avro columns go through the native encoder where the extension has one and it
    covers the schema and column (kafkasource.formats.avro_encoding), else through the Python encoder; False: the
    Python encoder for every column."""
    from kafkasource.formats.encoders import RowError

    arrays = {name: batch.column(name) for name in batch.schema.names}
    bad: BadRows = {}
    for column in encoding.columns:
        chosen = encoder(column.column, column.format, column.schema, column.message)
        array = batch.column(column.column)
        encoded = _native_encode(column, array) if native and column.format == "avro" else None
        if encoded is not None:
            arrays[column.column], native_bad = encoded
            for row, reason in native_bad:
                bad.setdefault(row, []).append((column.column, reason or _python_reason(chosen, array[row].as_py())))
            continue
        payloads: list[bytes | None] = []
        for row, value in enumerate(array.to_pylist()):
            if value is None:  # a null key, a tombstone: null, as the built-in writes them
                payloads.append(None)
                continue
            try:
                payloads.append(chosen.encode(value))
            except RowError as exc:
                bad.setdefault(row, []).append((column.column, str(exc)))
                payloads.append(None)
        arrays[column.column] = pa.array(payloads, pa.binary())
    return arrays, bad


_NATIVE: dict[tuple, object] = {}  # per process: each writer schema's native plan made once (None: no extension)


def _native_encode(column: ColumnEncoding, array: pa.Array):
    """(payloads, [(row, reason or None)]) from the native Avro encoder; None where it is not built or does not
    cover the schema or this column's Arrow type (kafkasource.formats.avro_encoding says which)."""
    from kafkasource.formats import avro_encoding

    key = (column.column, column.schema)
    found = _NATIVE.get(key, False)
    if found is False:
        found = _NATIVE[key] = (
            avro_encoding.NativeAvroEncoder(column.schema, column.column) if avro_encoding.available() else None
        )
    if found is None:
        return None
    return found.encode(array)  # type: ignore[attr-defined]


def _python_reason(chosen, value) -> str:
    """The Python encoder's reason for a row the native encoder found unfit and left to Python to word."""
    from kafkasource.formats.encoders import RowError

    try:
        chosen.encode(value)
    except RowError as exc:
        return str(exc)
    raise RuntimeError("the native Avro encoder refused a row the Python encoder writes")  # never: both check alike
