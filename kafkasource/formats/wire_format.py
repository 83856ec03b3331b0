"""The schema registry's wire format, shared by every registry format: a magic byte 0 and the writer schema's id
(4 bytes, big-endian), or a magic byte 1 and the writer schema's GUID (16 bytes); for Protobuf the indexes of the
message within the writer's file; then the encoded record. confluent-kafka's SchemaId reads that prefix, record
by record. Also here: what every decoder keeps of each writer schema, and the loop of the decoders that read one
record at a time (the native Avro decoder has a vectorised path of its own, which reads the prefix itself).

Writer schemas are looked up by id: a record in the GUID form (written by a serializer told to name schemas by
GUID) gets a reason saying so and naming its GUID, not "no prefix".

SchemaId comes from confluent-kafka's schema-registry package, imported when a batch is decoded: importing it
loads the registry client (seconds, and the registry extras), which a query without valueFormat/keyFormat never
needs."""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.formats.registry import RegistrySchema

HEADER_SIZE = 5  # magic byte 0 and the id: what schema_ids takes of each payload
NO_PREFIX = "no schema-registry wire-format prefix"
W = TypeVar("W")


@dataclass(frozen=True)
class Unusable:
    """Why the records of a writer schema cannot be decoded, kept in the writer's place. A type of its own: a parsed
    writer may itself be a string (fastavro parses the Avro schema "string" to the string 'string')."""

    reason: str


@functools.cache
def _schema_id_class():
    from confluent_kafka.schema_registry.serde import SchemaId

    return SchemaId


@functools.cache
def _read_errors() -> tuple:
    """What SchemaId.from_bytes raises on a payload its prefix does not fit: a short read (struct.error), a magic
    byte other than 0 and 1 or an implausible count of message indexes (SerializationError), a GUID cut short
    (ValueError), message indexes cut short (EOFError)."""
    from confluent_kafka.serialization import SerializationError

    return struct.error, ValueError, EOFError, SerializationError


def read_prefix(payload: bytes, schema_type: str = "AVRO"):
    """(SchemaId, the record after the prefix as a stream, the error met reading the prefix or None). SchemaId's id
    is None when the payload holds no id: no prefix, or the GUID form (its guid set). schema_type PROTOBUF reads the
    message indexes too; an error may come after the id then, reading them."""
    wire = _schema_id_class()(schema_type)
    body = io.BytesIO(payload)
    try:
        wire.from_bytes(body)
    except _read_errors() as exc:
        return wire, body, exc
    return wire, body, None


def without_id(wire) -> str:
    """The reason of a record whose prefix holds no schema id (SchemaId's id None)."""
    if wire.guid is not None:
        return (
            f"writer schema GUID {wire.guid}: the wire format's GUID form (magic byte 1); writer schemas are "
            "looked up by id (magic byte 0) only"
        )
    return NO_PREFIX


def schema_id_of(payload: bytes) -> int | None:
    """The writer schema's id; None for a payload without one (no prefix, or the GUID form)."""
    return read_prefix(payload)[0].id


def describe_prefix(payload: bytes | None) -> str:
    """The writer schema a payload's prefix names, for a message: "schema id 7", "schema GUID ..." or "no schema id"."""
    if payload is None:
        return "no schema id"
    wire = read_prefix(payload)[0]
    return (
        f"schema id {wire.id}"
        if wire.id is not None
        else f"schema GUID {wire.guid}"
        if wire.guid is not None
        else "no schema id"
    )


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


def guid_reasons(payloads: pa.Array, reasons: pa.StringArray) -> pa.StringArray:
    """`reasons` with the "no prefix" of each payload in the GUID form said as without_id says it: the native Avro
    decoder reads magic byte 0 alone and calls anything else no prefix."""
    no_prefix = pc.equal(reasons, NO_PREFIX)
    if not pc.any(no_prefix).as_py():
        return reasons
    fixed = reasons.to_pylist()
    for i in pc.indices_nonzero(no_prefix).to_pylist():  # records without a prefix are few
        fixed[i] = without_id(read_prefix(payloads[i].as_py())[0])
    return pa.array(fixed, pa.string())


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
    schema_type: str = "AVRO",
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
            wire, body, error = read_prefix(payload, schema_type)
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
