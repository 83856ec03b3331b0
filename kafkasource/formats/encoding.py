"""The sink's valueFormat / keyFormat: a struct (or the schema's type) key/value column written in a schema registry's
wire format, symmetric with reading (kafkasource.formats.decoding).

On the driver, when the writer is built: the options are read (kafkasource.options.formats), each column's writer
schema is fetched (a subject's version, the latest by default, or an id), or registered when the subject has none
and auto.register.schemas is true, and the column's Spark type is checked against it (kafkasource.formats.shapes):
a ColumnError names every field that does not fit before any data moves.

On the executors, an Arrow step before the producer (kafkasource.writing.encoded): each record batch's key/value
column is replaced by a binary column of payloads (a zero byte, the schema id in 4 bytes, for Protobuf the message
indexes, then the record), so whichever producer writes the batch sees binary columns only. An Avro column is
encoded in one call by the native encoder where the extension has it and it covers the schema and the column
(kafkasource.formats.avro.native_encode: the same bytes and reasons as Python's), else row by row in Python. Each
row that does not fit the schema is named with its column and why, for the sink to fail the task or dead-letter
the row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from kafkasource.errors import ColumnError, OptionError
from kafkasource.formats.plain_json.options import PlainJsonWriting
from kafkasource.formats.registry import RegistrySchema, SchemaChoice, sink_schema
from kafkasource.formats.shapes import RowError, SchemaUnfit, check_fit, convert, first_problems
from kafkasource.formats.table import FORMATS, Format, NativeEncoder


@dataclass(frozen=True)
class ColumnEncoding:
    column: str
    format: Format
    schema: RegistrySchema | PlainJsonWriting  # a registry format's writer schema, or how plain JSON is written
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


def writer_column(
    config: Mapping[str, object],
    column: str,
    fmt: Format,
    choice: SchemaChoice,
    message: str | None,
    data_type,
    auto_register: bool,
) -> ColumnEncoding:
    """A column's encoding: its writer schema fetched or registered now, and the DataFrame's type of the column (a
    pyspark DataType) checked against it."""
    written = _writer_schema(config, column, fmt, choice, data_type, auto_register)
    _check(column, fmt, written, message, data_type)
    return ColumnEncoding(column, fmt, written, message)


def _writer_schema(
    config, column: str, fmt: Format, choice: SchemaChoice, data_type, auto_register: bool
) -> RegistrySchema:
    chosen = FORMATS[fmt]

    def derive() -> str:
        try:
            return chosen.code.derive(data_type, column)
        except SchemaUnfit as exc:
            raise ColumnError(f"auto.register.schemas cannot derive a schema for the {column} column: {exc}") from None

    written = sink_schema(
        config,
        column,
        choice.subject,
        choice.version,
        choice.schema_id,
        chosen.schema_form,
        chosen.schema_type,
        derive if auto_register and choice.version is None and choice.schema_id is None else None,
    )
    if written.schema_type != chosen.schema_type:
        raise OptionError(
            f"{column}Format is {fmt}, but the writer schema (id {written.schema_id}) is of type "
            f"{written.schema_type}; set {column}Format to match it"
        )
    return written


def _check(column: str, fmt: Format, written: RegistrySchema, message: str | None, data_type) -> None:
    """The column's Spark type against the writer schema; ColumnError naming each field that does not fit."""
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


class Encoder:
    """Encodes one column's Python values (pyarrow's to_pylist) into the wire format of one writer schema."""

    def __init__(self, fmt: Format, schema: RegistrySchema, message: str | None, column: str):
        self.column = column
        code = FORMATS[fmt].code
        self.shape = code.shape(schema, message)
        self.write: Callable[[object], bytes] = code.writer(schema, self.shape, column)

    def encode(self, value) -> bytes:
        """The payload of one non-null value; RowError where it does not fit the schema."""
        try:
            return self.write(convert(value, self.shape, self.column))
        except RowError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:  # fastavro's and protobuf's own refusals
            raise RowError(self.column, f"{type(exc).__name__}: {exc}") from None


_ENCODERS: dict[tuple, Encoder] = {}  # per process: each writer schema parsed once


def encoder(column: str, fmt: Format, schema: RegistrySchema, message: str | None) -> Encoder:
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
    rows that do not fit. `native`: a column goes through its format's native encoder where the extension has one
    and it covers the schema and column (kafkasource.formats.avro.native_encode), else through the Python encoder;
    False: the Python encoder for every column."""
    arrays = {name: batch.column(name) for name in batch.schema.names}
    bad: BadRows = {}
    for column in encoding.columns:
        if isinstance(column.schema, PlainJsonWriting):  # every struct has its JSON text: no row is unfit
            arrays[column.column] = _plain_json(batch.column(column.column), column.schema, native)
            continue
        chosen = encoder(column.column, column.format, column.schema, column.message)
        array = batch.column(column.column)
        encoded = _native_encode(column, column.schema, array) if native else None
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


def _plain_json(array: pa.Array, writing: PlainJsonWriting, native: bool) -> pa.Array:
    from kafkasource.formats.plain_json import native_encode

    encode = native_encode.encode if native else native_encode.encode_python
    return encode(array, writing.time_zone, writing.ignore_null_fields)


_NATIVE: dict[tuple, NativeEncoder | None] = {}  # per process: each writer schema's native plan made once


def _native_encode(column: ColumnEncoding, schema: RegistrySchema, array: pa.Array):
    """(payloads, [(row, reason or None)]) from the format's native encoder; None where there is none, or it does
    not cover the schema or this column's Arrow type (kafkasource.formats.avro.native_encode says which)."""
    key = (column.column, schema)
    if key not in _NATIVE:
        _NATIVE[key] = FORMATS[column.format].code.native_encoder(schema, column.column)
    found = _NATIVE[key]
    if found is None:
        return None
    return found.encode(array)


def _python_reason(chosen: Encoder, value) -> str:
    """The Python encoder's reason for a row the native encoder found unfit and left to Python to word."""
    try:
        chosen.encode(value)
    except RowError as exc:
        return str(exc)
    raise RuntimeError("the native Avro encoder refused a row the Python encoder writes")  # never: both check alike
