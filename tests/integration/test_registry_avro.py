"""valueFormat/keyFormat=avro against a real schema registry (Apicurio, dev/registry.py), a real broker and real
Spark: records written by confluent-kafka's own AvroSerializer come back as typed rows equal, field by field, to
what its own AvroDeserializer reads; writer versions mix in one topic; every kind of bad record fails the query
naming it, or is kept with its bytes and the reason."""

from __future__ import annotations

import datetime
import decimal
import json
import random
import uuid

import pytest

from dev import registry as local_registry
from tests.support.native_coverage import AVRO_READ_PATHS
from tests.support.query_helpers import available_now_failure, batch, stream
from tests.support.registry_helpers import (
    avro_deserializer,
    avro_serializer,
    decode,
    encode,
    produce_payloads,
    registered_id,
    registry_read,
)

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "amount", "type": "int"},
    {"name": "legacy", "type": "string"}]}
# v2: amount promoted to long, legacy removed, two fields added with defaults
ORDER_V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "amount", "type": "long"},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "channel", "type": "string", "default": "web"}]}

EVENT = {"type": "record", "name": "Event", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "name", "type": "string"},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "city", "type": "string"},
            {"name": "zip", "type": ["null", "string"], "default": None}]}}]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "counts", "type": {"type": "map", "values": "long"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "ref", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "score", "type": ["null", "double"], "default": None},
    {"name": "flag", "type": "boolean"},
    {"name": "blob", "type": ["null", "bytes"], "default": None}]}

UTC = datetime.UTC


@pytest.fixture(params=AVRO_READ_PATHS)
def avro_path(request) -> str:
    return request.param


def rows(spark, opts: dict) -> list[dict]:
    """Every row of a batch read, as plain Python values, in offset order per partition."""
    found = batch(spark, opts).collect()
    return [row.asDict(recursive=True) for row in sorted(found, key=lambda r: (r["partition"], r["offset"]))]


def plain(value):
    """Spark's and fastavro's values in one form: instants as epoch microseconds, UUIDs as text, bytes as bytes."""
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1_000_000)  # naive (Spark's, local time) and aware alike
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def event(rng: random.Random, i: int) -> dict:
    return {
        "id": i,
        "user": {"name": f"user{rng.randrange(1000)}",
                 "address": {"city": rng.choice(["Oslo", "Lyon", "Kyoto"]),
                             "zip": rng.choice([None, f"{rng.randrange(99999):05d}"])}},
        "tags": [f"t{rng.randrange(9)}" for _ in range(rng.randrange(4))],
        "items": [{"sku": f"s{rng.randrange(500)}", "qty": rng.randrange(-5, 50)} for _ in range(rng.randrange(3))],
        "counts": {f"c{j}": rng.randrange(-2**40, 2**40) for j in range(rng.randrange(3))},
        "price": decimal.Decimal(rng.randrange(-10**8, 10**8)).scaleb(-2),
        "day": datetime.date(2000, 1, 1) + datetime.timedelta(days=rng.randrange(20000)),
        "at_ms": datetime.datetime(2020, 1, 1, tzinfo=UTC) + datetime.timedelta(milliseconds=rng.randrange(10**11)),
        "at_us": datetime.datetime(2020, 1, 1, tzinfo=UTC) + datetime.timedelta(microseconds=rng.randrange(10**14)),
        "ref": str(uuid.UUID(int=rng.getrandbits(128))),
        "score": rng.choice([None, rng.uniform(-1e6, 1e6)]),
        "flag": rng.random() < 0.5,
        "blob": rng.choice([None, rng.randbytes(rng.randrange(6))]),
    }


# -- typed rows --------------------------------------------------------------------------------------------

def test_rows_equal_confluent_kafkas_own_deserializer_field_by_field(spark, kafka, schema_registry, avro_path):
    """2,000 generated records of nested records, arrays, maps, decimals, dates, timestamps, uuids and null
    unions, compared field by field with AvroDeserializer's reading of the same bytes."""
    topic = kafka.create_topic(kafka.unique_name("avro-rich"), partitions=1)
    serializer = avro_serializer(schema_registry, EVENT)
    rng = random.Random(26)
    payloads = [encode(serializer, topic, event(rng, i)) for i in range(2000)]
    produce_payloads(kafka, topic, payloads)
    deserializer = avro_deserializer(schema_registry)

    found = rows(spark, registry_read(kafka, schema_registry, topic, "avro", readPath=avro_path))

    assert len(found) == 2000
    for row, payload in zip(found, payloads, strict=True):
        assert row["value_raw"] == payload
        expected = decode(deserializer, topic, payload)
        assert plain(row["value"]) == plain(expected), row["offset"]


