"""Schema references: a Protobuf file's imports of other registered files, the Avro named types a schema uses from
other subjects, and JSON Schema $refs to other subjects' schemas. The Protobuf decoder builds a file with every file
it imports, directly or through another, in the order descriptors need; an import the registry did not list is
refused naming it. The Avro decoders (Python and native) know the referenced named types. Against the real registry:
records written by confluent-kafka's serializers read back equal to its own deserializers' (its ProtobufSerializer
registers the imported files as subjects of their own). JSON Schema $refs to referenced schemas, and within them,
resolve for the reader's type as in the writer's validation."""

from __future__ import annotations

import base64
import io
import json

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor as F

from kafkasource.errors import OptionError
from kafkasource.formats.avro.decode import AvroDecoder
from kafkasource.formats.json_schema.decode import JsonSchemaDecoder
from kafkasource.formats.json_schema.schema import arrow_type as json_arrow_type
from kafkasource.formats.protobuf.decode import ProtobufDecoder
from kafkasource.formats.protobuf.schema import arrow_type, parse_file
from kafkasource.formats.registry import RegistrySchema, UnknownSchemaId, WriterSchemas, registry_config
from kafkasource.options import parse_options
from tests.support.query_helpers import base_options, batch
from tests.support.registry_helpers import decode, encode, produce_payloads

OPTIONAL = F.LABEL_OPTIONAL


def files(package: str) -> list[descriptor_pb2.FileDescriptorProto]:
    """<package>/currency.proto (an enum), <package>/money.proto importing it and a Timestamp, and
    <package>/order.proto importing money.proto: a chain of two references, one well-known import."""
    currency = descriptor_pb2.FileDescriptorProto(name=f"{package}/currency.proto", package=f"{package}.common",
                                                  syntax="proto3")
    code = currency.enum_type.add(name="Currency")
    for number, name in enumerate(["XXX", "EUR", "NOK"]):
        code.value.add(name=name, number=number)
    money = descriptor_pb2.FileDescriptorProto(
        name=f"{package}/money.proto", package=f"{package}.common", syntax="proto3",
        dependency=[f"{package}/currency.proto", "google/protobuf/timestamp.proto"])
    amount = money.message_type.add(name="Money")
    amount.field.add(name="units", number=1, type=F.TYPE_INT64, label=OPTIONAL)
    amount.field.add(name="currency", number=2, type=F.TYPE_ENUM, label=OPTIONAL,
                     type_name=f".{package}.common.Currency")
    amount.field.add(name="priced_at", number=3, type=F.TYPE_MESSAGE, label=OPTIONAL,
                     type_name=".google.protobuf.Timestamp")
    order = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                               dependency=[f"{package}/money.proto"])
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=F.TYPE_INT64, label=OPTIONAL)
    message.field.add(name="price", number=2, type=F.TYPE_MESSAGE, label=OPTIONAL,
                      type_name=f".{package}.common.Money")
    return [currency, money, order]


def serialized(proto: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.b64encode(proto.SerializeToString()).decode()


def order_class(package: str):
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for proto in files(package):
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Order"))


PRICE_TYPE = "struct<id:bigint,price:struct<units:bigint,currency:string,priced_at:timestamp>>"


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


MONEY = {"type": "record", "name": "Money", "namespace": "common",
         "fields": [{"name": "units", "type": "long"}, {"name": "currency", "type": "common.Currency"}]}
CURRENCY = {"type": "enum", "name": "Currency", "namespace": "common", "symbols": ["XXX", "EUR", "NOK"]}
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
                                                       {"name": "price", "type": ["null", "common.Money"]}]}
AVRO_REFERENCES = (("common.Currency", json.dumps(CURRENCY)), ("common.Money", json.dumps(MONEY)))


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


JSON_MONEY = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"units": {"type": "integer"}, "currency": {"$ref": "#/definitions/code"}},
              "definitions": {"code": {"type": "string", "enum": ["EUR", "NOK"]}}}
