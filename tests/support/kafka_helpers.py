"""Test helpers that talk to the real local broker through the real confluent-kafka client."""

from __future__ import annotations

import itertools
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec

from dev.process import wait

# what a group's coordinator answers while it moves to another node
COORDINATOR_MOVING = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                      KafkaError.COORDINATOR_LOAD_IN_PROGRESS}


def await_condition(what: str, condition: Callable[[], object], query=None, timeout: float = 60):
    """Poll `condition` (dev.process.wait) until it returns something truthy, which is returned; fail after `timeout`
    seconds naming `what`, or at once once `query` failed."""
    def met():
        result = condition()
        if not result and query is not None and query.exception() is not None:
            raise AssertionError(f"query failed while waiting for {what}: {query.exception()}")
        return result

    result = wait(met, timeout)
    if not result:
        raise AssertionError(f"timed out after {timeout} s waiting for {what}{query_state(query)}")
    return result


def query_state(query) -> str:
    """Where a streaming query stood, for a timeout's message: its status and the last batch's progress (which
    batch, how many rows, how long its phases took, the offsets it ended at)."""
    if query is None:
        return ""
    progress = query.lastProgress or {}
    sources = [(s.get("startOffset"), s.get("endOffset")) for s in progress.get("sources", [])]
    return (
        f"; the query's status: {query.status}; its last batch: {progress.get('batchId')} at "
        f"{progress.get('timestamp')}, {progress.get('numInputRows')} rows, durations {progress.get('durationMs')}, "
        f"offsets {sources}"
    )


