"""Planning cost at scale: one topic with many partitions, time the driver's per-trigger work.

Runs the stream reader's latestOffset() and partitions() directly (no Spark) against a local broker,
with a consumer group so each trigger also commits. Prints the median of several triggers.

    python -m bench.planning [--partitions 1000] [--triggers 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

from dev import broker as local_broker


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--triggers", type=int, default=10)
    args = parser.parse_args()

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from kafkasource.options import parse_options
    from kafkasource.stream import KafkaStreamReader

    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        topic = f"planning-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        reader = KafkaStreamReader(parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                                  "kafka.group.id": f"g-{topic}",
                                                  "kafka.auto.offset.reset": "earliest"}))
        start = reader.initialOffset()
        latest_ms, partitions_ms = [], []
        for trigger in range(args.triggers):
            for p in range(args.partitions):  # one new record per partition, so every trigger plans and commits
                producer.produce(topic, value=b"x", partition=p)
            producer.flush(30)
            began = time.perf_counter()
            end = reader.latestOffset(start, ReadAllAvailable())
            latest_ms.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            planned = reader.partitions(start, end)
            partitions_ms.append((time.perf_counter() - began) * 1000)
            assert len(planned) == args.partitions
            start = end
        reader.stop()
        del producer, admin  # closed before the broker stops, so they do not log its shutdown
        print(f"{args.partitions} partitions, {args.triggers} triggers: latestOffset (metadata + ListOffsets + "
              f"commit of the previous batch) median {statistics.median(latest_ms):.1f} ms, "
              f"partitions() median {statistics.median(partitions_ms):.1f} ms")
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
