"""Avro records in the schema-registry wire format to an Arrow column of the reader schema's type.

A payload is a magic byte 0, the writer schema's id (4 bytes, big-endian) and the record in Avro binary. Each
record is decoded with its own writer schema and resolved into the one reader schema (kafkasource.formats.avro.schema
says by which rules, and which Arrow type each Avro type becomes; avro/resolution.py holds the plans). A record that
cannot be decoded is a null value with the reason beside it; nothing is dropped.

Two decoders give the same values and reasons: the native one (kafkasource._native, Rust) appends straight
into Arrow buffers without a Python object per record; the Python one, the fallback, decodes with fastavro and
converts its Python objects. Only the wording after "malformed Avro record: " may differ between them (each
describes the damage in its own words). Two differences are known: in a union holding both int and long (or
float and double) beside a third type, fastavro does not say which of the two branches a number was written
as, so the Python decoder fills the first of them; and a date or timestamp outside Python's years 1 to 9999 is
a malformed record to the Python decoder (fastavro makes Python dates of them), a value to the native one.
A reader default fills a field the writer lacks with the same value on both: each reads the Avro binary that
avro/resolution.py writes of it (fastavro on its own would hand over the default's JSON as it stands).

The Python decoder reads with fastavro's parsed form of the schemas, and fastavro refuses a few schemas our
parser reads (a named type defined twice, an enum symbol that is not a name, a decimal wider than its fixed): such
a reader schema is refused when the query is defined (kafkasource.formats.decoding), and such a writer schema is
the reason of its records; the native decoder reads both.
"""

from __future__ import annotations

import datetime
import io
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa

from kafkasource.formats.avro import resolution as avro_resolution
from kafkasource.formats.avro import schema as avro_schema
from kafkasource.formats.avro.schema import AvroJson, AvroSchema, Node, SchemaError, Unresolvable
from kafkasource.formats.each_record import Unusable, decode_each
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import as_binary, guid_reasons, unresolvable_reason
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_arrow import column_spec, decoded_array

if TYPE_CHECKING:
    from kafkasource import _native


def arrow_type(reader_schema: str, references: Sequence[tuple[str, str]] = ()) -> pa.DataType:
    """The Arrow type Spark's from_avro gives records of this Avro schema (JSON text), which may use the named
    types of the schemas it references."""
    return avro_schema.arrow_type(avro_schema.parse(reader_schema, references).node)


class AvroDecoder:
    """Decodes payloads into `arrow_type`, the reader schema's Arrow type. Writer schemas are parsed and resolved
    once per id and kept."""

    def __init__(self, reader_schema: str, native: bool, references: Sequence[tuple[str, str]] = ()):
        self.reader = avro_schema.parse(reader_schema, references)
        self.arrow_type = avro_schema.arrow_type(self.reader.node)
        if native and not native_extension.avro_decoder_available():
            raise RuntimeError(
                "the native Avro decoder is not available: kafkasource._native is not built "
                "(no Rust toolchain when kafkasource was installed); decode with native=False"
            )
        self.impl: NativeDecoder | PythonDecoder = (
            NativeDecoder(self.arrow_type) if native else PythonDecoder(self.reader)
        )
        self.known: dict[int, RegistrySchema] = {}  # id -> the writer schema resolved for it

    def decode(
        self, payloads: pa.BinaryArray, writer_schemas: Mapping[int, RegistrySchema]
    ) -> tuple[pa.Array, pa.StringArray]:
        """(values, reasons): a value of `arrow_type` per payload, null where it failed, and the reason beside it
        (null where it decoded). A null payload is a null value with a null reason."""
        for schema_id, schema in writer_schemas.items():
            if self.known.get(schema_id) != schema:
                self.impl.add_writer(schema_id, *self._plan(schema_id, schema))
                self.known[schema_id] = schema
        payloads = as_binary(payloads)
        values, reasons = self.impl.decode(payloads)
        return values, guid_reasons(payloads, reasons) if isinstance(self.impl, NativeDecoder) else reasons

    def _plan(self, schema_id: int, schema: RegistrySchema) -> tuple[AvroSchema | None, tuple | str]:
        """The writer schema parsed, and its resolution plan or the reason it cannot be read (a str)."""
        try:
            writer = avro_schema.parse(schema.text, schema.references)
        except SchemaError as e:
            return None, unresolvable_reason(schema_id, f"it is not a valid Avro schema: {e}")
        try:
            return writer, avro_resolution.resolve(writer.node, self.reader.node)
        except Unresolvable as e:
            return writer, unresolvable_reason(schema_id, str(e))


