"""The sink's Protobuf: the writer's message read into a Shape (kafkasource.formats.shapes) whose structs carry their
message classes, and each row's converted message serialized after the wire-format prefix, which names the
message by its indexes in its file as confluent-kafka's ProtobufSerializer does.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkasource.formats.protobuf.schema import (
    TIMESTAMP,
    arrow_type,
    is_map,
    message_indexes,
    reader_message,
    scalar_types,
)
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.shapes import Shape, ShapeField, scalar_shape
from kafkasource.formats.wire_format import PROTOBUF_WIRE


def protobuf_shape(schema: RegistrySchema, message: str | None) -> Shape:
    """The Shape of the writer's message: `message` (full or short name), else the file's first."""
    descriptor = reader_message(schema.text, message, schema.references)
    arrow_type(schema.text, message, schema.references)  # refuses recursive messages in its words
    return _message_shape(descriptor)


def _message_shape(descriptor) -> Shape:
    from google.protobuf import message_factory

    fields = []
    for f in descriptor.fields:
        if is_map(f):
            entry = f.message_type.fields_by_name
            shape = Shape("map", item=_proto_single(entry["value"]), key=_proto_single(entry["key"]))
        elif f.is_repeated:
            shape = Shape("list", item=_proto_single(f), item_nullable=False)
        else:
            shape = _proto_single(f)
        presence = not f.is_repeated and f.has_presence
        fields.append(ShapeField(f.name, shape, presence, True, "omitted" if presence else "refused"))
    return Shape("struct", fields=fields, message=message_factory.GetMessageClass(descriptor))


def _proto_single(f) -> Shape:
    if f.message_type is not None:
        if f.message_type.full_name == TIMESTAMP:
            return Shape("timestamp", message="timestamp")
        return _message_shape(f.message_type)
    if f.enum_type is not None:
        return Shape("string", symbols=tuple(v.name for v in f.enum_type.values))
    shape = scalar_shape(scalar_types()[f.type])
    if f.type in (f.TYPE_UINT32, f.TYPE_FIXED32):
        shape.low, shape.high = 0, 2**32 - 1
    if f.type in (f.TYPE_UINT64, f.TYPE_FIXED64):
        shape.low, shape.high = 0, 2**64 - 1
    return shape


def protobuf_writer(schema: RegistrySchema, shape: Shape, column: str) -> Callable[[object], bytes]:
    """The payload of a converted message: the prefix with the message's indexes, then the message serialized."""
    header = PROTOBUF_WIRE.prefix(schema.schema_id, message_indexes(shape.message.DESCRIPTOR))
    return lambda message: header + message.SerializeToString()  # type: ignore[attr-defined]
