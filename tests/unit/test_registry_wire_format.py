"""The schema registry's wire format as every decoder reads it (confluent-kafka's SchemaId): the id form (magic byte
0), the GUID form (magic byte 1), which names a writer schema the decoders do not look up and says so, and
Protobuf's message indexes. Pure: no registry, no Spark."""

from __future__ import annotations

import base64
import json
import uuid

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as F

from kafkasource.formats.avro.decode import AvroDecoder
from kafkasource.formats.json_schema.decode import JsonSchemaDecoder
from kafkasource.formats.protobuf.decode import ProtobufDecoder
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import NO_PREFIX, describe_prefix, schema_id_of, schema_ids

GUID = uuid.UUID("6f1f8c3e-2b4a-4d7e-9a51-0c2d3e4f5a6b")
IN_GUID_FORM = (f"writer schema GUID {GUID}: the wire format's GUID form (magic byte 1); writer schemas are looked "
                "up by id (magic byte 0) only")


def test_the_prefix_names_an_id_a_guid_or_nothing():
    assert schema_id_of(b"\x00\x00\x00\x01\x00rest") == 256
    assert schema_id_of(b"\x01" + GUID.bytes + b"rest") is None
    assert [describe_prefix(p) for p in (b"\x00\x00\x00\x00\x07x", b"\x01" + GUID.bytes, b"\x01\x02", b"{}", None)] \
        == ["schema id 7", f"schema GUID {GUID}", "no schema id", "no schema id", "no schema id"]
    assert schema_ids(pa.array([b"\x01" + GUID.bytes + b"x", b"\x00\x00\x00\x00\x05y"], pa.binary())) == [5]


def test_avro_records_in_the_guid_form_say_so_on_both_decoders(read_path):
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]})
    payloads = [b"\x00\x00\x00\x00\x01\x02", b"\x01" + GUID.bytes + b"\x02", b"\x01" + GUID.bytes[:8], b"\x02x"]

    values, reasons = AvroDecoder(schema, native=read_path == "native").decode(
        pa.array(payloads, pa.binary()), {1: RegistrySchema(1, "AVRO", schema)})

    assert values.to_pylist() == [{"x": 1}, None, None, None]
    assert reasons.to_pylist() == [None, IN_GUID_FORM, NO_PREFIX, NO_PREFIX]


def test_json_records_in_the_guid_form_say_so():
    schema = json.dumps({"type": "object", "properties": {"x": {"type": "integer"}}})
    payloads = [b"\x00\x00\x00\x00\x01" + b'{"x": 1}', b"\x01" + GUID.bytes + b'{"x": 1}', b'{"x": 1}']

    values, reasons = JsonSchemaDecoder(schema).decode(pa.array(payloads, pa.binary()),
                                                       {1: RegistrySchema(1, "JSON", schema)})

    assert values.to_pylist() == [{"x": 1}, None, None]
    assert reasons.to_pylist() == [None, IN_GUID_FORM, NO_PREFIX]


def two_messages() -> str:
    """A file of messages First {int64 a = 1} and Second {string b = 1}, in the registry's serialized form."""
    proto = descriptor_pb2.FileDescriptorProto(name="wire/two.proto", package="wire", syntax="proto3")
    proto.message_type.add(name="First").field.add(name="a", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    proto.message_type.add(name="Second").field.add(name="b", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    return base64.b64encode(proto.SerializeToString()).decode()


FIRST, SECOND = b"\x08\x05", b"\x0a\x01\x05"  # a = 5; b = "\x05"


@pytest.mark.parametrize("message, after_id, body, value, reason", [
    ("First", b"\x00", FIRST, {"a": 5}, None),  # no indexes: the first message
    ("First", b"\x02\x00", FIRST, {"a": 5}, None),  # [0]
    ("Second", b"\x02\x02", SECOND, {"b": "\x05"}, None),  # [1]
    ("Second", b"\x00", FIRST, None, "writer schema 3 cannot be resolved into the reader schema: the record is a "
                                    "wire.First, the reader reads wire.Second"),
    ("First", b"\x02\x04", FIRST, None, "malformed Protobuf record: message index 2 is out of range"),
    ("First", b"\x01", FIRST, None, "malformed Protobuf record: its message indexes: Invalid msgidx array length"),
    # two indexes announced, one given: the second is the message's first byte (0x08, index 4)
    ("First", b"\x04\x00", FIRST, None, "malformed Protobuf record: message index 4 is out of range"),
])
def test_protobuf_message_indexes_pick_the_writers_message(message, after_id, body, value, reason):
    schema = two_messages()
    payload = b"\x00\x00\x00\x00\x03" + after_id + body

    values, reasons = ProtobufDecoder(schema, message=message).decode(
        pa.array([payload], pa.binary()), {3: RegistrySchema(3, "PROTOBUF", schema)})

    assert values.to_pylist() == [value]
    assert reasons.to_pylist() == [reason]


def test_protobuf_records_cut_short_in_their_indexes_or_in_the_guid_form_say_so():
    schema = two_messages()
    payloads = [b"\x00\x00\x00\x00\x03", b"\x00\x00\x00\x00\x03\x04\x02", b"\x01" + GUID.bytes + b"\x00\x08\x05",
                b"\x00\x00\x00\x00\x09\x04"]

    values, reasons = ProtobufDecoder(schema).decode(pa.array(payloads, pa.binary()),
                                                     {3: RegistrySchema(3, "PROTOBUF", schema)})

    assert values.to_pylist() == [None] * 4
    assert reasons.to_pylist() == [
        "malformed Protobuf record: its message indexes: Unexpected EOF while reading index",
        "malformed Protobuf record: its message indexes: Unexpected EOF while reading index",
        IN_GUID_FORM,
        "unknown schema id 9"]  # an unknown id comes before its indexes
