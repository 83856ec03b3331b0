"""The schema registry's wire format, shared by every registry format: a magic byte 0, the writer schema's id
(4 bytes, big-endian), then the encoded record; and the loop of the decoders that read one record at a time
(the native Avro decoder has a vectorised path of its own)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, TypeVar

import pyarrow as pa

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


def decode_each(payloads: pa.Array, writers: Mapping[int, W | Unusable],
                decode: Callable[[int, W, bytes], tuple[object, str | None]],
                arrow_type: pa.DataType) -> tuple[pa.Array, pa.StringArray]:
    """Each record decoded alone by `decode(schema id, writer, payload)`, which gives (value, None) or (None, the
    reason): the values as a column of `arrow_type`, and the reasons beside them. A record without the prefix, of
    an unknown schema id or of an unusable writer gets its reason without `decode`; a null payload stays null."""
    values, reasons = [], []
    for payload in payloads.to_pylist():
        value, reason = (None, None) if payload is None else _decode_one(payload, writers, decode)
        values.append(value)
        reasons.append(reason)
    return pa.array(values, arrow_type), pa.array(reasons, pa.string())


def _decode_one(payload: bytes, writers: Mapping[int, W | Unusable],
                decode: Callable[[int, W, bytes], tuple[object, str | None]]) -> tuple[object, str | None]:
    schema_id = schema_id_of(payload)
    if schema_id is None:
        return None, NO_PREFIX
    writer = writers.get(schema_id)
    if writer is None:
        return None, f"unknown schema id {schema_id}"
    if isinstance(writer, Unusable):
        return None, writer.reason
    return decode(schema_id, writer, payload)
