"""The registry formats, in the one table both directions use: for each valueFormat/keyFormat but binary and json, the
registry's name for its schemas, the form they are asked for, and its code (kafkasource.formats.avro, protobuf,
json_schema): the reader's Arrow type and decoder, the writer's shape, payload writer and derived schema.

A format's modules are imported when a query first uses the format: JSON Schema's need jsonschema, and none is
needed by a query that reads and writes binary.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import pyarrow as pa

from kafkasource.formats.registry import RegistrySchema

if TYPE_CHECKING:
    from kafkasource.formats.shapes import Shape

# json is plain JSON with a schema the options give (kafkasource.formats.plain_json), no registry; json-schema is JSON
# Schema in the registry's wire format
Format = Literal["binary", "json", "avro", "protobuf", "json-schema"]


class Decoder(Protocol):
    """A reader schema's decoder: (values, reasons) for a column of payloads, given the writer schemas by id."""

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, RegistrySchema], /) -> tuple[pa.Array, pa.Array]:
        pass


class NativeEncoder(Protocol):
    """A writer schema's encoder in the native extension: (payloads, [(row, reason or None)]) for a whole column,
    None where it does not cover the column."""

    def encode(self, array: pa.Array, /) -> tuple[pa.Array, list[tuple[int, str | None]]] | None:
        pass


@dataclass(frozen=True)
class FormatCode:
    """What a format's modules do for the drivers (formats/decoding.py, formats/encoding.py), taking the same
    arguments whatever the format; `message` names a Protobuf message, and the other formats take no message."""

    # the reader's side
    arrow_type: Callable[[RegistrySchema, str | None], pa.DataType]
    decoder: Callable[[RegistrySchema, str | None, bool], Decoder]  # (reader, message, native Avro decoder)
    reader_refusal: Callable[[RegistrySchema, bool], str | None]  # why the decoder a query runs cannot read it
    # the writer's side
    shape: Callable[[RegistrySchema, str | None], Shape]
    writer: Callable[[RegistrySchema, Shape, str], Callable[[object], bytes]]  # (schema, shape, column)
    native_encoder: Callable[[RegistrySchema, str], NativeEncoder | None]  # None: Python encodes
    derive: Callable[[object, str], str]  # (Spark type, column): the schema auto.register.schemas registers


@dataclass(frozen=True)
class RegistryFormat:
    name: Format
    schema_type: str  # the registry's name for the format's schemas
    schema_form: str | None  # the form its schemas are asked for: Protobuf's serialized (a descriptor), not .proto text
    named_messages: bool  # a schema holds several messages, one of them named by valueMessage/keyMessage
    load: Callable[[], FormatCode]

    @property
    def code(self) -> FormatCode:
        return self.load()


def _no_native_encoder(schema: RegistrySchema, column: str) -> None:
    return None


def _no_refusal(reader: RegistrySchema, native: bool) -> None:
    return None


@functools.cache
def _avro() -> FormatCode:
    from kafkasource.formats.avro import decode, derive, encode, native_encode

    return FormatCode(
        arrow_type=lambda reader, message: decode.arrow_type(reader.text, reader.references),
        decoder=lambda reader, message, native: decode.AvroDecoder(reader.text, native, reader.references),
        reader_refusal=decode.python_reader_refusal,
        shape=encode.avro_shape,
        writer=encode.avro_writer,
        native_encoder=native_encode.native_encoder,
        derive=derive.derive_avro,
    )


@functools.cache
def _protobuf() -> FormatCode:
    from kafkasource.formats.protobuf import decode, derive, encode, schema

    return FormatCode(
        arrow_type=lambda reader, message: schema.arrow_type(reader.text, message, reader.references),
        decoder=lambda reader, message, native: decode.ProtobufDecoder(reader.text, False, message, reader.references),
        reader_refusal=_no_refusal,
        shape=encode.protobuf_shape,
        writer=encode.protobuf_writer,
        native_encoder=_no_native_encoder,
        derive=derive.derive_protobuf,
    )


@functools.cache
def _json() -> FormatCode:
    from kafkasource.formats.json_schema import decode, derive, encode, schema

    return FormatCode(
        arrow_type=lambda reader, message: schema.arrow_type(reader.text, reader.references),
        decoder=lambda reader, message, native: decode.JsonSchemaDecoder(reader.text, False, reader.references),
        reader_refusal=_no_refusal,
        shape=encode.json_shape,
        writer=encode.json_writer,
        native_encoder=_no_native_encoder,
        derive=derive.derive_json,
    )


FORMATS: dict[str, RegistryFormat] = {
    f.name: f
    for f in (
        RegistryFormat("avro", "AVRO", None, False, _avro),
        RegistryFormat("protobuf", "PROTOBUF", "serialized", True, _protobuf),
        RegistryFormat("json-schema", "JSON", None, False, _json),
    )
}
# what valueFormat/keyFormat take: binary (the bytes as they are), json (plain JSON), then the registry formats
PLAIN_JSON: Format = "json"
FORMAT_NAMES: tuple[str, ...] = ("binary", PLAIN_JSON, *FORMATS)
