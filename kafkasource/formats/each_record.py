"""The decoders that read one record at a time (JSON Schema, Protobuf, and Avro's Python fallback): their loop over a
column, and what each keeps of every writer schema it met, or why that schema's records cannot be decoded. The
native Avro decoder has a vectorised path of its own.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import pyarrow as pa

from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import AVRO_WIRE, WireFormat, without_id

W = TypeVar("W")


@dataclass(frozen=True)
class Unusable:
    """Why the records of a writer schema cannot be decoded, kept in the writer's place. A type of its own: a parsed
    writer may itself be a string (fastavro parses the Avro schema "string" to the string 'string')."""

    reason: str


class WriterCache(Generic[W]):
    """What a decoder builds from each writer schema (a parsed file, a validator), or why it cannot: built once per
    id, and again only if the schema given for that id changed."""

    def __init__(self, build: Callable[[int, RegistrySchema], W | Unusable]):
        self._build = build
        self._built: dict[int, tuple[RegistrySchema, W | Unusable]] = {}

    def of(self, schemas: Mapping[int, RegistrySchema]) -> dict[int, W | Unusable]:
        found = {}
        for schema_id, schema in schemas.items():
            known = self._built.get(schema_id)
            if known is None or known[0] != schema:
                known = self._built[schema_id] = (schema, self._build(schema_id, schema))
            found[schema_id] = known[1]
        return found


# decode(schema id, writer, SchemaId, the record after the prefix) -> (value, None) or (None, the reason)
Decode = Callable[[int, W, object, io.BytesIO], tuple[object, str | None]]


def decode_each(
    payloads: pa.Array,
    writers: Mapping[int, W | Unusable],
    decode: Decode,
    arrow_type: pa.DataType,
    wire_format: WireFormat = AVRO_WIRE,
    damage: str = "malformed record",
) -> tuple[pa.Array, pa.StringArray]:
    """Each record decoded alone by `decode`: the values as a column of `arrow_type`, and the reasons beside them.
    A record without a schema id, of an unknown id or of an unusable writer gets its reason without `decode`, and
    so does one whose prefix SchemaId could not read past the id (Protobuf's message indexes), as `damage`: its
    reason; a null payload stays null.

    SchemaId, a Python object and a stream per record, costs 0.3 to 1.5 µs a record more than reading the prefix by
    hand did (bench/FORMATS.md), against 30 to 300 µs a record for the decoding itself: not worth code of our own."""
    values, reasons = [], []
    for payload in payloads.to_pylist():
        value = reason = None
        if payload is not None:
            wire, body, error = wire_format.read(payload)
            writer = None if wire.id is None else writers.get(wire.id)
            if wire.id is None:
                reason = without_id(wire)
            elif writer is None:
                reason = f"unknown schema id {wire.id}"
            elif isinstance(writer, Unusable):
                reason = writer.reason
            elif error is not None:
                reason = f"{damage}: {error}"
            else:
                value, reason = decode(wire.id, writer, wire, body)
        values.append(value)
        reasons.append(reason)
    return pa.array(values, arrow_type), pa.array(reasons, pa.string())