JSON_ORDER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"id": {"type": "integer"}, "price": {"$ref": "schemas/money.json"},
                             "refund": {"$ref": "#/definitions/refund"}},
              "definitions": {"refund": {"$ref": "schemas/money.json"}}}


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

@pytest.mark.spark  # starts the schema registry and Spark
def test_records_of_a_file_importing_registered_files_equal_confluent_kafkas_own_deserializer(
        spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("proto-refs"), partitions=1)
    Order = order_class("refs")
    client = SchemaRegistryClient({"url": schema_registry})
    # auto-registers refs/money.proto and refs/currency.proto as subjects of their own, named by the file
    serializer = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    messages = [Order(id=i, price={"units": i * 100, "currency": i % 3}) for i in range(40)]
    for i in range(0, 40, 3):
        messages[i].price.priced_at.FromMicroseconds(1_700_000_000_000_000 + i)
    payloads = [encode(serializer, topic, message) for message in messages]
    produce_payloads(kafka, topic, payloads)
    options = {"subscribe": topic, "startingOffsets": "earliest", "valueFormat": "protobuf",
               "schema.registry.url": schema_registry}

    reader = parse_options({**base_options(kafka), **options}).decoding.columns[0].reader
    assert [name for name, _ in reader.references] == ["refs/currency.proto", "refs/money.proto"]  # each after its own
    df = batch(spark, base_options(kafka, **options))
    assert df.schema["value"].dataType.simpleString() == PRICE_TYPE
    found = [row["value"].asDict(recursive=True) for row in df.orderBy("offset").collect()]

    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False})
    expected = []
    for payload in payloads:
        message = decode(deserializer, topic, payload)
        price = message.price
        expected.append({"id": message.id, "price": {
            "units": price.units, "currency": ["XXX", "EUR", "NOK"][price.currency],
            "priced_at": price.priced_at.ToMicroseconds() if price.HasField("priced_at") else None}})
    assert [{**row, "price": {**row["price"], "priced_at": None if row["price"]["priced_at"] is None else
                              round(row["price"]["priced_at"].timestamp() * 1_000_000)}} for row in found] == expected
    assert sum(row["price"]["priced_at"] is not None for row in found) == 14


