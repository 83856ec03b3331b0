"""The schema registry's wire format, shared by every registry format: a magic byte 0 and the writer schema's id
(4 bytes, big-endian), or a magic byte 1 and the writer schema's GUID (16 bytes); for Protobuf the indexes of the
message within the writer's file; then the encoded record. One class, WireFormat, reads that prefix record by
record (confluent-kafka's SchemaId.from_bytes) and writes it once per writer schema (the bytes SchemaId's
id_to_bytes writes), so the sink writes the prefix the source reads. The native Avro decoder and encoder read and
write the same prefix themselves, a column at a time.

Writer schemas are looked up by id: a record in the GUID form (written by a serializer told to name schemas by
GUID) gets a reason saying so and naming its GUID, not "no prefix".

SchemaId comes from confluent-kafka's schema-registry package, imported when a batch is decoded: importing it
loads the registry client (seconds, and the registry extras), which a query without valueFormat/keyFormat never
needs."""

from __future__ import annotations

import functools
import io
import struct

import pyarrow as pa
import pyarrow.compute as pc

MAGIC_BYTE = 0  # the id form; 1 is the GUID form, which only SchemaId reads
HEADER_SIZE = 5  # magic byte 0 and the id: what schema_ids takes of each payload
NO_PREFIX = "no schema-registry wire-format prefix"


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


class WireFormat:
    """The prefix of one format's payloads: `schema_type` (the registry's name of the format: AVRO, JSON, PROTOBUF)
    says whether message indexes follow the id."""

    def __init__(self, schema_type: str):
        self.schema_type = schema_type

    def read(self, payload: bytes):
        """(SchemaId, the record after the prefix as a stream, the error met reading the prefix or None). SchemaId's
        id is None when the payload holds no id: no prefix, or the GUID form (its guid set). PROTOBUF reads the
        message indexes too; an error may come after the id then, reading them."""
        wire = _schema_id_class()(self.schema_type)
        body = io.BytesIO(payload)
        try:
            wire.from_bytes(body)
        except _read_errors() as exc:
            return wire, body, exc
        return wire, body, None

    def prefix(self, schema_id: int, message_indexes: list[int] | None = None) -> bytes:
        """The prefix of every record written with the writer schema `schema_id`: the magic byte 0, the id, and for
        PROTOBUF the message's indexes in its file (SchemaId's zigzag varints). Without indexes the five bytes are
        packed here, as SchemaId packs them: a process that writes Avro or JSON is spared importing SchemaId's
        module, and with it the registry client."""
        if message_indexes is None:
            return struct.pack(">bI", MAGIC_BYTE, schema_id)
        return _schema_id_class()(self.schema_type, schema_id, message_indexes=message_indexes).id_to_bytes()


AVRO_WIRE, JSON_WIRE, PROTOBUF_WIRE = WireFormat("AVRO"), WireFormat("JSON"), WireFormat("PROTOBUF")


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
    return AVRO_WIRE.read(payload)[0].id


def describe_prefix(payload: bytes | None) -> str:
    """The writer schema a payload's prefix names, for a message: "schema id 7", "schema GUID ..." or "no schema id"."""
    if payload is None:
        return "no schema id"
    wire = AVRO_WIRE.read(payload)[0]
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
        fixed[i] = without_id(AVRO_WIRE.read(payloads[i].as_py())[0])
    return pa.array(fixed, pa.string())
