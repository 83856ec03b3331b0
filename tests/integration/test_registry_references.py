"""Schema references against the real registry: records written by confluent-kafka's serializers, whose schemas use
other subjects' (a Protobuf file's imports, which its ProtobufSerializer registers as subjects of their own; Avro
named types; JSON Schema $refs), read back equal to its own deserializers'; a reference deleted from the registry
is named for a reader."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from kafkasource.errors import OptionError
from kafkasource.formats.registry import UnknownSchemaId, WriterSchemas, registry_config
from kafkasource.options import parse_options
from tests.support.query_helpers import batch
from tests.support.reference_schemas import (
    CURRENCY,
    JSON_MONEY,
    JSON_ORDER,
    MONEY,
    ORDER,
    PRICE_TYPE,
    order_class,
)
from tests.support.registry_helpers import decode, encode, produce_payloads, registry_read


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
    options = registry_read(kafka, schema_registry, topic, "protobuf")

    reader = parse_options(options).decoding.columns[0].reader
    assert [name for name, _ in reader.references] == ["refs/currency.proto", "refs/money.proto"]  # each after its own
    df = batch(spark, options)
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
    options = registry_read(kafka, schema_registry, topic, "avro", readPath=read_path)

    reader = parse_options(options).decoding.columns[0].reader
    assert [name for name, _ in reader.references] == ["common.Currency", "common.Money"]  # each after its own
    df = batch(spark, options)
    assert df.schema["value"].dataType.simpleString() == \
        "struct<id:bigint,price:struct<units:bigint,currency:string>>"
    found = [row["value"].asDict(recursive=True) for row in df.orderBy("offset").collect()]
    deserializer = AvroDeserializer(client)
    assert found == [decode(deserializer, topic, payload) for payload in payloads] == values


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

    df = batch(spark, registry_read(kafka, schema_registry, topic, "json-schema", onDecodeError="keep"))
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
