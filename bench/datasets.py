"""The benchmark's fixed data sets, produced once per run into a local broker.

Values are incompressible (random bytes) unless a set says otherwise: compressible test data hides
fetch-path costs, since the broker then ships a fraction of the bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

VALUE_POOL = 4096  # distinct random values cycled through: more than lz4's 64 KB window can match


@dataclass(frozen=True)
class DataSet:
    name: str
    partitions: int
    records_per_partition: int
    value_bytes: int
    compression: str = "none"  # the producer's compression.type
    compressible: bool = False  # values half random, half a repeated byte

    @property
    def records(self) -> int:
        return self.partitions * self.records_per_partition

    @property
    def payload_bytes(self) -> int:
        return self.records * self.value_bytes

    def scaled(self, scale: float) -> DataSet:
        """The same shape with `scale` times the records per partition (at least one)."""
        per_partition = max(1, round(self.records_per_partition * scale))
        return DataSet(self.name, self.partitions, per_partition, self.value_bytes, self.compression,
                       self.compressible)

    def describe(self) -> str:
        kind = f"lz4, {'compressible' if self.compressible else 'random'}" if self.compression != "none" \
            else "random"
        return (f"{self.partitions} × {self.records_per_partition:,} × {_size(self.value_bytes)} ({kind})")


def _size(n: int) -> str:
    return f"{n // 1000} KB" if n >= 1000 else f"{n} B"


DATA_SETS = (
    DataSet("1p-100B", 1, 1_000_000, 100),
    DataSet("4p-100B", 4, 1_000_000, 100),
    DataSet("16p-100B", 16, 2_000_000, 100),
    DataSet("4p-1KB", 4, 300_000, 1000),
    DataSet("4p-100B-lz4", 4, 1_000_000, 100, compression="lz4", compressible=True),
    # a wide topic of tiny ranges: Spark's per-task cost and the consumers' start-up dominate
    DataSet("wide-200p", 200, 1, 100),
    DataSet("wide-1000p", 1000, 10, 100),
)
WIDE = {"wide-200p", "wide-1000p"}  # not scaled: their shape is the point; also read with ranges packed


def _values(data_set: DataSet) -> list[bytes]:
    size = data_set.value_bytes
    if data_set.compressible:
        return [os.urandom(size // 2) + b"x" * (size - size // 2) for _ in range(VALUE_POOL)]
    return [os.urandom(size) for _ in range(VALUE_POOL)]


def produce(bootstrap: str, topic: str, data_set: DataSet, values: list[bytes] | None = None) -> None:
    """Create `topic` and fill every partition with `records_per_partition` records: `values` cycled (random
    ones of the set's size by default)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, data_set.partitions, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10_000,
                         "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                         "compression.type": data_set.compression, "acks": 1})
    values = values or _values(data_set)
    for i in range(data_set.records):
        while True:
            try:
                producer.produce(topic, value=values[i % len(values)], partition=i % data_set.partitions)
                break
            except BufferError:
                producer.poll(0.05)
    remaining = producer.flush(300)
    if remaining:
        raise RuntimeError(f"{remaining} records of {topic} were not delivered within 300 s")
