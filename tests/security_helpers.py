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
from tests.query_helpers import Collector

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
