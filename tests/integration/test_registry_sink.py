"""valueFormat/keyFormat on the sink, against the real registry, broker and Spark: struct columns written in the
registry's wire format read back exactly by kafkasource's reader and field by field by confluent-kafka's own
deserializers; writer schemas fetched, or registered with auto.register.schemas, and the columns checked
against them on the driver; a row that does not fit fails its task, or goes to deadLetterTopic with its reason."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer

from tests.support.query_helpers import batch
from tests.support.registry_helpers import (
    avro_deserializer,
    decode,
    encode,
    json_deserializer,
    order_classes,
    registry_options,
)
from tests.support.sink_helpers import read_topic, write_batch

UTC = datetime.UTC
AT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)

AVRO_SCHEMA = {
    "type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
            {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
    ]}  # fmt: skip
AVRO_DDL = (
    "struct<id:bigint,note:string,amount:decimal(10,2),at:timestamp,tags:array<string>,"
    "address:struct<city:string,zip:string>,status:string>"
)
AVRO_VALUES = [
    {"id": 1, "note": "first", "amount": Decimal("12.30"), "at": AT, "tags": ["a", "b"],
     "address": {"city": "Oslo", "zip": "0150"}, "status": "NEW"},
    {"id": 2, "note": None, "amount": Decimal("-0.05"), "at": AT, "tags": [], "address": None, "status": "PAID"},
    {"id": 3, "note": "", "amount": Decimal("99999999.99"), "at": AT, "tags": ["c"],
     "address": {"city": "Lyon", "zip": None}, "status": "PAID"},
]  # fmt: skip

JSON_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "note": {"type": ["null", "string"]}, "total": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": ["null", "string"]}},
                    "required": ["city"]},
    },
    "required": ["id", "total", "tags"],
}  # fmt: skip
JSON_DDL = "struct<id:bigint,note:string,total:double,tags:array<string>,address:struct<city:string,zip:string>>"
JSON_VALUES = [
    {"id": 1, "note": "first", "total": 1.5, "tags": ["a"], "address": {"city": "Oslo", "zip": "0150"}},
    {"id": 2, "note": None, "total": -2.25, "tags": [], "address": None},
    {"id": 3, "note": "x", "total": 0.0, "tags": ["b", "c"], "address": {"city": "Lyon", "zip": None}},
]

# what JSONDeserializer reads of each: a null where the schema takes one, a property it does not require left out
JSON_DOCUMENTS = {
    1: JSON_VALUES[0],
    2: {"id": 2, "note": None, "total": -2.25, "tags": []},
    3: JSON_VALUES[2],
}
PROTO_DDL = (
    "struct<id:bigint,customer:string,address:struct<city:string,zip:string>,items:array<struct<sku:string,"
    "qty:int>>,counts:map<string,bigint>,status:string,at:timestamp,note:string,total:double,"
    "big:decimal(20,0),tags:array<string>>"
)
PROTO_VALUES = [
    {"id": 1, "customer": "c1", "address": {"city": "Oslo", "zip": "0150"}, "items": [{"sku": "s", "qty": 2}],
     "counts": {"k": 2**40}, "status": "PAID", "at": AT, "note": "gift", "total": 9.5, "big": Decimal(2**64 - 1),
     "tags": ["t"]},
    {"id": 2, "customer": "", "address": None, "items": [], "counts": {}, "status": "UNKNOWN", "at": None,
     "note": None, "total": 0.0, "big": Decimal(0), "tags": []},
]  # fmt: skip


def aware(value):
    """Spark's collect() gives timestamps as naive local times: as UTC instants, to compare."""
    if isinstance(value, dict):
        return {k: aware(v) for k, v in value.items()}
    if isinstance(value, list):
        return [aware(v) for v in value]
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return datetime.datetime.fromtimestamp(value.timestamp(), UTC)
    return value


def value_frame(spark, ddl: str, values: list[dict], key_ddl: str = "string", keys: list | None = None):
    keys = keys or [f"k{i}" for i in range(len(values))]
    rows = list(zip(keys, values, strict=True))
    return spark.createDataFrame(rows, f"key {key_ddl}, value {ddl}").coalesce(1)


def read_back(spark, kafka, registry: str, topic: str, **formats: str) -> list[dict]:
    df = batch(spark, registry_options(kafka, registry, subscribe=topic, startingOffsets="earliest", **formats))
    return [row.asDict(recursive=True) for row in df.orderBy("offset").collect()]