def test_two_writer_versions_in_one_topic_read_as_the_latest(spark, kafka, schema_registry, avro_path):
    """v1 records (int amount, a field v2 removed) and v2 records mixed: v1's read with v2's defaults and the
    promoted amount, as confluent-kafka's deserializer resolves them into v2."""
    topic = kafka.create_topic(kafka.unique_name("avro-evolve"), partitions=1)
    v1, v2 = avro_serializer(schema_registry, ORDER_V1), avro_serializer(schema_registry, ORDER_V2)
    payloads = [
        encode(v1, topic, {"id": 1, "customer": "ann", "amount": 5, "legacy": "x"}),
        encode(v2, topic, {"id": 2, "customer": "bob", "amount": 2**40, "note": "rush", "channel": "app"}),
        encode(v1, topic, {"id": 3, "customer": "cy", "amount": -7, "legacy": "y"}),
        encode(v2, topic, {"id": 4, "customer": "di", "amount": 0, "note": None, "channel": "shop"}),
    ]
    produce_payloads(kafka, topic, payloads)
    v1_id = registered_id(schema_registry, f"{topic}-value", 1)
    v2_id = registered_id(schema_registry, f"{topic}-value", 2)
    assert [int.from_bytes(p[1:5], "big") for p in payloads] == [v1_id, v2_id, v1_id, v2_id]

    found = [row["value"] for row in rows(spark, registry_read(kafka, schema_registry, topic, "avro",
                                                               readPath=avro_path))]

    assert found == [
        {"id": 1, "customer": "ann", "amount": 5, "note": None, "channel": "web"},
        {"id": 2, "customer": "bob", "amount": 2**40, "note": "rush", "channel": "app"},
        {"id": 3, "customer": "cy", "amount": -7, "note": None, "channel": "web"},
        {"id": 4, "customer": "di", "amount": 0, "note": None, "channel": "shop"},
    ]
    deserializer = avro_deserializer(schema_registry, ORDER_V2)
    assert found == [decode(deserializer, topic, p) for p in payloads]


def test_a_version_or_schema_id_fixes_an_older_reader_schema(spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("avro-version"), partitions=1)
    v1, v2 = avro_serializer(schema_registry, ORDER_V1), avro_serializer(schema_registry, ORDER_V2)
    produce_payloads(kafka, topic, [encode(v1, topic, {"id": 1, "customer": "ann", "amount": 5, "legacy": "x"}),
                                    encode(v2, topic, {"id": 2, "customer": "bob", "amount": 9, "channel": "app"})])
    v1_id = registered_id(schema_registry, f"{topic}-value", 1)

    by_version = batch(spark, registry_read(kafka, schema_registry, topic, "avro", valueSchemaVersion="1"))
    by_id = batch(spark, registry_read(kafka, schema_registry, topic, "avro", valueSchemaId=str(v1_id),
                                       onDecodeError="keep"))

    assert by_version.schema["value"].dataType.simpleString() == \
        "struct<id:bigint,customer:string,amount:int,legacy:string>"
    assert by_id.schema["value"].dataType == by_version.schema["value"].dataType
    # v2's amount is a long, which an int cannot hold, and legacy has no default: v2's record does not resolve
    kept = [row.asDict(recursive=True) for row in by_id.orderBy("offset").collect()]
    assert kept[0]["value"] == {"id": 1, "customer": "ann", "amount": 5, "legacy": "x"}
    assert kept[0]["value_error"] is None
    assert kept[1]["value"] is None
    v2_id = registered_id(schema_registry, f"{topic}-value", 2)
    assert kept[1]["value_error"].startswith(f"writer schema {v2_id} cannot be resolved into the reader schema: ")