def python_reader_refusal(reader: RegistrySchema, native: bool) -> str | None:
    """Why the decoder a query runs cannot read this reader schema, or None: the native one reads every schema our
    parser reads, the Python one refuses a few more (fastavro refuses them)."""
    if native:
        return None
    try:
        AvroDecoder(reader.text, native=False, references=reader.references)
    except SchemaError as exc:
        return (
            f"the Python Avro decoder: {exc}; the native Avro decoder reads it (readPath auto or native, "
            "kafkasource._native built)"
        )
    return None


class NativeDecoder:
    """The Rust decoder: resolution plans in, Arrow buffers out."""

    def __init__(self, arrow_type: pa.DataType):
        self.arrow_type = arrow_type
        extension = native_extension.extension()  # AvroDecoder asked avro_decoder_available() first
        self.native: _native.AvroDecoder = extension.AvroDecoder(column_spec(arrow_type))

    def add_writer(self, schema_id: int, writer: AvroSchema | None, plan: tuple | str) -> None:
        if isinstance(plan, str):
            self.native.add_unresolvable(schema_id, plan)
        else:
            self.native.add_writer(schema_id, plan)

    def decode(self, payloads: pa.Array) -> tuple[pa.Array, pa.StringArray]:
        if len(payloads) == 0:
            return pa.array([], self.arrow_type), pa.array([], pa.string())
        validity, offsets, data = payloads.buffers()
        values, reasons = self.native.decode(
            len(payloads), payloads.offset, validity, offsets, data if data is not None else pa.py_buffer(b"")
        )
        return decoded_array(self.arrow_type, values), decoded_array(pa.string(), reasons)


class PythonDecoder:
    """The fallback: fastavro decodes each record into Python objects, which are converted to what pyarrow
    builds the reader's Arrow type from."""

    def __init__(self, reader: AvroSchema):
        try:
            import fastavro
        except ImportError:
            raise RuntimeError("the Python Avro decoder needs fastavro: pip install 'kafkasource[registry]'") from None
        self.fastavro = fastavro
        self.reader_schema = python_reader(reader)
        self.arrow_type = avro_schema.arrow_type(reader.node)
        self.convert = _converter(reader.node)
        self.writers: dict[int, AvroJson | Unusable] = {}  # id -> fastavro's parsed writer schema, or Unusable

    def add_writer(self, schema_id: int, writer: AvroSchema | None, plan: tuple | str) -> None:
        if isinstance(plan, str) or writer is None:
            self.writers[schema_id] = Unusable(str(plan))
            return
        try:
            self.writers[schema_id] = writer.fastavro[0]
        except SchemaError as e:  # a schema fastavro finds fault with where avro/schema.py found none
            self.writers[schema_id] = Unusable(unresolvable_reason(schema_id, f"it is not a valid Avro schema: {e}"))

    def decode(self, payloads: pa.Array) -> tuple[pa.Array, pa.StringArray]:
        return decode_each(payloads, self.writers, self._decode_one, self.arrow_type)

    def _decode_one(self, schema_id: int, writer: AvroJson, wire, body: io.BytesIO) -> tuple[object, str | None]:
        try:
            value = self.fastavro.schemaless_reader(body, writer, self.reader_schema, return_named_type=True)
            return (self.convert(value) if self.convert and value is not None else value), None
        except self.fastavro.read.SchemaResolutionError as e:
            return None, unresolvable_reason(schema_id, str(e))
        except Exception as e:  # fastavro reports damage as whatever its reading ran into
            return None, f"malformed Avro record: {type(e).__name__}: {e}"


def python_reader(reader: AvroSchema) -> AvroJson:
    """fastavro's parsed form of the reader schema, each field default in it replaced by what fastavro reads of
    the Avro binary avro/resolution.py writes of it: the value the native decoder reads of the same bytes, where
    fastavro would hand over the default's JSON as it stands (bytes and fixed as text, a union's for whichever
    branch, a record without its fields' own defaults). A default that does not fit its field is taken out, so a
    record that would need it fails, as on the native decoder. SchemaError says why fastavro cannot read the
    schema."""
    import fastavro

    parsed, named = reader.fastavro
    records = _records(reader.node, {})
    for name, schema in named.items():
        record = records.get(name)
        if record is None or not isinstance(schema, dict) or schema.get("type") not in ("record", "error"):
            continue
        for index, spec in enumerate(schema["fields"]):
            if "default" not in spec:
                continue
            try:
                written = avro_resolution.written_default(record, index)
            except Unresolvable:
                del spec["default"]
                continue
            try:
                exact = fastavro.parse_schema(avro_resolution.fastavro_schema(record.fields[index].type, {}, True))
                spec["default"] = fastavro.schemaless_reader(io.BytesIO(written), exact, None, return_named_type=True)
            except Exception as e:  # the field's type standing alone, which fastavro took as part of the whole
                raise SchemaError(
                    f"fastavro does not read the default of {name}.{spec['name']} back: {type(e).__name__}: {e}"
                ) from None
    return parsed


