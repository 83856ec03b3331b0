"""The timed readers: kafkasource (native and pure-Python read paths) and the built-in format("kafka")
through Spark, the transport ceiling (bench/ceiling.py), and a bare consumer.

Each drains a whole topic from its first offset and returns a Drain. The Spark readers run a
Trigger.AvailableNow query into the noop sink, timed from start() to the end of awaitTermination()
(`seconds`); `reading` is the part Spark spent in its triggers (progress `durationMs.triggerExecution`,
summed over the query's batches: planning, reading and the sink, measured by Spark the same way for
both sources). The rest is the query's start and stop: for a Python source, Spark starts a fresh Python
process for the reader's driver side with every query. The ceiling drains the same shape of rows from a
Python source with nothing to read. The bare reader is one confluent-kafka consumer in this process
making a Message object per record: what any Python reader built on that client is bounded by.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import NamedTuple

from bench import ceiling
from bench.cpu import Cpu
from kafkasource.metrics.progress import input_rows

# reader name -> (format, extra options)
SPARK_READERS = {"kafkasource native": ("kafkasource", {"readPath": "native"}),
                 "kafkasource python": ("kafkasource", {"readPath": "python"}),
                 "built-in": ("kafka", {}),
                 "kafkasource packed": ("kafkasource", {"packRecordsPerTask": "10000"})}


class Drain(NamedTuple):
    seconds: float  # start to termination
    rows: int
    reading: float  # seconds inside Spark's triggers (the bare reader: all of it)
    cpu: Cpu | None = None  # what the drain cost the machine's processes (bench/cpu.py)


def add_drain_arguments(parser, records: int = 400_000) -> None:
    """The command line options of a benchmark that drains a topic's JSON orders a few times per reader."""
    parser.add_argument("--records", type=int, default=records)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=1)


def spark_drain(spark, reader: str, bootstrap: str, topic: str) -> Drain:
    fmt, options = SPARK_READERS[reader]
    return timed(spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest").options(**options).load())


def ceiling_drain(spark, topic: str, partitions: int, records_per_partition: int, value_bytes: int) -> Drain:
    """Spark's own cost of the same rows (`topic` in each) from a Python source with nothing to read
    (bench/ceiling.py)."""
    spark.dataSource.register(ceiling.CeilingSource)
    return timed(spark.readStream.format(ceiling.NAME).option("partitions", partitions)
                  .option("recordsPerPartition", records_per_partition).option("valueBytes", value_bytes)
                  .option("topic", topic).load())


def timed(df) -> Drain:
    checkpoint = os.path.join(tempfile.mkdtemp(prefix="kafkasource-bench-"), "ck")
    started = time.perf_counter()
    query = df.writeStream.format("noop").trigger(availableNow=True).option("checkpointLocation", checkpoint).start()
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    progress = query.recentProgress
    reading = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
    return Drain(elapsed, sum(input_rows(p) for p in progress), reading)


def bare_drain(bootstrap: str, topic: str, partitions: int, records: int, timeout_s: float = 600) -> Drain:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkasource-bench-bare",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 10, "fetch.wait.max.ms": 10,
                         "max.partition.fetch.bytes": 8 * 1024 * 1024})
    started = time.perf_counter()
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        rows = 0
        while rows < records and time.perf_counter() - started < timeout_s:
            rows += sum(1 for m in consumer.consume(10_000, 0.5) if m.error() is None)
        elapsed = time.perf_counter() - started
        return Drain(elapsed, rows, elapsed)
    finally:
        consumer.close()
