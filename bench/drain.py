"""Drain benchmark: one topic, 4 partitions, N records of 100 bytes, Trigger.AvailableNow into the noop sink.

Measures kafkasource and, when `--reference-jars` names a folder holding Spark's built-in Kafka
connector with its dependencies (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10, kafka-clients,
commons-pool2), Spark's `format("kafka")` in the same run on the same broker and data; prints rows/s
and the ratio. Each source gets a warm-up drain first (Python worker start-up, JVM JIT), then
`--repeat` measured drains.

    python -m bench.drain [--records 1000000] [--repeat 2] [--reference-jars DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
import uuid

from dev import broker as local_broker



def produce(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "lz4"})
    value = b"x" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, key=str(i).encode(), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)


def drain_seconds(spark, fmt: str, bootstrap: str, topic: str) -> tuple[float, int]:
    df = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").load())
    started = time.perf_counter()
    query = (df.writeStream.format("noop").trigger(availableNow=True)
             .option("checkpointLocation", os.path.join(tempfile.mkdtemp(), "ck")).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    counts = sum(p["numInputRows"] for p in query.recentProgress)
    return elapsed, counts


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--reference-jars", help="folder of jars for Spark's built-in format('kafka')")
    args = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import SparkSession

    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic, warm = f"bench-{uuid.uuid4().hex[:6]}", f"warm-{uuid.uuid4().hex[:6]}"
        for name in (topic, warm):
            admin.create_topics([NewTopic(name, args.partitions, 1)])[name].result(30)
        started = time.perf_counter()
        produce(bootstrap, topic, args.records, args.partitions)
        produce(bootstrap, warm, 50_000, args.partitions)
        print(f"produced {args.records:,} records of 100 B in {time.perf_counter() - started:.1f} s")

        builder = (SparkSession.builder.master("local[2]").appName("kafkasource-bench")
                   .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false"))
        if args.reference_jars:
            builder = builder.config("spark.jars", ",".join(sorted(glob.glob(os.path.join(args.reference_jars, "*.jar")))))
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")

        formats = ["kafkasource"] + (["kafka"] if args.reference_jars else [])
        results = {}
        for fmt in formats:
            drain_seconds(spark, fmt, bootstrap, warm)  # warm-up
            runs = []
            for _ in range(args.repeat):
                seconds, rows = drain_seconds(spark, fmt, bootstrap, topic)
                assert rows == args.records, f"{fmt} read {rows} rows, expected {args.records}"
                runs.append(seconds)
            results[fmt] = statistics.median(runs)
            print(f"{fmt:12s} drain of {args.records:,} rows: median {results[fmt]:.2f} s over {len(runs)} runs "
                  f"({args.records / results[fmt]:,.0f} rows/s); runs: {', '.join(f'{r:.2f}' for r in runs)}")
        if "kafka" in results:
            print(f"throughput ratio kafkasource / built-in kafka: {results['kafka'] / results['kafkasource']:.2f}")
        spark.stop()
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
