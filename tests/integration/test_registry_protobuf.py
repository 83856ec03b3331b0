"""valueFormat=protobuf against the real registry, broker and Spark: messages written by confluent-kafka's own
ProtobufSerializer (nested messages, repeated fields, maps, enums, a Timestamp, optional fields) come back
as typed rows equal, field by field, to what its own ProtobufDeserializer reads; bad records have their own
reasons."""

from __future__ import annotations

import random
from decimal import Decimal

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from google.protobuf.descriptor import FieldDescriptor as F

from tests.support.query_helpers import base_options, batch
from tests.support.registry_helpers import decode, encode, produce_payloads

OPTIONAL, REPEATED = F.LABEL_OPTIONAL, F.LABEL_REPEATED


def order_classes(package: str):
    """shop.Order (nested Item, enum Status, map counts, Address, a Timestamp, an optional note) and a Refund in
    one file, built as protoc would describe them."""
    file = descriptor_pb2.FileDescriptorProto(name=f"{package}/order.proto", package=package, syntax="proto3",
                                              dependency=["google/protobuf/timestamp.proto"])
    address = file.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=F.TYPE_STRING, label=OPTIONAL)
    address.field.add(name="zip", number=2, type=F.TYPE_STRING, label=OPTIONAL)
    order = file.message_type.add(name="Order")
    item = order.nested_type.add(name="Item")
    item.field.add(name="sku", number=1, type=F.TYPE_STRING, label=OPTIONAL)
    item.field.add(name="qty", number=2, type=F.TYPE_INT32, label=OPTIONAL)
    entry = order.nested_type.add(name="CountsEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT64, label=OPTIONAL)
    status = order.enum_type.add(name="Status")
    for number, name in enumerate(["UNKNOWN", "PAID", "SHIPPED"]):
        status.value.add(name=name, number=number)
    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=OPTIONAL)
    order.field.add(name="customer", number=2, type=F.TYPE_STRING, label=OPTIONAL)
    order.field.add(name="address", number=3, type=F.TYPE_MESSAGE, label=OPTIONAL, type_name=f".{package}.Address")
    order.field.add(name="items", number=4, type=F.TYPE_MESSAGE, label=REPEATED, type_name=f".{package}.Order.Item")
    order.field.add(name="counts", number=5, type=F.TYPE_MESSAGE, label=REPEATED,
                    type_name=f".{package}.Order.CountsEntry")
    order.field.add(name="status", number=6, type=F.TYPE_ENUM, label=OPTIONAL, type_name=f".{package}.Order.Status")
    order.field.add(name="at", number=7, type=F.TYPE_MESSAGE, label=OPTIONAL, type_name=".google.protobuf.Timestamp")
    order.oneof_decl.add(name="_note")
    order.field.add(name="note", number=8, type=F.TYPE_STRING, label=OPTIONAL, oneof_index=0, proto3_optional=True)
    order.field.add(name="total", number=9, type=F.TYPE_DOUBLE, label=OPTIONAL)
    order.field.add(name="big", number=10, type=F.TYPE_UINT64, label=OPTIONAL)
    order.field.add(name="tags", number=11, type=F.TYPE_STRING, label=REPEATED)
    refund = file.message_type.add(name="Refund")
    refund.field.add(name="id", number=1, type=F.TYPE_STRING, label=OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(file)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Order")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Refund")))


def order(Order, rng: random.Random, i: int):
    message = Order(id=i, customer=f"c{rng.randrange(999)}", total=rng.uniform(-1e4, 1e4),
                    big=rng.randrange(2**64), status=rng.randrange(3), tags=[f"t{rng.randrange(5)}"] * rng.randrange(3))
    if rng.random() < 0.8:
        message.address.city = rng.choice(["Oslo", "Lyon"])
        message.address.zip = rng.choice(["", "0150"])
    for _ in range(rng.randrange(3)):
        message.items.add(sku=f"s{rng.randrange(99)}", qty=rng.randrange(-3, 30))
    for j in range(rng.randrange(3)):
        message.counts[f"k{j}"] = rng.randrange(-2**40, 2**40)
    if rng.random() < 0.7:
        message.at.FromMicroseconds(rng.randrange(2 * 10**15))
    if rng.random() < 0.5:
        message.note = rng.choice(["", "gift"])
    return message


