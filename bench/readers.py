"""The timed readers: kafkasource (native and pure-Python read paths) and the built-in format("kafka")
through Spark, and a bare consumer.

Each drains a whole topic from its first offset and returns (seconds, rows). The Spark readers run a
Trigger.AvailableNow query into the noop sink, timed from start() to the end of awaitTermination(). The
bare reader is one confluent-kafka consumer in this process making a Message object per record: the
ceiling of any Python reader built on that client.
"""

from __future__ import annotations

import os
import tempfile
import time

from kafkasource.lag import input_rows

# reader name -> (format, extra options)
SPARK_READERS = {"kafkasource native": ("kafkasource", {"readPath": "native"}),
                 "kafkasource python": ("kafkasource", {"readPath": "python"}),
                 "built-in": ("kafka", {}),
                 "kafkasource packed": ("kafkasource", {"packRecordsPerTask": "10000"})}


def spark_drain(spark, reader: str, bootstrap: str, topic: str) -> tuple[float, int]:
    fmt, options = SPARK_READERS[reader]
    df = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").options(**options).load())
    checkpoint = os.path.join(tempfile.mkdtemp(prefix="kafkasource-bench-"), "ck")
    started = time.perf_counter()
    query = df.writeStream.format("noop").trigger(availableNow=True).option("checkpointLocation", checkpoint).start()
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    return elapsed, sum(input_rows(p) for p in query.recentProgress)


def bare_drain(bootstrap: str, topic: str, partitions: int, records: int, timeout_s: float = 600) -> tuple[float, int]:
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
        return time.perf_counter() - started, rows
    finally:
        consumer.close()
