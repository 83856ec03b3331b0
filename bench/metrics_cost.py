"""What the metrics exporter costs the read path: the 4p-100B data set drained with kafkasource, metrics off and
on in alternation, in one Spark session.

Each drain is an AvailableNow query into the noop sink with a fresh consumer group (so it commits as any
query with a group does): first the "off" drains, then `kafkasource.metrics.serve` starts (HTTP on a free
port, scraped every second by a thread here, a group read from the brokers every second) and the "on" drains
run, their commits sending outcomes to it; each phase begins with an untimed drain. The phases are not
interleaved because serve() changes the session's Python environment, and Spark starts fresh Python workers
for each new one: interleaving would measure worker start-up (seconds per drain), not the exporter.
Prints the medians of rows/s end to end and inside Spark's triggers, and their ratio on/off.

    python3 -m bench.metrics_cost [--scale 0.25] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import urllib.request
import uuid

from bench import datasets, readers
from dev import broker as local_broker
from kafkasource import metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    data_set = next(d for d in datasets.DATA_SETS if d.name == "4p-100B").scaled(args.scale)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        topic = f"bench-metrics-{uuid.uuid4().hex[:6]}"
        datasets.produce(bootstrap, topic, data_set)
        print(f"produced {data_set.describe()}", flush=True)
        spark = (SparkSession.builder.master("local[2]").appName("kafkasource-bench-metrics")
                 .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.memory", "2g").config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")

        def drain(group: str) -> readers.Drain:
            return readers.timed(spark.readStream.format("kafkasource").option("kafka.bootstrap.servers", bootstrap)
                                  .option("subscribe", topic).option("kafka.group.id", group)
                                  .option("startingOffsets", "earliest").load())

        results: dict[str, list[readers.Drain]] = {"off": [], "on": []}
        exporter = scraping = scraper = None
        for mode in ("off", "on"):
            if mode == "on":
                # serve() puts the exporter's address into the session's Python environment once, and Spark starts
                # Python workers afresh for a new environment: the untimed warm-up drain below pays that, once
                exporter = metrics.serve(spark, port=0, source_options={
                    "kafka.bootstrap.servers": bootstrap, "subscribe": topic, "kafka.group.id": "bench-metrics"},
                    broker_interval_s=1)
                scraping = threading.Event()
                scraper = threading.Thread(target=_scrape_every_second, args=(exporter.url, scraping), daemon=True)
                scraper.start()
            for round_ in range(1 + args.repeat):  # the first drain warms up, untimed
                result = drain(f"bench-metrics-{uuid.uuid4().hex[:8]}")
                if round_ > 0:
                    results[mode].append(result)
                print(f"{'warm-up' if round_ == 0 else f'round {round_}'} metrics {mode}: {result.rows:,} rows in "
                      f"{result.seconds:.2f} s ({result.reading:.2f} s in triggers)", flush=True)
        scraping.set()
        scraper.join()
        exporter.close()
        print(f"\n{data_set.describe()}, median of {args.repeat}:")
        for what, seconds in (("end to end", lambda d: d.seconds), ("inside triggers", lambda d: d.reading)):
            rate = {mode: statistics.median(d.rows / seconds(d) for d in drains) for mode, drains in results.items()}
            print(f"  {what}: off {rate['off']:,.0f} rows/s, on {rate['on']:,.0f} rows/s, "
                  f"on/off {rate['on'] / rate['off']:.3f}")
        spark.stop()
    finally:
        broker.stop()
    return 0


def _scrape_every_second(url: str, done: threading.Event) -> None:
    while not done.wait(1):
        with urllib.request.urlopen(url, timeout=5) as answer:
            answer.read()


if __name__ == "__main__":
    raise SystemExit(main())