@pytest.mark.spark  # starts the schema registry and Spark
def test_avro_records_using_types_of_referenced_subjects_equal_confluent_kafkas_own_deserializer(
        spark, kafka, schema_registry, read_path):
    topic = kafka.create_topic(kafka.unique_name(f"avro-refs-{read_path}"), partitions=1)
    client = SchemaRegistryClient({"url": schema_registry})
    client.register_schema(f"{topic}-currency", Schema(json.dumps(CURRENCY), "AVRO"))
    client.register_schema(f"{topic}-money", Schema(json.dumps(MONEY), "AVRO", references=[
        SchemaReference("common.Currency", f"{topic}-currency", 1)]))
    client.register_schema(f"{topic}-value", Schema(json.dumps(ORDER), "AVRO", references=[
        SchemaReference("common.Money", f"{topic}-money", 1)]))
    serializer = AvroSerializer(client, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    values = [{"id": i, "price": None if i % 4 == 0 else {"units": i * 10, "currency": CURRENCY["symbols"][i % 3]}}
              for i in range(30)]
    payloads = [encode(serializer, topic, value) for value in values]
    produce_payloads(kafka, topic, payloads)
    options = {"subscribe": topic, "startingOffsets": "earliest", "valueFormat": "avro", "readPath": read_path,
               "schema.registry.url": schema_registry}

    reader = parse_options({**base_options(kafka), **options}).decoding.columns[0].reader
    assert [name for name, _ in reader.references] == ["common.Currency", "common.Money"]  # each after its own
    df = batch(spark, base_options(kafka, **options))
    assert df.schema["value"].dataType.simpleString() == \
        "struct<id:bigint,price:struct<units:bigint,currency:string>>"
    found = [row["value"].asDict(recursive=True) for row in df.orderBy("offset").collect()]
    deserializer = AvroDeserializer(client)
    assert found == [decode(deserializer, topic, payload) for payload in payloads] == values


@pytest.mark.spark  # starts the schema registry and Spark
def test_json_records_referring_to_registered_schemas_equal_confluent_kafkas_own_deserializer(
        spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("json-refs"), partitions=1)
    client = SchemaRegistryClient({"url": schema_registry})
    client.register_schema(f"{topic}-money", Schema(json.dumps(JSON_MONEY), "JSON"))
    client.register_schema(f"{topic}-value", Schema(json.dumps(JSON_ORDER), "JSON", references=[
        SchemaReference("schemas/money.json", f"{topic}-money", 1)]))
    serializer = JSONSerializer(None, client, conf={"auto.register.schemas": False, "use.latest.version": True})
    values = [{"id": i, "price": {"units": i, "currency": ["EUR", "NOK"][i % 2]}, "refund": {"units": -i}}
              for i in range(20)]
    payloads = [encode(serializer, topic, value) for value in values]
    bad = payloads[0][:5] + json.dumps({"id": 99, "price": {"units": 1, "currency": "USD"}}).encode()
    produce_payloads(kafka, topic, payloads + [bad])

    df = batch(spark, base_options(kafka, subscribe=topic, startingOffsets="earliest", valueFormat="json-schema",
                                   onDecodeError="keep", **{"schema.registry.url": schema_registry}))
    assert df.schema["value"].dataType.simpleString() == \
        "struct<id:bigint,price:struct<units:bigint,currency:string>,refund:struct<units:bigint,currency:string>>"
    rows = [row.asDict(recursive=True) for row in df.orderBy("offset").collect()]

    deserializer = JSONDeserializer(None, schema_registry_client=client)
    assert [row["value"] for row in rows[:20]] == \
        [{**decode(deserializer, topic, p), "refund": {"units": -i, "currency": None}} for i, p in enumerate(payloads)]
    assert [row["value_error"] for row in rows[:20]] == [None] * 20
    assert (rows[20]["value"], rows[20]["value_error"]) == (None, (
        f"record does not match its writer schema {int.from_bytes(bad[1:5], 'big')}: at $.price.currency: 'USD' is "
        "not one of ['EUR', 'NOK']"))


@pytest.mark.spark  # starts the schema registry
def test_a_reference_deleted_from_the_registry_is_named_for_a_reader(schema_registry):
    client = SchemaRegistryClient({"url": schema_registry})
    client.register_schema("refs-gone-currency", Schema(json.dumps(CURRENCY), "AVRO"))
    client.register_schema("refs-gone-money", Schema(json.dumps(MONEY), "AVRO", references=[
        SchemaReference("common.Currency", "refs-gone-currency", 1)]))
    order_id = client.register_schema("refs-gone-value", Schema(json.dumps(ORDER), "AVRO", references=[
        SchemaReference("common.Money", "refs-gone-money", 1)]))
    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "schema.registry.url": schema_registry,
               "subscribe": "refs-gone", "valueFormat": "avro"}
    reader = parse_options(options).decoding.columns[0].reader
    assert [name for name, _ in reader.references] == ["common.Currency", "common.Money"]

    client.delete_subject("refs-gone-currency")
    client.delete_subject("refs-gone-currency", permanent=True)

    with pytest.raises(OptionError) as refused:
        parse_options(options)
    assert str(refused.value) == ("the value column's reader schema cannot be read: it references common.Currency "
                                  "as subject 'refs-gone-currency' version 1, which the registry does not have")
    # Apicurio stops serving a schema by id once a schema it references is gone: its records read as of an
    # unknown schema id (the decoders' reason), rather than failing the query as a lost reference would
    writers = WriterSchemas()
    with pytest.raises(UnknownSchemaId) as unknown:
        writers.get(registry_config({"schema.registry.url": schema_registry}), order_id)
    assert unknown.value.args == (order_id,)
