"""What the soak test writes and watches: the topic, a producer numbering each partition's records, the
group's committed offsets and the log ends, and the rows the ingest job's sink holds durably."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pyarrow.parquet as pq
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dev.submit import committed_files

TOPIC, PARTITIONS = "soak", 4
ANSWER_TIMEOUT_S = 300  # how long a question to the broker may keep failing: a restart on a loaded machine
QUIET = 2  # librdkafka logs only critical errors: refused connections while the broker restarts are expected
T = TypeVar("T")


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(60)


class SequenceProducer(threading.Thread):
    """Writes `rate` records a second round-robin over the partitions, partition p's values "p:0", "p:1", ...
    in order; idempotent with acks=all, so a broker restart neither loses nor repeats one (they wait in the
    client's queue meanwhile). `acked` maps (partition, offset) to the value the broker acknowledged there."""

    def __init__(self, bootstrap: str, rate: int):
        super().__init__(daemon=True)
        self.bootstrap, self.rate = bootstrap, rate
        self.acked: dict[tuple[int, int], str] = {}
        self.errors: list[str] = []
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join()

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(f"{msg.partition()}: {err.str()}")
        else:
            self.acked[(msg.partition(), msg.offset())] = msg.value().decode()

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 20, "message.timeout.ms": 600000, "log_level": QUIET})
        sequence, written, tick = [0] * PARTITIONS, 0, time.monotonic()
        per_tick = max(1, self.rate // 10)
        while not self._halt.is_set():
            for _ in range(per_tick):
                partition = written % PARTITIONS
                written += 1
                producer.produce(TOPIC, value=f"{partition}:{sequence[partition]}".encode(), partition=partition,
                                 on_delivery=self._delivered)
                sequence[partition] += 1
            producer.poll(0)
            tick += 0.1  # a schedule, so a slow moment is made up for and the rate holds
            self._halt.wait(max(0.0, tick - time.monotonic()))
        left = producer.flush(600)
        if left:
            self.errors.append(f"{left} records still unacknowledged 600 s after the producer stopped")


def retrying(what: str, ask: Callable[[], T]) -> T:
    """ask() until it answers without a Kafka error (bounded): the broker may be starting again."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        try:
            return ask()
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: no answer within {ANSWER_TIMEOUT_S} s: {exc}") from None
            time.sleep(1)


class GroupView:
    """The group's committed offsets and the topic's log ends, asked by a consumer that never joins the group."""

    def __init__(self, bootstrap: str, group: str):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "log_level": QUIET})
        self.partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]

    def committed(self) -> dict[int, int]:
        """partition -> committed offset (partitions without a commit left out)."""
        result = retrying("the group's committed offsets", lambda: self.consumer.committed(self.partitions, timeout=30))
        return {tp.partition: tp.offset for tp in result if tp.offset >= 0}

    def log_ends(self) -> dict[int, int]:
        return {tp.partition: retrying("the log end",
                                       lambda tp=tp: self.consumer.get_watermark_offsets(tp, timeout=30))[1]
                for tp in self.partitions}


class Sink:
    """The rows (partition, offset, value) in the files the file sink's log lists as committed. Each file is
    read once: a committed Parquet file never changes."""

    def __init__(self, output: Path):
        self.output = output
        self._files: dict[str, list[tuple[int, int, str]]] = {}

    def rows(self) -> list[tuple[int, int, str]]:
        files = committed_files(self.output)
        for path in files - self._files.keys():
            table = pq.read_table(path, columns=["kafka_partition", "kafka_offset", "value"])
            self._files[path] = list(zip(table.column("kafka_partition").to_pylist(),
                                         table.column("kafka_offset").to_pylist(), table.column("value").to_pylist(),
                                         strict=True))
        return [row for path in sorted(files) for row in self._files[path]]
