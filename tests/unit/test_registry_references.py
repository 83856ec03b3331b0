"""Schema references, decoded without a registry: a Protobuf file's imports of other registered files, the Avro named
types a schema uses from other subjects, and JSON Schema $refs to other subjects' schemas. The Protobuf decoder
builds a file with every file it imports, directly or through another, in the order descriptors need; an import the
registry did not list is refused naming it. The Avro decoders (Python and native) know the referenced named types.
JSON Schema $refs to referenced schemas, and within them, resolve for the reader's type as in the writer's
validation."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as F

from kafkasource.formats.avro.decode import AvroDecoder
from kafkasource.formats.json_schema.decode import JsonSchemaDecoder
from kafkasource.formats.json_schema.schema import arrow_type as json_arrow_type
from kafkasource.formats.protobuf.decode import ProtobufDecoder
from kafkasource.formats.protobuf.schema import arrow_type, parse_file
from kafkasource.formats.registry import RegistrySchema
from tests.support.reference_schemas import (
    AVRO_REFERENCES,
    CURRENCY,
    JSON_MONEY,
    JSON_ORDER,
    MONEY,
    OPTIONAL,
    ORDER,
    files,
    order_class,
    serialized,
)


def test_a_file_reads_with_the_files_it_imports_in_any_order_of_the_references():
    currency, money, order = files("unit")
    references = [(money.name, serialized(money)), (currency.name, serialized(currency))]  # importer first

    file, proto = parse_file(serialized(order), references)

    assert proto.name == "unit/order.proto"
    assert file.pool.FindMessageTypeByName("unit.common.Money").fields_by_name["currency"].enum_type.full_name == \
        "unit.common.Currency"
    assert str(arrow_type(serialized(order), "Order", references)) == (
        "struct<id: int64, price: struct<units: int64, currency: string, priced_at: timestamp[us, tz=UTC]>>")


def test_a_referenced_file_is_imported_by_the_references_name_whatever_name_it_was_registered_with():
    currency, money, order = files("renamed")
    stored = descriptor_pb2.FileDescriptorProto()
    stored.CopyFrom(currency)
    stored.name = "default.proto"  # how a registry may name a file it parsed from .proto text

    file, _ = parse_file(serialized(order), [(money.name, serialized(money)), (currency.name, serialized(stored))])

    assert file.pool.FindFileByName("renamed/currency.proto").enum_types_by_name["Currency"].values[1].name == "EUR"


def test_an_import_missing_from_the_references_is_refused_naming_it():
    currency, money, order = files("missing")
    with pytest.raises(ValueError) as refused:
        parse_file(serialized(order), [(money.name, serialized(money))])
    assert str(refused.value) == ("it imports missing/currency.proto, which is neither one of Google's well-known "
                                  "types nor among the schema's references in the registry")


def test_a_writer_missing_a_reference_is_a_reason_for_its_records_and_one_with_them_decodes():
    currency, money, order = files("writer")
    Order = order_class("writer")
    payload = b"\x00" + (7).to_bytes(4, "big") + b"\x00" + Order(id=5, price={"units": 12, "currency": 2})\
        .SerializeToString()
    decoder = ProtobufDecoder(serialized(order), message="Order",
                              references=[(money.name, serialized(money)), (currency.name, serialized(currency))])

    lacking = RegistrySchema(7, "PROTOBUF", serialized(order), ((money.name, serialized(money)),))
    values, reasons = decoder.decode(pa.array([payload], pa.binary()), {7: lacking})
    assert values.to_pylist() == [None]
    assert reasons.to_pylist() == ["writer schema 7 cannot be resolved into the reader schema: it imports "
                                   "writer/currency.proto, which is neither one of Google's well-known types nor "
                                   "among the schema's references in the registry"]

    whole = RegistrySchema(7, "PROTOBUF", serialized(order),
                           ((money.name, serialized(money)), (currency.name, serialized(currency))))
    values, reasons = decoder.decode(pa.array([payload], pa.binary()), {7: whole})
    assert values.to_pylist() == [{"id": 5, "price": {"units": 12, "currency": "NOK", "priced_at": None}}]
    assert reasons.to_pylist() == [None]


def test_a_writer_file_that_does_not_build_is_a_reason_for_its_records_not_a_task_failure():
    currency, money, order = files("broken")
    broken = descriptor_pb2.FileDescriptorProto()
    broken.CopyFrom(order)
    broken.message_type[0].field.add(name="gone", number=3, type=F.TYPE_MESSAGE, label=OPTIONAL,
                                     type_name=".broken.Missing")
    references = ((money.name, serialized(money)), (currency.name, serialized(currency)))
    decoder = ProtobufDecoder(serialized(order), message="Order", references=references)
    payload = b"\x00" + (9).to_bytes(4, "big") + b"\x00" + b"\x08\x01"  # index [0]: Order; id = 1

    values, reasons = decoder.decode(pa.array([payload], pa.binary()),
                                     {9: RegistrySchema(9, "PROTOBUF", serialized(broken), references)})

    assert values.to_pylist() == [None]
    assert reasons.to_pylist() == ["writer schema 9 cannot be resolved into the reader schema: broken/order.proto "
                                   "does not build: Couldn't build proto file into descriptor pool: couldn't "
                                   "resolve name '.broken.Missing'"]


def avro_frame(schema_id: int, value: dict) -> bytes:
    named: dict = {}
    for schema in (CURRENCY, MONEY):
        fastavro.parse_schema(schema, named_schemas=named, _write_hint=False)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER, named_schemas=named), value)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def test_avro_schemas_using_named_types_of_the_schemas_they_reference_decode_on_both_decoders(decoder):
    avro = AvroDecoder(json.dumps(ORDER), native=decoder == "native", references=AVRO_REFERENCES)
    writer = RegistrySchema(3, "AVRO", json.dumps(ORDER), AVRO_REFERENCES)
    lacking = RegistrySchema(4, "AVRO", json.dumps(ORDER), AVRO_REFERENCES[1:])
    payloads = [avro_frame(3, {"id": 1, "price": {"units": 250, "currency": "NOK"}}), avro_frame(3, {"id": 2}),
                avro_frame(4, {"id": 3})]

    values, reasons = avro.decode(pa.array(payloads, pa.binary()), {3: writer, 4: lacking})

    assert str(avro.arrow_type) == "struct<id: int64, price: struct<units: int64, currency: string>>"
    assert values.to_pylist() == [{"id": 1, "price": {"units": 250, "currency": "NOK"}},
                                  {"id": 2, "price": None}, None]
    assert reasons.to_pylist() == [None, None, "writer schema 4 cannot be resolved into the reader schema: it is not "
                                   "a valid Avro schema: the schema it references as common.Money: unknown type "
                                   "'common.Currency'"]


def test_json_schema_refs_into_a_referenced_schema_and_within_it_resolve_against_the_schema_they_are_in():
    # the order's own definitions/code is an integer: the money schema's $ref #/definitions/code is its own string
    order = {**JSON_ORDER, "definitions": {**JSON_ORDER["definitions"], "code": {"type": "integer"}}}
    assert str(json_arrow_type(json.dumps(order), [("schemas/money.json", json.dumps(JSON_MONEY))])) == (
        "struct<id: int64, price: struct<units: int64, currency: string>, refund: struct<units: int64, currency: "
        "string>>")
    with pytest.raises(ValueError) as refused:
        json_arrow_type(json.dumps(JSON_ORDER))
    assert str(refused.value) == ("$ref 'schemas/money.json' is neither a reference into this schema "
                                  "(#/definitions/.. or #/$defs/..) nor to a schema the registry lists among its "
                                  "references")
    with pytest.raises(ValueError) as refused:
        json_arrow_type(json.dumps({**JSON_ORDER, "properties": {"x": {"$ref": "#/definitions/gone"}}}))
    assert str(refused.value) == "$ref '#/definitions/gone' names nothing in the schema"


def test_a_json_writer_whose_ref_resolves_nowhere_is_a_reason_for_the_records_that_reach_it():
    reader = {"type": "object", "properties": {"id": {"type": "integer"}}}
    writer = RegistrySchema(5, "JSON", json.dumps({"type": "object", "properties": {
        "id": {"type": "integer"}, "price": {"$ref": "schemas/money.json"}}}))
    payloads = [b"\x00\x00\x00\x00\x05" + json.dumps(value).encode() for value in ({"id": 1}, {"id": 2, "price": {}})]

    values, reasons = JsonSchemaDecoder(json.dumps(reader)).decode(pa.array(payloads, pa.binary()), {5: writer})

    assert values.to_pylist() == [{"id": 1}, None]
    assert reasons.to_pylist() == [None, "writer schema 5 cannot be resolved into the reader schema: its $ref "
                                         "'schemas/money.json' names neither a part of it nor a schema the registry "
                                         "lists among its references"]


# ---- against the real registry -------------------------------------------------------------------------------
