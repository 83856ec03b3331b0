"""Producing records in a schema registry's wire format with confluent-kafka's own serializers, and reading
them back with its own deserializers, for the tests of valueFormat/keyFormat."""

from __future__ import annotations

import json
from collections.abc import Callable

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.kafka_helpers import KafkaHarness, Record
from tests.support.query_helpers import base_options


def registry_options(kafka: KafkaHarness, registry_url: str, **options: str) -> dict[str, str]:
    """The broker's and the registry's addresses, with `options`: what a read or a write in a registry format takes."""
    return base_options(kafka, **{"schema.registry.url": registry_url, **options})


def registry_read(kafka: KafkaHarness, registry_url: str, topic: str, value_format: str, **more: str) -> dict[str, str]:
    """The options of a read of `topic` from its start, its values in `value_format` (avro, protobuf, json-schema)
    with their schemas in the registry; `more` adds options or replaces these."""
    return registry_options(kafka, registry_url, **{"subscribe": topic, "startingOffsets": "earliest",
                                                     "valueFormat": value_format, **more})


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


def order_classes(package: str):
    """shop.Order (nested Item, enum Status, map counts, Address, a Timestamp, an optional note) and a Refund in
    one file, built as protoc would describe them."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
    from google.protobuf.descriptor import FieldDescriptor as F

    optional, repeated = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                              dependency=["google/protobuf/timestamp.proto"])
    address = file.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=F.TYPE_STRING, label=optional)
    address.field.add(name="zip", number=2, type=F.TYPE_STRING, label=optional)
    order = file.message_type.add(name="Order")
    item = order.nested_type.add(name="Item")
    item.field.add(name="sku", number=1, type=F.TYPE_STRING, label=optional)
    item.field.add(name="qty", number=2, type=F.TYPE_INT32, label=optional)
    entry = order.nested_type.add(name="CountsEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=optional)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=optional)
    status = order.enum_type.add(name="Status")
    for number, name in enumerate(["UNKNOWN", "PAID", "SHIPPED"]):
        status.value.add(name=name, number=number)
    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=optional)
    order.field.add(name="customer", number=2, type=F.TYPE_STRING, label=optional)
    order.field.add(name="address", number=3, type=F.TYPE_MESSAGE, label=optional, type_name=f".{package}.Address")
    order.field.add(name="items", number=4, type=F.TYPE_MESSAGE, label=repeated, type_name=f".{package}.Order.Item")
    order.field.add(name="counts", number=5, type=F.TYPE_MESSAGE, label=repeated,
                    type_name=f".{package}.Order.CountsEntry")
    order.field.add(name="status", number=6, type=F.TYPE_ENUM, label=optional, type_name=f".{package}.Order.Status")
    order.field.add(name="at", number=7, type=F.TYPE_MESSAGE, label=optional, type_name=".google.protobuf.Timestamp")
    order.oneof_decl.add(name="_note")
    order.field.add(name="note", number=8, type=F.TYPE_STRING, label=optional, oneof_index=0, proto3_optional=True)
    order.field.add(name="total", number=9, type=F.TYPE_DOUBLE, label=optional)
    order.field.add(name="big", number=10, type=F.TYPE_UINT64, label=optional)
    order.field.add(name="tags", number=11, type=F.TYPE_STRING, label=repeated)
    refund = file.message_type.add(name="Refund")
    refund.field.add(name="id", number=1, type=F.TYPE_STRING, label=optional)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Order")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Refund")))
