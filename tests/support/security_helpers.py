"""Secured brokers for tests: their users' passwords, and what tests do with them.

The brokers themselves are session fixtures in conftest.py (`sasl`, `certificates`, `ssl`): started once
for every test module that uses them.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dev import secure_broker
from tests.support.query_helpers import Collector
from tests.support.sink_helpers import read_topic, write_batch

PASSWORDS = {user: f"{user}-pw-{secrets.token_hex(10)}" for user in ("admin", "alice", "bob", "carol")}
WRONG_PASSWORD = f"wrong-pw-{secrets.token_hex(10)}"

def topic_with_records(broker, name: str, count: int = 20, partitions: int = 2) -> list[tuple[int, int, bytes]]:
    """A new topic holding `count` records spread over its partitions, as (partition, offset, value)."""
    admin = AdminClient(broker.client_config())
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    producer = Producer(broker.client_config())
    for i in range(count):
        producer.produce(name, value=b"v%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0
    return [(i % partitions, i // partitions, b"v%d" % i) for i in range(count)]


class AsAdmin:
    """Clients of a secured broker as its super user (the admin's SCRAM credentials, or its certificate):
    tests.support.sink_helpers.read_topic reads what a write landed with them."""

    def __init__(self, broker) -> None:
        self.broker = broker

    def consumer(self, **config) -> Consumer:
        return Consumer({**self.broker.client_config(), "group.id": f"admin-reader-{secrets.token_hex(4)}",
                         "enable.auto.commit": False, **config})


def written_by_the_sink(spark, broker, topic: str, options: dict[str, str], count: int = 20,
                        partitions: int = 2) -> list[tuple[int, int, bytes]]:
    """What topic_with_records produces (values v0, v1, ... spread over the partitions), written into the existing
    `topic` by the sink with `options` (its brokers and credentials); what the topic holds, read back as the
    admin, asserted to be exactly that. Returns the records as (partition, offset, value)."""
    df = spark.createDataFrame([(b"v%d" % i, i % partitions) for i in range(count)], "value binary, partition int")
    write_batch(df.coalesce(1), {**options, "topic": topic})
    written = [(i % partitions, i // partitions, b"v%d" % i) for i in range(count)]
    assert read_topic(AsAdmin(broker), topic, partitions) == sorted((p, o, None, v, ()) for p, o, v in written)
    return written


def sasl_options(broker, user: str, password: str, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": secure_broker.MECHANISM, "kafka.sasl.username": user,
            "kafka.sasl.password": password, **extra}


def committed(broker, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({**broker.client_config(), "group.id": group})
    try:
        found = consumer.committed([KafkaTopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def rows(collector: Collector) -> list[tuple[int, int, bytes]]:
    return sorted((partition, offset, value) for _topic, partition, offset, _key, value, *_ in collector.rows)


def files_under(directory: Path) -> dict[Path, bytes]:
    """Every file's bytes; a Parquet file's decoded rows follow its bytes, as its pages are compressed (snappy)."""
    contents = {}
    for path in directory.rglob("*"):
        if path.is_file():
            decoded = str(pq.read_table(path).to_pylist()).encode() if path.suffix == ".parquet" else b""
            contents[path] = path.read_bytes() + decoded
    return contents


def holding(text: str, contents: dict) -> set:
    """The keys of `contents` whose bytes hold `text`."""
    return {where for where, content in contents.items() if text.encode() in content}
