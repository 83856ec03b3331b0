"""A trickle of records through a processing-time query: latency and the driver's time per trigger.

For kafkasource and the built-in format("kafka"), in one run on one broker:
- latency: a producer writes one record every `--interval-ms`, its value the send time; a foreachBatch
  sink notes when each record reached it; median and p95 of (arrival - send) over `--seconds`.
- driver time per trigger, from the query's progress `durationMs`, on topics of 10, 100 and 1,000
  partitions each receiving the trickle: the source's `latestOffset` and the whole `triggerExecution`.

    python3 -m bench.trickle [--seconds 60] [--interval-ms 100] [--partitions 10,100,1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid

from bench.reference import reference_jars
from bench.run import spark_session
from dev import broker as local_broker

SOURCES = {"kafkasource": "kafkasource", "built-in": "kafka"}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def trickle(bootstrap: str, topic: str, partitions: int, interval_s: float, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    i = 0
    while not stop.is_set():
        producer.produce(topic, value=repr(time.time()).encode(), partition=i % partitions)
        producer.poll(0)
        i += 1
        stop.wait(interval_s)
    producer.flush(10)


def measure(spark, source: str, bootstrap: str, topic: str, partitions: int, seconds: float,
            interval_s: float) -> tuple[list[float], list[dict]]:
    """Latencies in ms of every record produced while the query ran, and the progress of its triggers."""
    latencies: list[float] = []

    def sink(batch, _batch_id):
        arrived = time.time()
        latencies.extend((arrived - float(row.value)) * 1000
                         for row in batch.selectExpr("CAST(value AS STRING) AS value").collect())

    df = (spark.readStream.format(SOURCES[source]).option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "latest").load())
    query = (df.writeStream.foreachBatch(sink).trigger(processingTime="0 seconds")
             .option("checkpointLocation", os.path.join(tempfile.mkdtemp(prefix="kafkasource-trickle-"), "ck"))
             .start())
    deadline = time.monotonic() + 120
    while not query.recentProgress and time.monotonic() < deadline:  # the first trigger fixed the start
        time.sleep(0.2)
    stop = threading.Event()
    producer = threading.Thread(target=trickle, args=(bootstrap, topic, partitions, interval_s, stop))
    producer.start()
    time.sleep(seconds)
    stop.set()
    producer.join()
    time.sleep(3)  # the last records reach the sink
    query.stop()
    return latencies, [p for p in query.recentProgress if p["numInputRows"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--interval-ms", type=float, default=100)
    parser.add_argument("--partitions", default="10,100,1000")
    args = parser.parse_args(argv)
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        spark = spark_session(reference_jars())
        lines = ["| source | partitions | records | latency median (ms) | p95 (ms) | latestOffset median (ms) "
                 "| triggerExecution median (ms) |", "|" + " --- |" * 7]
        for partitions in (int(p) for p in args.partitions.split(",")):
            for source in SOURCES:
                topic = f"trickle-{partitions}-{source}-{uuid.uuid4().hex[:6]}"
                admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
                latencies, progress = measure(spark, source, bootstrap, topic, partitions, args.seconds,
                                              args.interval_ms / 1000)
                latest = [p["durationMs"].get("latestOffset", 0) for p in progress]
                trigger = [p["durationMs"]["triggerExecution"] for p in progress]
                line = (f"| {source} | {partitions:,} | {len(latencies)} | {statistics.median(latencies):.0f} | "
                        f"{percentile(latencies, 0.95):.0f} | {statistics.median(latest):.0f} | "
                        f"{statistics.median(trigger):.0f} |")
                print(line, flush=True)
                lines.append(line)
        spark.stop()
    finally:
        broker.stop()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
