"""Protobuf schemas: the registry's serialized form (a base64 FileDescriptorProto, which confluent-kafka's
deserializer asks for too) parsed with the files it imports, the reader message, where a message sits in its file
(the indexes the wire format carries), and the Arrow type of each field, which the sink's shapes follow in reverse.

A file may import Google's well-known types and other registered files: the registry lists those as the schema's
references, and they are fetched with it. The reader message is the one named by the valueMessage/keyMessage
option, else the first message of the reader schema's file. Types: message -> struct, repeated -> array, map ->
map, int32/sint32/sfixed32 -> int, int64/sint64/sfixed64 and uint32/fixed32 -> bigint, uint64/fixed64 ->
decimal(20,0), float, double, bool, string, bytes -> binary, enum -> string (the value's name),
google.protobuf.Timestamp -> timestamp.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pyarrow as pa

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


def scalar_types():
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


def is_map(field) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _single_type(field, depth: int) -> pa.DataType:
    if field.message_type is None:
        return scalar_types()[field.type]
    if field.message_type.full_name == TIMESTAMP:
        return pa.timestamp("us", tz="UTC")
    return message_arrow_type(field.message_type, depth + 1)


def message_arrow_type(message, depth: int = 0) -> pa.DataType:
    if depth > MAX_DEPTH:
        raise ValueError(
            f"message {message.full_name} nests deeper than {MAX_DEPTH} levels (a recursive "
            "message?): Spark has no recursive types"
        )
    fields = []
    for field in message.fields:
        if is_map(field):
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
    return message_arrow_type(reader_message(reader_schema, message, references))


def message_indexes(descriptor) -> list[int]:
    """Where a message sits in its file (its index among the top-level messages, then among each level's nested
    ones), as confluent-kafka's ProtobufSerializer writes it."""
    indexes: list[int] = []
    while descriptor is not None:
        siblings = (
            descriptor.containing_type.nested_types
            if descriptor.containing_type
            else list(descriptor.file.message_types_by_name.values())
        )
        indexes.insert(0, [s.full_name for s in siblings].index(descriptor.full_name))
        descriptor = descriptor.containing_type
    return indexes
