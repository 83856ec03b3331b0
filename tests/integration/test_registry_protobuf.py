"""valueFormat=protobuf against the real registry, broker and Spark: messages written by confluent-kafka's own
ProtobufSerializer (nested messages, repeated fields, maps, enums, a Timestamp, optional fields) come back
as typed rows equal, field by field, to what its own ProtobufDeserializer reads; bad records have their own
reasons."""

from __future__ import annotations

import random
from decimal import Decimal

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from tests.support.query_helpers import batch
from tests.support.registry_helpers import decode, encode, order_classes, produce_payloads, registry_read


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

    df = batch(spark, registry_read(kafka, schema_registry, topic, "protobuf", valueMessage="shop.Order"))
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

    rows = [r.asDict(recursive=True) for r in batch(spark, registry_read(
        kafka, schema_registry, topic, "protobuf", onDecodeError="keep", valueMessage="Order")).orderBy(
        "offset").collect()]

    assert rows[0]["value"]["id"] == 1 and rows[0]["value_error"] is None
    assert [r["value"] for r in rows[1:]] == [None] * 4
    reasons = [r["value_error"] for r in rows[1:]]
    assert reasons[:3] == ["no schema-registry wire-format prefix", "unknown schema id 987003",
                           f"writer schema {writer_id} cannot be resolved into the reader schema: the record is a "
                           "shopbad.Refund, the reader reads shopbad.Order"]
    assert reasons[3].startswith("malformed Protobuf record: ")
