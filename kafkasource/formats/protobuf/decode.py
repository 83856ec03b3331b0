"""Protobuf records in the schema-registry wire format to an Arrow column of the reader message's type.

A payload is a magic byte 0, the writer schema's id (4 bytes, big-endian), the indexes of the message within
the writer's file (zigzag varints: their count, then each; a count of 0 means the first message), and the
message; confluent-kafka's SchemaId reads all before the message (kafkasource.formats.wire_format). Schemas are
read in the registry's serialized form (kafkasource.formats.protobuf.schema).

Protobuf resolves by field number: the record is parsed with the reader's message, so fields the writer lacks
read as their defaults and fields the reader lacks are skipped; a writer whose message (at the record's indexes)
has another full name than the reader's cannot be resolved. A message field that is not set, and a field with
presence (proto3 `optional`, oneof members) that is not set, is null; other scalars read as protobuf reads them
(their default when absent).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from decimal import Decimal

import pyarrow as pa

from kafkasource.formats.each_record import Unusable, WriterCache, decode_each
from kafkasource.formats.protobuf.schema import TIMESTAMP, is_map, message_arrow_type, parse_file, reader_message
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import PROTOBUF_WIRE, unresolvable_reason


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
        if is_map(field):
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
        self.arrow_type = message_arrow_type(self.reader)
        self.message_class = message_factory.GetMessageClass(self.reader)
        self.writers = WriterCache(_writer)

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, RegistrySchema]) -> tuple[pa.Array, pa.Array]:
        return decode_each(
            payloads,
            self.writers.of(writer_schemas),
            self._decode_one,
            self.arrow_type,
            PROTOBUF_WIRE,
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