def expected_row(message) -> dict:
    """What the row must hold for a message as confluent-kafka's deserializer gives it."""
    return {
        "id": message.id, "customer": message.customer,
        "address": {"city": message.address.city, "zip": message.address.zip} if message.HasField("address")
        else None,
        "items": [{"sku": item.sku, "qty": item.qty} for item in message.items],
        "counts": dict(message.counts),
        "status": message.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[message.status].name,
        "at": message.at.ToMicroseconds() if message.HasField("at") else None,
        "note": message.note if message.HasField("note") else None,
        "total": message.total, "big": Decimal(message.big), "tags": list(message.tags),
    }


def spark_row(value: dict) -> dict:
    at = value["at"]
    return {**value, "at": None if at is None else round(at.timestamp() * 1_000_000)}


def test_rows_equal_confluent_kafkas_own_protobuf_deserializer_field_by_field(spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("proto-rich"), partitions=1)
    Order, Refund = order_classes("shop")
    client = SchemaRegistryClient({"url": schema_registry})
    serializer = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    rng = random.Random(26)
    payloads = [encode(serializer, topic, order(Order, rng, i)) for i in range(1500)]
    produce_payloads(kafka, topic, payloads)
    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False})

    df = batch(spark, base_options(kafka, **{"subscribe": topic, "startingOffsets": "earliest",
                                             "valueFormat": "protobuf", "valueMessage": "shop.Order",
                                             "schema.registry.url": schema_registry}))
    found = df.orderBy("offset").collect()

    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,customer:string,address:struct<city:string,zip:string>,items:array<struct<sku:string,"
        "qty:int>>,counts:map<string,bigint>,status:string,at:timestamp,note:string,total:double,"
        "big:decimal(20,0),tags:array<string>>")
    assert len(found) == 1500
    for row, payload in zip(found, payloads, strict=True):
        assert spark_row(row["value"].asDict(recursive=True)) == expected_row(decode(deserializer, topic, payload)), \
            row["offset"]


def test_bad_protobuf_records_each_keep_their_own_reason(spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("proto-bad"), partitions=1)
    Order, Refund = order_classes("shopbad")
    client = SchemaRegistryClient({"url": schema_registry})
    good = encode(ProtobufSerializer(Order, client, {"use.deprecated.format": False}), topic, Order(id=1))
    refund = encode(ProtobufSerializer(Refund, client, {"use.deprecated.format": False}), f"{topic}-refunds",
                    Refund(id="r1"))
    writer_id = int.from_bytes(refund[1:5], "big")
    values = [good, b"no prefix", b"\x00" + (987_003).to_bytes(4, "big") + good[5:], refund,
              good[:5] + b"\x02\x02" + b"\x0a\xff"]  # index [1]: Order; then a field cut short
    produce_payloads(kafka, topic, values)

    rows = [r.asDict(recursive=True) for r in batch(spark, base_options(kafka, **{
        "subscribe": topic, "startingOffsets": "earliest", "valueFormat": "protobuf", "onDecodeError": "keep",
        "valueMessage": "Order",
        "schema.registry.url": schema_registry})).orderBy("offset").collect()]

    assert rows[0]["value"]["id"] == 1 and rows[0]["value_error"] is None
    assert [r["value"] for r in rows[1:]] == [None] * 4
    reasons = [r["value_error"] for r in rows[1:]]
    assert reasons[:3] == ["no schema-registry wire-format prefix", "unknown schema id 987003",
                           f"writer schema {writer_id} cannot be resolved into the reader schema: the record is a "
                           "shopbad.Refund, the reader reads shopbad.Order"]
    assert reasons[3].startswith("malformed Protobuf record: ")
