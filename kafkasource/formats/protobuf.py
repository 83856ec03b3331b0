"""Protobuf records in the schema-registry wire format to an Arrow column of the reader message's type.

A payload is a magic byte 0, the writer schema's id (4 bytes, big-endian), the indexes of the message within
the writer's file (zigzag varints: their count, then each; a count of 0 means the first message), and the
message; confluent-kafka's SchemaId reads all before the message (kafkasource.formats.wire_format). Schemas are
read in the registry's serialized form (a base64 FileDescriptorProto, which confluent-kafka's deserializer asks
for too). A file may import Google's well-known types and other registered files: the registry lists those as
the schema's references, and they are fetched with it.

The reader message is the one named by the valueMessage/keyMessage option, else the first message of the
reader schema's file. Protobuf resolves by field number: the
record is parsed with the reader's message, so fields the writer lacks read as their defaults and fields the
reader lacks are skipped; a writer whose message (at the record's indexes) has another full name than the
reader's cannot be resolved. Types: message -> struct, repeated -> array, map -> map, int32/sint32/sfixed32
-> int, int64/sint64/sfixed64 and uint32/fixed32 -> bigint, uint64/fixed64 -> decimal(20,0), float, double,
bool, string, bytes -> binary, enum -> string (the value's name), google.protobuf.Timestamp -> timestamp.
A message field that is not set, and a field with presence (proto3 `optional`, oneof members) that is not
set, is null; other scalars read as protobuf reads them (their default when absent).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping, Sequence
from decimal import Decimal

import pyarrow as pa

from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import Unusable, WriterCache, decode_each, unresolvable_reason

TIMESTAMP = "google.protobuf.Timestamp"
MAX_DEPTH = 32


def _well_known_files():
    from google.protobuf import (
        any_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )

    return {
        m.DESCRIPTOR.name: m.DESCRIPTOR.serialized_pb
        for m in (any_pb2, duration_pb2, empty_pb2, field_mask_pb2, struct_pb2, timestamp_pb2, wrappers_pb2)
    }


def _file_proto(text: str, name: str | None = None):
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto()
    try:
        proto.ParseFromString(base64.b64decode(text, validate=True))
    except Exception:
        what = "the schema" if name is None else f"the schema it imports as {name}"
        raise ValueError(f"{what} is not in the registry's serialized form (a base64 FileDescriptorProto)") from None
    if name is not None:
        proto.name = name  # the registry may file it under another name than the import that names it
    return proto


def parse_file(text: str, references: Sequence[tuple[str, str]] = ()):
    """The FileDescriptor of a schema in serialized form (base64 FileDescriptorProto), with the files it
    imports: Google's well-known types, and `references` (import name, serialized text)."""
    from google.protobuf import descriptor_pool

    known = _well_known_files()
    referenced = dict(references)
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(proto) -> None:  # a file after everything it imports, each once
        added.add(proto.name)
        for dependency in proto.dependency:
            if dependency in added:
                continue
            if dependency in known:
                added.add(dependency)
                pool.AddSerializedFile(known[dependency])
            elif dependency in referenced:
                add(_file_proto(referenced[dependency], dependency))
            else:
                raise ValueError(
                    f"it imports {dependency}, which is neither one of Google's well-known types nor "
                    "among the schema's references in the registry"
                )
        try:
            pool.Add(proto)
        except TypeError as exc:  # protobuf's word for a file it cannot build (a type it names is nowhere)
            raise ValueError(f"{proto.name} does not build: {exc}") from None

    proto = _file_proto(text)
    add(proto)
    return pool.FindFileByName(proto.name), proto


def reader_message(text: str, message: str | None = None, references: Sequence[tuple[str, str]] = ()):
    """The reader's message: `message` (full or short name), else the file's first."""
    file, proto = parse_file(text, references)
    if message is None:
        if not proto.message_type:
            raise ValueError("the schema defines no message")
        return file.message_types_by_name[proto.message_type[0].name]
    full = message if "." in message or not proto.package else f"{proto.package}.{message}"
    try:
        return file.pool.FindMessageTypeByName(full)
    except KeyError:
        names = ", ".join(f"{proto.package}.{m.name}" if proto.package else m.name for m in proto.message_type)
        raise ValueError(f"the schema has no message {message} (its messages: {names})") from None


def _scalar_types():
    from google.protobuf.descriptor import FieldDescriptor as F

    return {
        F.TYPE_INT32: pa.int32(),
        F.TYPE_SINT32: pa.int32(),
        F.TYPE_SFIXED32: pa.int32(),
        F.TYPE_INT64: pa.int64(),
        F.TYPE_SINT64: pa.int64(),
        F.TYPE_SFIXED64: pa.int64(),
        F.TYPE_UINT32: pa.int64(),
        F.TYPE_FIXED32: pa.int64(),
        F.TYPE_UINT64: pa.decimal128(20, 0),
        F.TYPE_FIXED64: pa.decimal128(20, 0),
        F.TYPE_FLOAT: pa.float32(),
        F.TYPE_DOUBLE: pa.float64(),
        F.TYPE_BOOL: pa.bool_(),
        F.TYPE_STRING: pa.string(),
        F.TYPE_BYTES: pa.binary(),
        F.TYPE_ENUM: pa.string(),
    }


