"""Helpers for tests on the 3-node cluster (dev/kafka_cluster.py): replicated topics, their leaders and log
ends while leadership moves, each partition's end for read_committed consumers, and a fixture's cluster made
whole again."""

from __future__ import annotations

import logging
from datetime import datetime

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec

from tests.support.kafka_helpers import KafkaHarness, await_condition

log = logging.getLogger(__name__)


def partition_leaders(kafka: KafkaHarness, topic: str) -> dict[int, int]:
    return {p: meta.leader for p, meta in kafka.admin.list_topics(topic, timeout=10).topics[topic].partitions.items()}


def log_ends(kafka: KafkaHarness, topic: str, partitions: int, committed: bool = False) -> dict[int, int] | None:
    """Each partition's log end (committed: its last stable offset, where read_committed consumers stop), or None
    while a leader is still moving."""
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    try:  # a new client each time: one that saw the old leaders may keep their stale epochs
        fresh = KafkaHarness(kafka.bootstrap_servers)
        result = fresh.admin.list_offsets(request, isolation_level=level, request_timeout=10)
        return {tp.partition: future.result().offset for tp, future in result.items()}
    except KafkaException as exc:  # a leader still moving: ask again
        log.info("log ends not available yet: %s", exc)
        return None


def group_coordinator(kafka: KafkaHarness, group: str) -> int:
    description = kafka.admin.describe_consumer_groups([group])[group].result(30)
    return description.coordinator.id


def replicated_topic(kafka: KafkaHarness, hint: str, partitions: int, config: dict[str, str] | None = None) -> str:
    """A topic with 3 replicas (and `config`), once every partition has a leader."""
    topic = kafka.unique_name(hint)
    kafka.admin.create_topics([NewTopic(topic, partitions, 3, config=config or {})])[topic].result(30)
    await_condition("the topic's leaders", lambda: len(leaders := partition_leaders(kafka, topic)) == partitions
                    and all(leader >= 0 for leader in leaders.values()), timeout=60)
    return topic


def report(capsys, line: str, tag: str = "sink cluster") -> None:
    """A figure for docs/testing.md, shown in the run's output whether or not pytest captures it."""
    log.info(line)
    with capsys.disabled():
        print(f"\n[{tag}] {line}")


def triggers(progress: list) -> tuple[float, float, int, dict]:
    """A query's longest trigger and longest time between two batches' starts, in seconds, its batches, and where
    the longest trigger's time went (its progress's durationMs)."""
    batches = sorted(progress, key=lambda p: p["batchId"])
    worst = max(batches, key=lambda p: p["durationMs"]["triggerExecution"])
    starts = [datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() for p in batches]
    gap = max((b - a for a, b in zip(starts, starts[1:], strict=False)), default=0.0)
    return worst["durationMs"]["triggerExecution"] / 1000, gap, len(batches), dict(worst["durationMs"])