def test_key_and_value_with_schemas_of_their_own_in_a_stream(spark, kafka, schema_registry, tmp_path, avro_path):
    """keyFormat and valueFormat each read with their own subject's schema (<topic>-key, <topic>-value), through
    a streaming query (Trigger.AvailableNow)."""
    topic = kafka.create_topic(kafka.unique_name("avro-key"), partitions=1)
    key_serializer = avro_serializer(schema_registry, {"type": "record", "name": "Key", "fields": [
        {"name": "region", "type": "string"}, {"name": "n", "type": "int"}]})
    value_serializer = avro_serializer(schema_registry, ORDER_V2)
    keys = [encode(key_serializer, topic, {"region": f"r{i}", "n": i}, "key") for i in range(3)]
    values = [encode(value_serializer, topic, {"id": i, "customer": f"c{i}", "amount": i * 10}) for i in range(3)]
    produce_payloads(kafka, topic, values, keys)

    collected = []
    query = (stream(spark, registry_read(kafka, schema_registry, topic, "avro", keyFormat="avro", readPath=avro_path))
             .writeStream.foreachBatch(lambda df, _: collected.extend(r.asDict(recursive=True) for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120)
        assert query.exception() is None
    finally:
        query.stop()

    found = sorted(collected, key=lambda row: row["offset"])
    assert [(row["key"], row["value"]["customer"], row["key_raw"], row["value_raw"]) for row in found] == [
        ({"region": f"r{i}", "n": i}, f"c{i}", keys[i], values[i]) for i in range(3)]


# -- bad records -------------------------------------------------------------------------------------------

UNKNOWN_ID = 987_654
INCOMPATIBLE = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"}]}  # id as a string: no Avro promotion makes it a long


def bad_topic(kafka, schema_registry) -> tuple[str, list[bytes], dict[str, int]]:
    """A topic holding a good record, then one record of each bad kind, each at a known offset (1..4)."""
    topic = kafka.create_topic(kafka.unique_name("avro-bad"), partitions=1)
    good = encode(avro_serializer(schema_registry, ORDER_V2), topic, {"id": 1, "customer": "ann", "amount": 5})
    # a schema registered under another subject, whose records cannot be resolved into the reader schema
    other = encode(avro_serializer(schema_registry, INCOMPATIBLE), f"{topic}-other", {"id": "x1"})
    payloads = [good,
                b"plain text, no prefix",
                b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + good[5:],
                other,
                good[:7]]  # the record cut short: malformed
    produce_payloads(kafka, topic, payloads)
    ids = {"good": int.from_bytes(good[1:5], "big"), "other": int.from_bytes(other[1:5], "big")}
    return topic, payloads, ids


def test_each_bad_record_fails_the_query_naming_topic_partition_offset_schema_id_and_reason(
        spark, kafka, schema_registry, tmp_path):
    topic, payloads, ids = bad_topic(kafka, schema_registry)
    cases = {
        1: f"cannot decode the value of the record at {topic}-0 offset 1 (no schema id): "
           "no schema-registry wire-format prefix",
        2: f"cannot decode the value of the record at {topic}-0 offset 2 (schema id {UNKNOWN_ID}): "
           f"unknown schema id {UNKNOWN_ID}",
        3: f"cannot decode the value of the record at {topic}-0 offset 3 (schema id {ids['other']}): "
           f"writer schema {ids['other']} cannot be resolved into the reader schema: ",
        4: f"cannot decode the value of the record at {topic}-0 offset 4 (schema id {ids['good']}): "
           "malformed Avro record: ",
    }
    for offset, message in cases.items():
        # the batch read from offset 0 to just past the bad record: the good one before it decodes, the bad fails
        opts = registry_read(kafka, schema_registry, topic, "avro", startingOffsets=json.dumps({topic: {"0": offset}}),
                             endingOffsets=json.dumps({topic: {"0": offset + 1}}))
        with pytest.raises(Exception) as failed:
            batch(spark, opts).collect()
        assert message in str(failed.value), (offset, str(failed.value)[:3000])
        assert "Set onDecodeError=keep" in str(failed.value)
    # a stream fails the same way, naming the first bad record
    failure = available_now_failure(spark, tmp_path / "cp", registry_read(kafka, schema_registry, topic, "avro"))
    assert cases[1] in failure
    assert "(3 more in this batch)" in failure


def test_keep_gives_a_null_value_the_bytes_and_the_reason_of_each_bad_record(spark, kafka, schema_registry,
                                                                              avro_path):
    topic, payloads, ids = bad_topic(kafka, schema_registry)

    found = rows(spark, registry_read(kafka, schema_registry, topic, "avro", onDecodeError="keep", readPath=avro_path))

    assert [row["value_raw"] for row in found] == payloads
    assert found[0]["value"] == {"id": 1, "customer": "ann", "amount": 5, "note": None, "channel": "web"}
    assert [row["value"] for row in found[1:]] == [None] * 4
    reasons = [row["value_error"] for row in found]
    assert reasons[:3] == [None, "no schema-registry wire-format prefix", f"unknown schema id {UNKNOWN_ID}"]
    assert reasons[3].startswith(f"writer schema {ids['other']} cannot be resolved into the reader schema: ")
    assert reasons[4].startswith("malformed Avro record: ")


def test_a_registry_that_is_down_fails_the_read_in_both_modes_naming_its_url_not_its_credentials(
        spark, kafka, tmp_path):
    """The reader schema is fetched when the query is defined; the registry stops before the executors ask it
    for the writer schema. That is an outage, not a bad record: keep fails too. The client retries within a
    bound (schema.registry.max.retries), then the error names the URL and never the password."""
    registry = local_registry.start(log_dir=tmp_path / "registry")
    try:
        topic = kafka.create_topic(kafka.unique_name("avro-down"), partitions=1)
        v1 = encode(avro_serializer(registry.url, ORDER_V1), topic, {"id": 1, "customer": "a", "amount": 1,
                                                                      "legacy": "x"})
        produce_payloads(kafka, topic, [v1])
        # v2 registered too: the latest, so the reader schema; v1's records need v1, which no executor has yet
        encode(avro_serializer(registry.url, ORDER_V2), topic, {"id": 2, "customer": "b", "amount": 2})
        secrets = {"schema.registry.basic.auth.user.info": "reader:s3cret-pw", "schema.registry.max.retries": "1",
                   "schema.registry.retries.wait.ms": "100"}
        frames = {mode: batch(spark, registry_read(kafka, registry.url, topic, "avro", onDecodeError=mode, **secrets))
                  for mode in ("fail", "keep")}
    finally:
        registry.stop()
    v1_id = int.from_bytes(v1[1:5], "big")
    for mode, df in frames.items():
        with pytest.raises(Exception) as failed:
            df.collect()
        message = str(failed.value)
        assert f"the schema registry at {registry.url} could not give writer schema {v1_id} (after 1 retries, " \
               "schema.registry.max.retries): ConnectError" in message, (mode, message[:3000])
        assert registry.url in message and "s3cret-pw" not in message, mode
