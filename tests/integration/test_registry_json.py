"""valueFormat/keyFormat=json-schema (JSON Schema) against the real registry, broker and Spark: records written by
confluent-kafka's own JSONSerializer come back as typed rows equal, field by field, to what its own
JSONDeserializer reads; each kind of bad record has its own reason."""

from __future__ import annotations

import random

from tests.support.query_helpers import batch
from tests.support.registry_helpers import (
    avro_serializer,
    decode,
    encode,
    json_deserializer,
    json_serializer,
    produce_payloads,
    registered_id,
    registry_read,
)

SHIPMENT = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Shipment", "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "carrier": {"type": "string"},
        "weight": {"type": "number"},
        "fragile": {"type": "boolean"},
        "note": {"type": ["null", "string"]},
        "to": {"$ref": "#/definitions/Address"},
        "parcels": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "count": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["id", "carrier"],
    "definitions": {"Address": {"type": "object", "properties": {
        "city": {"type": "string"}, "zip": {"oneOf": [{"type": "null"}, {"type": "string"}]}}}},
}


def shipment(rng: random.Random, i: int) -> dict:
    value = {"id": i, "carrier": rng.choice(["dhl", "ups", "post"]), "weight": rng.uniform(0, 99),
             "fragile": rng.random() < 0.5, "note": rng.choice([None, f"note {i}"]),
             "to": {"city": rng.choice(["Oslo", "Lyon"]), "zip": rng.choice([None, "0150"])},
             "parcels": [{"sku": f"s{rng.randrange(99)}", "count": rng.randrange(1, 9)}
                         for _ in range(rng.randrange(3))],
             "labels": {f"l{j}": f"v{rng.randrange(9)}" for j in range(rng.randrange(3))}}
    for optional in ("weight", "note", "to", "labels"):  # properties that are not required may be missing
        if rng.random() < 0.1:
            del value[optional]
    return value


def test_rows_equal_confluent_kafkas_own_json_deserializer_field_by_field(spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("json-rich"), partitions=1)
    serializer = json_serializer(schema_registry, SHIPMENT)
    rng = random.Random(26)
    payloads = [encode(serializer, topic, shipment(rng, i)) for i in range(1500)]
    produce_payloads(kafka, topic, payloads)
    deserializer = json_deserializer(schema_registry)

    found = batch(spark, registry_read(kafka, schema_registry, topic, "json-schema")).orderBy("offset").collect()

    assert batch(spark, registry_read(kafka, schema_registry, topic, "json-schema")).schema[
        "value"].dataType.simpleString() == (
        "struct<id:bigint,carrier:string,weight:double,fragile:boolean,note:string,to:struct<city:string,"
        "zip:string>,parcels:array<struct<sku:string,count:bigint>>,labels:map<string,string>>")
    assert len(found) == 1500
    for row, payload in zip(found, payloads, strict=True):
        expected = decode(deserializer, topic, payload)
        got = row["value"].asDict(recursive=True)
        assert bytes(row["value_raw"]) == payload
        assert got == {name: expected.get(name) for name in SHIPMENT["properties"]} | {
            "to": None if "to" not in expected else {"city": expected["to"].get("city"),
                                                     "zip": expected["to"].get("zip")}}, row["offset"]


def test_avro_key_and_json_value_and_each_bad_json_record_kept_with_its_reason(spark, kafka, schema_registry):
    topic = kafka.create_topic(kafka.unique_name("json-bad"), partitions=1)
    key_serializer = avro_serializer(schema_registry, {"type": "record", "name": "Key", "fields": [
        {"name": "region", "type": "string"}]})
    good = encode(json_serializer(schema_registry, SHIPMENT), topic, {"id": 1, "carrier": "dhl"})
    writer_id = registered_id(schema_registry, f"{topic}-value")
    prefix = good[:5]
    text_ids = {"type": "object", "properties": {"id": {"type": "string"}, "carrier": {"type": "string"}}}
    other = encode(json_serializer(schema_registry, text_ids), f"{topic}-other", {"id": "five", "carrier": "ups"})
    values = [good,
              b'{"id": 2, "carrier": "ups"}',  # no prefix
              b"\x00" + (987_002).to_bytes(4, "big") + good[5:],  # an id the registry lacks
              prefix + b'{"id": "three", "carrier": "ups"}',  # breaks its writer schema
              prefix + b'{"id": 4, "carrier": ',  # not JSON
              other,  # valid for its own writer schema, whose id is a string: not the reader's integer
              ]
    keys = [encode(key_serializer, topic, {"region": f"r{i}"}, "key") for i in range(len(values))]
    produce_payloads(kafka, topic, values, keys)

    rows = [r.asDict(recursive=True) for r in batch(spark, registry_read(
        kafka, schema_registry, topic, "json-schema", keyFormat="avro", onDecodeError="keep")).orderBy(
        "offset").collect()]

    assert [r["key"] for r in rows] == [{"region": f"r{i}"} for i in range(6)]
    assert [r["key_error"] for r in rows] == [None] * 6
    assert rows[0]["value"]["id"] == 1 and rows[0]["value"]["carrier"] == "dhl" and rows[0]["value_error"] is None
    assert [r["value"] for r in rows[1:]] == [None] * 5
    reasons = [r["value_error"] for r in rows[1:]]
    assert reasons[:3] == ["no schema-registry wire-format prefix", "unknown schema id 987002",
                           f"record does not match its writer schema {writer_id}: at $.id: 'three' is not of "
                           "type 'integer'"]
    assert reasons[3].startswith("malformed JSON record: ")
    assert reasons[4] == (f"writer schema {int.from_bytes(other[1:5], 'big')} cannot be resolved into the reader "
                          "schema: $.id is a string, the reader schema wants an integer")
    assert [bytes(r["value_raw"]) for r in rows] == values
