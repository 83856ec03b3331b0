"""The sink's valueFormat / keyFormat: a struct (or the schema's type) key/value column written in a schema registry's
wire format, symmetric with reading (kafkasource.formats.decoding).

On the driver, when the writer is built: the options are read, each column's writer schema is fetched (a subject's
version, the latest by default, or an id), or registered when the subject has none and auto.register.schemas is
true, and the column's Spark type is checked against it (kafkasource.formats.encoders): a ColumnError names every
field that does not fit before any data moves.

On the executors, an Arrow step before the producer: each record batch comes out with its key/value column
replaced by a binary column of payloads (a zero byte, the schema id in 4 bytes, for Protobuf the message indexes,
then the record), so whichever producer writes the batch sees binary columns only. An Avro column is encoded in
one call by the native encoder where the extension has it and it covers the schema and the column
(kafkasource.formats.avro_encoding: the same bytes and reasons as Python's), else row by row in Python. A row
that does not fit the schema fails the task, naming the column, the row and why, before any record of its batch
is handed on; with deadLetterTopic such rows go there instead, in the same batch (so through the same producer,
and under exactly-once in the same transaction): their formatted columns as JSON text, headers saying which
column and why.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa

from kafkasource.errors import ColumnError, EncodeError, OptionError
from kafkasource.formats import decoding
from kafkasource.formats.decoding import COLUMNS, SCHEMA_FORMS, SCHEMA_TYPES, Format, read_format, read_schema_choice
from kafkasource.formats.registry import RegistrySchema, registry_config, sink_schema
from kafkasource.options.values import check_topic_name, option_text, read_bool
from kafkasource.records.schema import HEADERS_ARROW_TYPE

# the sink's options for registry formats (the reader's, but for what to do with a record that does not decode);
# schema.registry.* besides
OPTIONS = tuple(o for o in decoding.OPTIONS if o != "onDecodeError") + ("auto.register.schemas", "deadLetterTopic")
# the headers of a dead-lettered record: kafkasource.error as the ingest job's dead-letter records carry it
ERROR, COLUMN, TOPIC = "kafkasource.error", "kafkasource.column", "kafkasource.topic"


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


def encode_batches(
    batches: Iterator[pa.RecordBatch],
    encoding: Encoding | None,
    topic: str | None,
    partition: int,
    native: bool = True,
) -> Iterator[pa.RecordBatch]:
    """A task's batches with key/value encoded (unchanged when `encoding` is None); `topic` is the topic option,
    `partition` the Spark partition, for messages; `native` as for encode_batch."""
    if encoding is None:
        yield from batches
        return
    seen = 0
    for batch in batches:
        yield encode_batch(batch, encoding, topic, partition, seen, native)
        seen += batch.num_rows


def encode_batch(
    batch: pa.RecordBatch,
    encoding: Encoding,
    topic: str | None,
    partition: int = 0,
    first_row: int = 0,
    native: bool = True,
) -> pa.RecordBatch:
    """The batch with its formatted columns encoded. `native`: Avro columns go through the native encoder where
    the extension has one and it covers the schema and column (kafkasource.formats.avro_encoding), else through
    the Python encoder; False: the Python encoder for every column."""
    from kafkasource.formats.encoders import RowError

    arrays = {name: batch.column(name) for name in batch.schema.names}
    bad: dict[int, list[tuple[str, str]]] = {}  # row -> (column, reason)
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
    if bad and encoding.dead_letter_topic is None:
        row, [(column_name, reason), *_] = next(iter(bad.items()))
        more = f" ({len(bad) - 1} more rows of this batch do not fit)" if len(bad) > 1 else ""
        raise EncodeError(
            f"cannot write row {first_row + row} of Spark partition {partition}: the {column_name} column does "
            f"not fit its writer schema: {reason}{more}. No record of its batch was written; fix the row, or set "
            "deadLetterTopic to write such rows there"
        )
    if encoding.dead_letter_topic is not None:
        _dead_letters(batch, arrays, bad, encoding, topic)
    return pa.RecordBatch.from_arrays(list(arrays.values()), names=list(arrays))


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


def _dead_letters(batch, arrays: dict, bad: dict, encoding: Encoding, topic: str | None) -> None:
    """Rows that do not fit go to the dead-letter topic: the topic column names it, their formatted columns hold
    JSON text, their headers gain the column and the reason, their partition is the partitioner's choice."""
    rows = batch.num_rows
    if not bad:  # one layout for every batch: a topic and a headers column
        if topic is not None or "topic" not in arrays:
            arrays["topic"] = pa.array([topic] * rows, pa.string())
        if "headers" not in arrays:
            arrays["headers"] = pa.nulls(rows, HEADERS_ARROW_TYPE)
        return
    topics = [topic] * rows if topic is not None else batch.column("topic").to_pylist()
    headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else [None] * rows
    for row, reasons in bad.items():
        added = [
            pair
            for column, reason in reasons
            for pair in ({"key": COLUMN, "value": column.encode()}, {"key": ERROR, "value": reason.encode()})
        ]
        headers[row] = [*(headers[row] or []), *added, {"key": TOPIC, "value": str(topics[row]).encode()}]
        topics[row] = encoding.dead_letter_topic
    for column in encoding.formatted:
        payloads = arrays[column].to_pylist()
        values = batch.column(column)
        for row in bad:
            value = values[row].as_py()
            payloads[row] = None if value is None else json_text(value).encode()
        arrays[column] = pa.array(payloads, pa.binary())
    if "partition" in arrays:
        partitions = arrays["partition"].to_pylist()
        for row in bad:
            partitions[row] = None
        arrays["partition"] = pa.array(partitions, pa.int32())
    arrays["topic"] = pa.array(topics, pa.string())
    arrays["headers"] = pa.array(headers, HEADERS_ARROW_TYPE)


# ---- the JSON text of a dead-lettered value, as to_json writes it ------------------------------------------


def json_text(value) -> str:
    """`value` (pyarrow's to_pylist form of a struct, array or scalar) as JSON text, close to Spark's to_json:
    null struct fields left out, maps as objects, binary as base64, dates and timestamps in ISO 8601, decimals
    as (double) numbers."""
    return json.dumps(_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map, as pyarrow gives it
            return {str(k): _jsonable(v) for k, v in value}
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value