def _records(node: Node, found: dict[str, Node]) -> dict[str, Node]:
    """The schema's records by full name, as fastavro names its parsed types."""
    if node.kind == "record" and node.name is not None:
        if node.name in found:
            return found
        found[node.name] = node
        for f in node.fields:
            _records(f.type, found)
    elif node.kind in ("array", "map"):
        _records(node.inner, found)
    for branch in node.branches:
        _records(branch, found)
    return found


# ---- fastavro's Python values -> what pyarrow builds the Arrow type from; None where they are that already ----


def _converter(node: Node):
    kind, logical = node.kind, node.logical
    if logical == "uuid":
        return str
    if logical == "decimal":
        return _decimal_check(node.precision, node.scale)
    if logical == "time-millis":
        return lambda t: _time_micros(t) // 1000
    if logical == "time-micros":
        return _time_micros
    if kind == "record":
        converters = [(f.name, _converter(f.type)) for f in node.fields]
        converters = [(name, convert) for name, convert in converters if convert]
        if not converters:
            return None

        def record(value: dict) -> dict:
            value = dict(value)  # a reader default is one dict for every record that takes it: never changed
            for name, convert in converters:
                if value[name] is not None:
                    value[name] = convert(value[name])
            return value

        return record
    if kind in ("array", "map"):
        inner = _converter(node.inner)
        if inner is None:
            return None
        if kind == "array":
            return lambda items: [None if item is None else inner(item) for item in items]
        return lambda entries: {key: None if item is None else inner(item) for key, item in entries.items()}
    if kind == "union":
        return _union_converter(node)
    return None


def _union_converter(node: Node):
    """fastavro gives a union's value alone, or (name, value) for a named type: Spark's shape of the union is
    the one type it reads as, or a struct with the member the value belongs to set."""
    shape = avro_schema.union_shape(node)
    if isinstance(shape, Node):
        inner = _converter(shape)

        def one(value):
            if isinstance(value, tuple):
                value = value[1]
            return inner(value) if inner else value

        return one
    members = [(i, branch, _converter(branch)) for i, branch in enumerate(shape)]

    def member(value):
        i, convert = _member(members, value)
        if isinstance(value, tuple):
            value = value[1]
        return {f"member{i}": convert(value) if convert else value}

    return member


PYTHON_KINDS = [
    (bool, ("boolean",)),
    (int, ("int", "long")),
    (float, ("float", "double")),
    (str, ("string",)),
    (bytes, ("bytes",)),
    (list, ("array",)),
    (dict, ("map",)),
    (Decimal, ("bytes", "fixed")),
    (datetime.datetime, ("long",)),
    (datetime.date, ("int",)),
    (datetime.time, ("int", "long")),
    (uuid.UUID, ("string",)),
]


def _member(members: list, value) -> tuple:
    if isinstance(value, tuple):
        name = value[0].rpartition(".")[2]
        for i, branch, convert in members:
            if branch.name and (
                branch.name.rpartition(".")[2] == name or name in (alias.rpartition(".")[2] for alias in branch.aliases)
            ):
                return i, convert
    else:
        for python_type, kinds in PYTHON_KINDS:
            if isinstance(value, python_type):
                for i, branch, convert in members:
                    if branch.kind in kinds:
                        return i, convert
    raise ValueError(f"no branch of the reader's union holds {value!r}")


def _decimal_check(precision: int, scale: int):
    """fastavro rounds a decimal to the schema's precision: a value that needed rounding is too wide for it."""
    limit = Decimal(10) ** (precision - scale)

    def check(value: Decimal) -> Decimal:
        if value.copy_abs() >= limit:  # copy_abs: abs() would round to the context's 28 digits
            raise ValueError(f"decimal {value} does not fit decimal({precision}, {scale})")
        return value

    return check


def _time_micros(value: datetime.time) -> int:
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