def protobuf_setup(registry: str, topic: str):
    """shop.Order registered under <topic>-value by confluent-kafka's own serializer (its Timestamp import too)."""
    Order, _refund = order_classes("sinkshop")
    client = SchemaRegistryClient({"url": registry})
    encode(ProtobufSerializer(Order, client, {"use.deprecated.format": False}), topic, Order(id=0))
    return Order, ProtobufDeserializer(Order, {"use.deprecated.format": False})


def proto_as_row(message) -> dict:
    """A message as confluent-kafka's deserializer gives it, in the DataFrame's terms."""
    has = message.HasField
    return {
        "id": message.id, "customer": message.customer,
        "address": {"city": message.address.city, "zip": message.address.zip} if has("address") else None,
        "items": [{"sku": i.sku, "qty": i.qty} for i in message.items], "counts": dict(message.counts),
        "status": message.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[message.status].name,
        "at": message.at.ToDatetime(tzinfo=UTC) if has("at") else None, "note": message.note if has("note") else None,
        "total": message.total, "big": Decimal(message.big), "tags": list(message.tags),
    }  # fmt: skip


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json-schema"])
def test_a_struct_value_round_trips_through_kafkasources_reader_and_confluent_kafkas_deserializer(
    spark, kafka, schema_registry, fmt, write_path
):
    topic = kafka.create_topic(kafka.unique_name(f"sink-{fmt}"), partitions=1)
    client = SchemaRegistryClient({"url": schema_registry})
    if fmt == "protobuf":
        _order, deserializer = protobuf_setup(schema_registry, topic)
        ddl, values, as_row = PROTO_DDL, PROTO_VALUES, proto_as_row
        extra = {"valueMessage": "sinkshop.Order"}
    else:
        schema = AVRO_SCHEMA if fmt == "avro" else JSON_SCHEMA
        client.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO" if fmt == "avro" else "JSON"))
        ddl, values, extra = (AVRO_DDL, AVRO_VALUES, {}) if fmt == "avro" else (JSON_DDL, JSON_VALUES, {})
        deserializer = avro_deserializer(schema_registry) if fmt == "avro" else json_deserializer(schema_registry)
        as_row = None
    options = registry_options(kafka, schema_registry, topic=topic, valueFormat=fmt, **extra, writePath=write_path)
    write_batch(value_frame(spark, ddl, values), options)

    records = read_topic(kafka, topic, 1)
    assert [(r[2], r[4], r[3][:1]) for r in records] == [(f"k{i}".encode(), (), b"\x00") for i in range(len(values))]
    for record, value in zip(records, values, strict=True):
        found = decode(deserializer, topic, record[3])
        assert (as_row(found) if as_row else found) == (JSON_DOCUMENTS[value["id"]] if fmt == "json-schema" else value)

    rows = read_back(spark, kafka, schema_registry, topic, valueFormat=fmt, **extra)
    assert [(row["key"], aware(row["value"])) for row in rows] == [
        (f"k{i}".encode(), value) for i, value in enumerate(values)
    ]


def test_auto_register_schemas_registers_derived_schemas_and_a_json_key_beside_an_avro_value_round_trips(
    spark, kafka, schema_registry
):
    topic = kafka.create_topic(kafka.unique_name("sink-auto"), partitions=1)
    df = value_frame(
        spark,
        "struct<id:bigint,tags:array<string>,at:timestamp>",
        [{"id": 1, "tags": ["a"], "at": AT}, {"id": 2, "tags": None, "at": None}],
        key_ddl="struct<customer:string,n:int>",
        keys=[{"customer": "c1", "n": 1}, {"customer": "c2", "n": None}],
    )
    options = registry_options(
        kafka, schema_registry, topic=topic, valueFormat="avro", keyFormat="json-schema",
        **{"auto.register.schemas": "true"},
    )
    write_batch(df, options)

    client = SchemaRegistryClient({"url": schema_registry})
    value_schema = json.loads(client.get_latest_version(f"{topic}-value").schema.schema_str)
    assert value_schema == {"type": "record", "name": "topLevelRecord", "fields": [
        {"name": "id", "type": ["null", "long"]},
        {"name": "tags", "type": ["null", {"type": "array", "items": ["null", "string"]}]},
        {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]}]}  # fmt: skip
    key_schema = json.loads(client.get_latest_version(f"{topic}-key").schema.schema_str)
    assert key_schema["properties"] == {"customer": {"type": ["null", "string"]}, "n": {"type": ["null", "integer"]}}
    rows = read_back(spark, kafka, schema_registry, topic, valueFormat="avro", keyFormat="json-schema")
    assert [(row["key"], aware(row["value"])) for row in rows] == [
        ({"customer": "c1", "n": 1}, {"id": 1, "tags": ["a"], "at": AT}),
        ({"customer": "c2", "n": None}, {"id": 2, "tags": None, "at": None}),
    ]


