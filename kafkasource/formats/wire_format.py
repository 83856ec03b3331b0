"""The schema registry's wire format, shared by every registry format: a magic byte 0, the writer schema's id
(4 bytes, big-endian), then the encoded record; what every decoder keeps of each writer schema; and the loop of
the decoders that read one record at a time (the native Avro decoder has a vectorised path of its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.formats.registry import RegistrySchema

MAGIC = b"\x00"
HEADER_SIZE = 5
NO_PREFIX = "no schema-registry wire-format prefix"
W = TypeVar("W")


@dataclass(frozen=True)
class Unusable:
    """Why the records of a writer schema cannot be decoded, kept in the writer's place. A type of its own: a parsed
    writer may itself be a string (fastavro parses the Avro schema "string" to the string 'string')."""

    reason: str


def schema_id_of(payload: bytes) -> int | None:
    """The writer schema's id; None for a payload without the prefix."""
    if len(payload) < HEADER_SIZE or payload[:1] != MAGIC:
        return None
    return int.from_bytes(payload[1:HEADER_SIZE], "big")


def unresolvable_reason(schema_id: int, why: str) -> str:
    return f"writer schema {schema_id} cannot be resolved into the reader schema: {why}"


def as_binary(payloads: pa.Array) -> pa.Array:
    return payloads.cast(pa.binary()) if payloads.type != pa.binary() else payloads


def schema_ids(payloads: pa.Array) -> list[int]:
    """The distinct writer schema ids among the payloads that carry the wire-format prefix, in ascending order."""
    # the distinct first five bytes, then the few of them that are a prefix: two kernels over the whole batch
    # rather than filtering the prefixed payloads first (bench/AVRO.md)
    heads = pc.unique(pc.binary_slice(as_binary(payloads), 0, HEADER_SIZE)).to_pylist()
    return sorted(
        schema_id
        for schema_id in (None if head is None else schema_id_of(head) for head in heads)
        if schema_id is not None
    )


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


def decode_each(
    payloads: pa.Array,
    writers: Mapping[int, W | Unusable],
    decode: Callable[[int, W, bytes], tuple[object, str | None]],
    arrow_type: pa.DataType,
) -> tuple[pa.Array, pa.StringArray]:
    """Each record decoded alone by `decode(schema id, writer, payload)`, which gives (value, None) or (None, the
    reason): the values as a column of `arrow_type`, and the reasons beside them. A record without the prefix, of
    an unknown schema id or of an unusable writer gets its reason without `decode`; a null payload stays null."""
    values, reasons = [], []
    for payload in payloads.to_pylist():
        value, reason = (None, None) if payload is None else _decode_one(payload, writers, decode)
        values.append(value)
        reasons.append(reason)
    return pa.array(values, arrow_type), pa.array(reasons, pa.string())


def _decode_one(
    payload: bytes, writers: Mapping[int, W | Unusable], decode: Callable[[int, W, bytes], tuple[object, str | None]]
) -> tuple[object, str | None]:
    schema_id = schema_id_of(payload)
    if schema_id is None:
        return None, NO_PREFIX
    writer = writers.get(schema_id)
    if writer is None:
        return None, f"unknown schema id {schema_id}"
    if isinstance(writer, Unusable):
        return None, writer.reason
    return decode(schema_id, writer, payload)