def _is_map(field) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _single_type(field, depth: int) -> pa.DataType:
    if field.message_type is None:
        return _scalar_types()[field.type]
    if field.message_type.full_name == TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    return _message_type(field.message_type, depth + 1)


def _message_type(message, depth: int = 0) -> pa.DataType:
    if depth > MAX_DEPTH:
        raise ValueError(
            f"message {message.full_name} nests deeper than {MAX_DEPTH} levels (a recursive "
            "message?): Spark has no recursive types"
        )
    fields = []
    for field in message.fields:
        if _is_map(field):
            entry = field.message_type.fields_by_name
            kind = pa.map_(_single_type(entry["key"], depth), _single_type(entry["value"], depth))
        else:
            kind = _single_type(field, depth)
            if field.is_repeated:
                kind = pa.list_(kind)
        fields.append(pa.field(field.name, kind))
    return pa.struct(fields)


def arrow_type(
    reader_schema: str, message: str | None = None, references: Sequence[tuple[str, str]] = ()
) -> pa.DataType:
    """The Arrow type of the reader message of this schema (the registry's serialized form)."""
    return _message_type(reader_message(reader_schema, message, references))


# ---- values ---------------------------------------------------------------------------------------------------


class _Unreadable(ValueError):
    pass


def _single_value(field, value):
    if field.message_type is not None:
        if field.message_type.full_name == TIMESTAMP:
            return value.seconds * 1_000_000 + value.nanos // 1000
        return _message_value(value)
    if field.enum_type is not None:
        symbol = field.enum_type.values_by_number.get(value)
        if symbol is None:
            raise _Unreadable(f"{field.full_name} holds {value}, which enum {field.enum_type.full_name} does not name")
        return symbol.name
    if field.type in (field.TYPE_UINT64, field.TYPE_FIXED64):
        return Decimal(value)
    return value


def _message_value(message) -> dict:
    out: dict[str, object] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if _is_map(field):
            entry = field.message_type.fields_by_name
            out[field.name] = [
                (_single_value(entry["key"], k), _single_value(entry["value"], v)) for k, v in value.items()
            ]
        elif field.is_repeated:
            out[field.name] = [_single_value(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _single_value(field, value)
    return out


def _message_at(file_proto, file, indexes: list[int]):
    """The full name of the message the indexes point at in a file."""
    names, messages = [], list(file_proto.message_type)
    for index in indexes:
        if not 0 <= index < len(messages):
            raise _Unreadable(f"message index {index} is out of range")
        names.append(messages[index].name)
        messages = list(messages[index].nested_type)
    return ".".join(filter(None, [file_proto.package, *names]))


def _writer(schema_id: int, schema: RegistrySchema):
    """A writer schema as (file proto, file), or why it cannot be read."""
    try:
        file, proto = parse_file(schema.text, schema.references)
        return proto, file
    except ValueError as exc:
        return Unusable(unresolvable_reason(schema_id, str(exc)))


class ProtobufDecoder:
    """Decodes payloads into `arrow_type`, the reader message's type."""

    def __init__(
        self,
        reader_schema: str,
        native: bool = False,
        message: str | None = None,
        references: Sequence[tuple[str, str]] = (),
    ):
        from google.protobuf import message_factory

        self.reader = reader_message(reader_schema, message, references)
        self.arrow_type = _message_type(self.reader)
        self.message_class = message_factory.GetMessageClass(self.reader)
        self.writers = WriterCache(_writer)

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, RegistrySchema]) -> tuple[pa.Array, pa.Array]:
        return decode_each(
            payloads,
            self.writers.of(writer_schemas),
            self._decode_one,
            self.arrow_type,
            "PROTOBUF",
            "malformed Protobuf record: its message indexes",
        )

    def _decode_one(self, schema_id: int, writer: tuple, wire, body: io.BytesIO) -> tuple[object, str | None]:
        try:  # SchemaId read the message indexes with the id
            written = _message_at(writer[0], writer[1], wire.message_indexes)
        except _Unreadable as exc:
            return None, f"malformed Protobuf record: {exc}"
        if written != self.reader.full_name:
            return None, unresolvable_reason(
                schema_id, f"the record is a {written}, the reader reads {self.reader.full_name}"
            )
        message = self.message_class()
        try:
            message.ParseFromString(body.read())
            return _message_value(message), None
        except _Unreadable as exc:
            return None, f"malformed Protobuf record: {exc}"
        except Exception as exc:  # protobuf's DecodeError and what else damaged bytes raise
            return None, f"malformed Protobuf record: {type(exc).__name__}: {exc}"
