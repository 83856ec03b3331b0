"""keyFormat/valueFormat under every subscription mode, against the real registry, broker and Spark: records
written by confluent-kafka's own serializers in each format come back decoded, with the reader schemas of the
one topic's subjects (<topic>-key, <topic>-value) under subscribe and assign, and of the subjects named under
subscribePattern, which names no topic."""

from __future__ import annotations

import json
import re

import pytest
from confluent_kafka.serialization import MessageField

from tests.support.kafka_helpers import Record
from tests.support.query_helpers import batch
from tests.support.registry_helpers import encode, item_serializer, registry_options


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json-schema"])
@pytest.mark.parametrize("mode", ["subscribe", "subscribePattern", "assign"])
def test_every_subscription_mode_decodes_every_format(spark, kafka, schema_registry, mode, fmt):
    topic = kafka.create_topic(kafka.unique_name(f"modes-{mode}-{fmt}"), partitions=2)
    serializer = item_serializer(schema_registry, fmt)
    keys = [{"id": i, "name": f"key {i}"} for i in range(1, 5)]
    values = [{"id": 10 * i, "name": f"value {i}"} for i in range(1, 5)]
    produced = kafka.produce(topic, [Record(i % 2, encode(serializer, topic, key, MessageField.KEY),
                                            encode(serializer, topic, value))
                                     for i, (key, value) in enumerate(zip(keys, values, strict=True))])
    subscription = {"subscribe": {"subscribe": topic},
                    "subscribePattern": {"subscribePattern": f"^{re.escape(topic)}$",
                                         "keySubject": f"{topic}-key", "valueSubject": f"{topic}-value"},
                    "assign": {"assign": json.dumps({topic: [0, 1]})}}[mode]

    df = batch(spark, registry_options(kafka, schema_registry, keyFormat=fmt, valueFormat=fmt, **subscription))

    rows = sorted((r["partition"], r["offset"], r["key"].asDict(), r["value"].asDict(), bytes(r["value_raw"]))
                  for r in df.collect())
    assert rows == sorted((r.partition, r.offset, keys[i], values[i], r.value) for i, r in enumerate(produced))
