"""Producing records in a schema registry's wire format with confluent-kafka's own serializers, and reading
them back with its own deserializers, for the tests of valueFormat/keyFormat."""

from __future__ import annotations

import json
from collections.abc import Callable

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.kafka_helpers import KafkaHarness, Record


def avro_serializer(registry_url: str, schema: dict | str) -> AvroSerializer:
    """confluent-kafka's serializer; it registers the schema under the topic's subject on first use."""
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return AvroSerializer(SchemaRegistryClient({"url": registry_url}), text, conf={"auto.register.schemas": True})


def avro_deserializer(registry_url: str, reader: dict | str | None = None) -> AvroDeserializer:
    text = reader if reader is None or isinstance(reader, str) else json.dumps(reader)
    return AvroDeserializer(SchemaRegistryClient({"url": registry_url}), text)


def encode(serializer: Callable, topic: str, value: object, field: str = MessageField.VALUE) -> bytes:
    return serializer(value, SerializationContext(topic, field))


def decode(deserializer: Callable, topic: str, payload: bytes, field: str = MessageField.VALUE) -> object:
    return deserializer(payload, SerializationContext(topic, field))


def produce_payloads(kafka: KafkaHarness, topic: str, values: list[bytes | None], keys: list | None = None,
                     partition: int = 0) -> list[Record]:
    """Already encoded values (and keys) into one partition, in order; the acknowledged records."""
    keys = keys or [None] * len(values)
    return kafka.produce(topic, [Record(partition, key, value) for key, value in zip(keys, values, strict=True)])


def registered_id(registry_url: str, subject: str, version: int | None = None) -> int:
    client = SchemaRegistryClient({"url": registry_url})
    found = client.get_latest_version(subject) if version is None else client.get_version(subject, version)
    return found.schema_id


# one record, {"id": long, "name": string}, in each format: struct<id:bigint,name:string> in Spark
ITEM_SCHEMAS = {
    "avro": {"type": "record", "name": "Item", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]},
    "json-schema": {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Item", "type": "object",
                    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                    "required": ["id", "name"]},
}


def item_serializer(registry_url: str, fmt: str) -> Callable:
    """confluent-kafka's own serializer of an {"id", "name"} item in `fmt` (avro, protobuf or json-schema), taking the
    item as a dict; it registers the schema under the subject of the topic and field it serializes for."""
    if fmt == "avro":
        return avro_serializer(registry_url, ITEM_SCHEMAS["avro"])
    if fmt == "json-schema":
        return json_serializer(registry_url, ITEM_SCHEMAS["json-schema"])
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    Item = protobuf_item_class()
    serializer = ProtobufSerializer(Item, SchemaRegistryClient({"url": registry_url}), {"use.deprecated.format": False})
    return lambda item, context: serializer(Item(**item), context)


def protobuf_item_class():
    """shop.Item {int64 id = 1; string name = 2;} in a file shop/item.proto, as protoc would describe it."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.descriptor import FieldDescriptor as F

    file = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop", syntax="proto3")
    item = file.message_type.add(name="Item")
    item.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    item.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Item"))


def json_serializer(registry_url: str, schema: dict):
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    return JSONSerializer(json.dumps(schema), SchemaRegistryClient({"url": registry_url}),
                          conf={"auto.register.schemas": True})


def json_deserializer(registry_url: str):
    """confluent-kafka's JSONDeserializer with the writer schema from the registry (it validates against it)."""
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer

    return JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": registry_url}))