def test_the_driver_refuses_a_subject_without_schema_and_a_column_that_does_not_fit_naming_the_field(
    spark, kafka, schema_registry
):
    topic = kafka.unique_name("sink-refused")  # never created: nothing is written
    df = spark.createDataFrame([], f"value {AVRO_DDL}")
    options = registry_options(kafka, schema_registry, topic=topic, valueFormat="avro")
    with pytest.raises(Exception) as missing:
        write_batch(df, options)
    assert f"has no subject '{topic}-value' for the value column" in str(
        missing.value
    ) and "register the schema to write with under it, or set auto.register.schemas=true" in str(missing.value)

    SchemaRegistryClient({"url": schema_registry}).register_schema(
        f"{topic}-value", Schema(json.dumps(AVRO_SCHEMA), "AVRO")
    )
    wrong = spark.createDataFrame(
        [], AVRO_DDL.replace("id:bigint", "id:string").replace("status:string", "extra:int").join(["value ", ""])
    )
    with pytest.raises(Exception) as unfit:
        write_batch(wrong, options)
    assert (
        "the value column (struct<id:string,note:string,amount:decimal(10,2),at:timestamp,tags:array<string>,"
        "address:struct<city:string,zip:string>,extra:int>) does not fit its writer schema (id "
    ) in str(unfit.value)
    assert (
        "value.id is string, the schema's type there is bigint: CAST it to bigint; value.extra: the schema has "
        "no field extra (its fields: id, note, amount, at, tags, address, status); drop it, or register a schema "
        "version that has it; value.status: the schema's field status has no default and takes no null, and the "
        "column lacks it; add it to the struct"
    ) in str(unfit.value)
    write_batch(df, options)  # the schema's own type fits: the same options write (no rows)


def test_a_row_that_does_not_fit_fails_the_write_and_with_dead_letter_topic_lands_there_with_its_reason(
    spark, kafka, schema_registry
):
    topic = kafka.create_topic(kafka.unique_name("sink-bad"), partitions=1)
    dead = kafka.create_topic(kafka.unique_name("sink-dead"), partitions=1)
    SchemaRegistryClient({"url": schema_registry}).register_schema(
        f"{topic}-value", Schema(json.dumps(AVRO_SCHEMA), "AVRO")
    )
    bad = {**AVRO_VALUES[0], "id": 7, "amount": None}
    df = value_frame(spark, AVRO_DDL, [AVRO_VALUES[0], bad, AVRO_VALUES[1]])
    options = registry_options(kafka, schema_registry, topic=topic, valueFormat="avro")
    with pytest.raises(Exception) as failed:
        write_batch(df, options)
    assert (
        "cannot write row 1 of Spark partition 0: the value column does not fit its writer schema: value.amount: "
        "null for a non-nullable field. No record of its batch was written"
    ) in str(failed.value)
    assert read_topic(kafka, topic, 1) == []

    write_batch(
        df,
        {
            **options,
            "deadLetterTopic": dead,
            "deliveryGuarantee": "exactly-once",
            "transactionalIdPrefix": kafka.unique_name("sink-dead"),
        },
    )
    written = read_topic(kafka, topic, 1, read_committed=True)
    assert [decode(avro_deserializer(schema_registry), topic, r[3]) for r in written] == [
        AVRO_VALUES[0],
        AVRO_VALUES[1],
    ]
    assert [(r[2], r[4]) for r in written] == [(b"k0", ()), (b"k2", ())]
    [letter] = read_topic(kafka, dead, 1, read_committed=True)
    assert letter[2] == b"k1"
    assert json.loads(letter[3]) == {
        "id": 7,
        "note": "first",
        "at": "2024-05-06T07:08:09.123456+00:00",
        "tags": ["a", "b"],
        "address": {"city": "Oslo", "zip": "0150"},
        "status": "NEW",
    }
    assert letter[4] == (("kafkasource.column", b"value"), ("kafkasource.error", b"value.amount: null for a "
                         b"non-nullable field"), ("kafkasource.topic", topic.encode()))  # fmt: skip