def described_group(broker, group: str) -> list[tuple[int, int, int, int]]:
    """(partition, current offset, log end, lag) of each partition as Kafka's own kafka-consumer-groups
    --describe prints them for the group, on a dev.broker Broker."""
    out = broker.consumer_groups("--describe", "--group", group)
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    lines = [line.split() for line in out.splitlines() if line.startswith(group)]
    return sorted((int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in lines)


@dataclass(frozen=True)
class Record:
    """One record to produce, or one record read back."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None
    topic: str = ""
    offset: int = -1


@dataclass
class KafkaHarness:
    bootstrap_servers: str
    admin: AdminClient = field(init=False)
    _counter: itertools.count = field(default_factory=itertools.count, init=False)

    def __post_init__(self) -> None:
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def unique_name(self, hint: str = "t") -> str:
        """A topic or group name no other test uses."""
        clean = re.sub(r"[^a-zA-Z0-9._-]", "-", hint)[:60]
        return f"{clean}-{next(self._counter)}-{uuid.uuid4().hex[:6]}"

    def create_topic(self, name: str, partitions: int = 3, config: dict[str, str] | None = None) -> str:
        futures = self.admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
        futures[name].result(30)
        # wait until metadata shows every partition with a leader, so producing never races creation; a busy
        # broker answers at once that the leaders are not elected yet, so the wait is for a time, not a count
        deadline = time.monotonic() + 60
        while True:
            topic = self.admin.list_topics(name, timeout=10).topics.get(name)
            if (
                topic
                and topic.error is None
                and len(topic.partitions) == partitions
                and all(p.error is None and p.leader >= 0 for p in topic.partitions.values())
            ):
                return name
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} did not appear in metadata with a leader for each partition "
                                     f"within 60 s: {topic.error if topic else 'not listed'}")
            time.sleep(0.1)

    def add_partitions(self, name: str, total: int) -> None:
        self.admin.create_partitions([NewPartitions(name, total)])[name].result(30)

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topics([name])[name].result(30)

    def producer(self, **config) -> Producer:
        return Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5, **config})

    def produce(self, topic: str, records: list[Record], **config) -> list[Record]:
        """Produce records, wait for every acknowledgement, and return them with topic and offset."""
        producer = self.producer(**config)
        delivered: dict[int, Record] = {}
        errors = []

        for index, record in enumerate(records):
            def on_delivery(err, msg, index=index, record=record):
                if err is not None:
                    errors.append(err)
                else:
                    delivered[index] = Record(msg.partition(), record.key, record.value, record.headers,
                                              msg.timestamp()[1], msg.topic(), msg.offset())

            kwargs = {"partition": record.partition, "key": record.key, "value": record.value,
                      "on_delivery": on_delivery}
            if record.headers:
                kwargs["headers"] = list(record.headers)
            if record.timestamp_ms is not None:
                kwargs["timestamp"] = record.timestamp_ms
            producer.produce(topic, **kwargs)
            producer.poll(0)
        # a bound, not a wait: on a busy machine a topic of many new partitions takes long to elect their leaders
        remaining = producer.flush(120)
        assert remaining == 0 and not errors, f"produce failed: {errors}, {remaining} unsent"
        return [delivered[i] for i in range(len(records))]

    def produce_values(self, topic: str, count: int, partitions: int = 1, prefix: str = "v") -> list[Record]:
        """`count` records spread round-robin over `partitions`, keys k<i>, values <prefix><i>."""
        return self.produce(topic, [Record(i % partitions, f"k{i}".encode(), f"{prefix}{i}".encode())
                                    for i in range(count)])

    def consumer(self, group_id: str | None = None, **config) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap_servers,
                         "group.id": group_id or self.unique_name("harness-group"),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **config})

    def read_all(self, topic: str, partitions: int, expected: int, **config) -> list[Record]:
        """Read every partition from offset 0 with assign+seek until `expected` records arrived."""
        consumer = self.consumer(**config)
        try:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
            out: list[Record] = []
            for _ in range(200):
                for msg in consumer.consume(1000, timeout=0.5):
                    if msg.error():
                        raise KafkaException(msg.error())
                    out.append(Record(msg.partition(), msg.key(), msg.value(), tuple(msg.headers() or ()),
                                      msg.timestamp()[1], msg.topic(), msg.offset()))
                if len(out) >= expected:
                    return out
            raise AssertionError(f"read {len(out)} of {expected} records from {topic}")
        finally:
            consumer.close()

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int], metadata: str | None = None) -> None:
        consumer = self.consumer(group_id)
        try:
            with_metadata = {"metadata": metadata} if metadata is not None else {}  # the client refuses None
            consumer.commit(offsets=[TopicPartition(t, p, o, **with_metadata) for (t, p), o in offsets.items()],
                            asynchronous=False)
        finally:
            consumer.close()

    def committed(self, group_id: str, topic: str, partitions: int, timeout: float = 30) -> dict[int, int]:
        """The group's committed offsets for the topic (partitions without a commit are left out), asked again
        within `timeout` while the group's coordinator moves (a node of a cluster stopping or starting)."""
        deadline = time.monotonic() + timeout
        consumer = self.consumer(group_id)
        try:
            while True:
                try:
                    result = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
                    return {tp.partition: tp.offset for tp in result if tp.offset >= 0}
                except KafkaException as exc:
                    if exc.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                        raise
                time.sleep(0.5)
        finally:
            consumer.close()

    def offsets(self, topic: str, partitions: int, spec: OffsetSpec) -> dict[int, int]:
        request = {TopicPartition(topic, p): spec for p in range(partitions)}
        result = self.admin.list_offsets(request, request_timeout=10)
        return {tp.partition: future.result().offset for tp, future in result.items()}

    def earliest(self, topic: str, partitions: int) -> dict[int, int]:
        return self.offsets(topic, partitions, OffsetSpec.earliest())

    def latest(self, topic: str, partitions: int) -> dict[int, int]:
        return self.offsets(topic, partitions, OffsetSpec.latest())

    def delete_records_before(self, topic: str, partition: int, offset: int) -> None:
        futures = self.admin.delete_records([TopicPartition(topic, partition, offset)])
        for future in futures.values():
            future.result(30)


class SequenceProducer:
    """Produces 0, 1, 2, ... round-robin over the partitions, acks=all, idempotent, at a modest bounded rate."""

    def __init__(self, kafka: KafkaHarness, topic: str, partitions: int, per_second: int = 100):
        self.kafka, self.topic, self.partitions, self.per_second = kafka, topic, partitions, per_second
        # (partition, offset, value); the offset is None where the broker acknowledged a retried send of an
        # idempotent producer as a duplicate of one it had written, which happens when a leader dies mid-request
        self.acknowledged: list[tuple[int, int | None, bytes]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(120)

    def _run(self) -> None:
        producer = self.kafka.producer(**{"acks": "all", "enable.idempotence": True, "message.timeout.ms": 120000})

        def on_delivery(err, msg):
            if err is not None:
                self.errors.append(err.str())
            else:
                self.acknowledged.append((msg.partition(), msg.offset(), msg.value()))

        sequence = 0
        while not self._stop.wait(0.1):
            for _ in range(self.per_second // 10):
                producer.produce(self.topic, value=f"seq{sequence}".encode(), partition=sequence % self.partitions,
                                 on_delivery=on_delivery)
                sequence += 1
            producer.poll(0)
        assert producer.flush(120) == 0
        self.sent = sequence

    def values_in_order(self, partition: int) -> list[bytes]:
        """The acknowledged values of a partition in the order they were produced (their log order: one idempotent
        producer), by the sequence number they carry, since an acknowledgement may come without an offset."""
        values = [value for p, _, value in self.acknowledged if p == partition]
        return sorted(values, key=lambda value: int(value.removeprefix(b"seq")))
