"""The ingest job into Parquet files, a Delta Lake table and an Apache Iceberg table: rows per second of the job's own
code path (kafkasource, `[decode] value = "json"`) against Spark's built-in Kafka connector with `from_json`, into
the same format, in one run and one Spark session.

    PYTHONPATH=. .cache/compat/pyspark-4.1.4/bin/python -m bench.lakehouse [--records 400000] [--partitions 4]
        [--rounds 3] [--warm-up 1] [--formats parquet,delta,iceberg]

Runs on a pyspark that Delta and Iceberg have jars for (4.0 or 4.1: dev/lakehouse.py); the built-in connector's
jars for pyspark 4.1 come from Maven Central into .cache/reference-jars-4.1/. Starts a local broker and writes
--records JSON orders of about 600 B (bench/json_e2e.py's, 12 fields read), cycled over the partitions.

Each drain is a Trigger.AvailableNow query from the first offset with a fresh checkpoint into a fresh folder or table
(Parquet and Delta by path, Iceberg by name in a Hadoop catalog `lake`), partitioned by date:
- kafkasource ingest job: a JobConfig loaded from a TOML file, `streaming.decoded_records` (the source decodes the
  JSON, FAILFAST, undecodable values kept in _corrupt), `destination.writer` and `destination.start`, as
  jobs/ingest.py does (without run_stream, which stops the session at the end);
- built-in + from_json: `format("kafka")`, the same columns made with `from_json(CAST(value AS STRING), DDL)`
  (_corrupt: the value where from_json gave null), written by the same `destination.writer`.
`reading` is the time inside Spark's triggers, end to end adds building the DataFrame and the query's start and stop.
Every drain's table is read back and counted (every row decoded, none corrupt) before any figure is printed.
Medians, readers rotating. Figures and ratios only: bench/LAKEHOUSE.md keeps them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import readers
from bench.json_e2e import DDL, produce
from bench.reference import ROOT, reference_jars
from bench.run import spark_session
from dev import broker as local_broker
from dev import lakehouse, maven

FORMATS = ("parquet", "delta", "iceberg")
READERS = ("built-in + from_json", "kafkasource ingest job")
# Spark's Kafka connector for the pyspark minor releases bench/pom.xml's (a newer Spark's) does not load in
# (spark-sql-kafka-0-10 4.1.1's own dependencies: Maven Central has no 4.1.4)
CONNECTOR = {
    "4.1": ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1",
            "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.1.1",
            "org.apache.kafka:kafka-clients:3.9.1", "org.apache.commons:commons-pool2:2.12.1"],
}


def connector_jars() -> list[Path]:
    minor = lakehouse.spark_minor()
    if minor not in CONNECTOR:
        return reference_jars()
    return maven.fetch(CONNECTOR[minor], ROOT / ".cache" / f"reference-jars-{minor}", "Spark's Kafka connector")


def session(warehouse: Path):
    """bench.run's session with the built-in connector's and the table formats' jars and catalogs."""
    return spark_session([*connector_jars(), *lakehouse.jars()], lakehouse.session_settings(warehouse),
                         app_name="kafkasource-bench-lakehouse")


def write_config(folder: Path, fmt: str, bootstrap: str, topic: str, table: str) -> Path:
    """The ingest job's TOML: the topic from its first offset, JSON decoded with DDL, the format's [sink]."""
    target = f"table = {json.dumps(table)}" if fmt == "iceberg" else f"path = {json.dumps(str(folder / 'out'))}"
    path = folder / "ingest.toml"
    path.write_text(f"""[kafka]
"bootstrap.servers" = {json.dumps(bootstrap)}

[source]
subscribe = {json.dumps(topic)}
startingOffsets = "earliest"

[decode]
value = "json"
schema = {json.dumps(DDL)}

[sink]
format = "{fmt}"
{target}
checkpoint = {json.dumps(str(folder / "checkpoint"))}

[job]
trigger = "availableNow"
""")
    return path


def built_in(spark, bootstrap: str, topic: str):
    """The job's columns from the built-in connector: key, the fields, _corrupt, where each record came from, date."""
    from pyspark.sql import functions as F

    rows = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())
    rows = rows.withColumn("decoded", F.from_json(F.col("value").cast("string"), DDL))
    return rows.select("key", "decoded.*", F.when(F.col("decoded").isNull(), F.col("value")).alias("_corrupt"),
                       F.col("topic").alias("kafka_topic"), F.col("partition").alias("kafka_partition"),
                       F.col("offset").alias("kafka_offset"), F.col("timestamp").alias("kafka_timestamp"),
                       F.to_date("timestamp").alias("date"))


def count_table(spark, config) -> tuple[int, int, int]:
    """The table's rows, those with an order_id (decoded) and those with a _corrupt value."""
    from pyspark.sql import functions as F

    sink = config.destination
    table = spark.table(sink.table) if sink.format == "iceberg" else spark.read.format(sink.format).load(sink.path)
    return tuple(table.select(F.count("*"), F.count("order_id"), F.count("_corrupt")).first())


def drain(spark, reader: str, fmt: str, bootstrap: str, topic: str, warehouse: Path, records: int) -> readers.Drain:
    from kafkasource.jobs import config as job_config
    from kafkasource.jobs import destination
    from kafkasource.jobs.streaming import decoded_records, with_trigger

    folder = Path(tempfile.mkdtemp(prefix="kafkasource-bench-lake-"))
    name = f"t{uuid.uuid4().hex[:10]}"
    try:
        path = write_config(folder, fmt, bootstrap, topic, f"{lakehouse.CATALOG}.db.{name}")
        config = job_config.load(path, required=("path", "checkpoint"))
        started = time.perf_counter()
        if reader == READERS[0]:
            rows = built_in(spark, bootstrap, topic)
        else:
            rows = decoded_records(config, spark, partition_by_date=True)
        writer = destination.writer(rows, config.destination, config.checkpoint, partition_by_date=True)
        query = destination.start(with_trigger(writer, config.trigger), config.destination)
        query.awaitTermination()
        seconds = time.perf_counter() - started
        progress = query.recentProgress
        reading = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
        read, (written, decoded, corrupt) = sum(p["numInputRows"] for p in progress), count_table(spark, config)
        if read != records or written != records or decoded != records or corrupt:
            raise RuntimeError(f"{reader} into {fmt}: read {read:,} rows, the table holds {written:,} ({decoded:,} "
                               f"decoded, {corrupt:,} corrupt), expected {records:,} all decoded")
        return readers.Drain(seconds, written, reading)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(warehouse / "db" / name, ignore_errors=True)


def bench(spark, bootstrap: str, topic: str, warehouse: Path, args) -> None:
    results: dict[tuple[str, str], list[readers.Drain]] = {(r, f): [] for r in READERS for f in args.formats}
    for fmt in args.formats:
        for round_ in range(args.warm_up + args.rounds):
            for reader in READERS[round_ % 2:] + READERS[:round_ % 2]:
                result = drain(spark, reader, fmt, bootstrap, topic, warehouse, args.records)
                if round_ >= args.warm_up:
                    results[(reader, fmt)].append(result)
                print(f"{fmt:8s} round {round_ + 1}: {reader:24s} reading {result.reading:6.2f} s, "
                      f"end to end {result.seconds:6.2f} s ({result.rows:,} rows in the table)", flush=True)

    def medians(reader: str, fmt: str) -> dict[str, float]:
        return {m: statistics.median(getattr(d, m) for d in results[(reader, fmt)]) for m in ("reading", "seconds")}

    print("\n| format | reader | reading rows/s | end to end rows/s | reading / built-in | end to end / built-in |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for fmt in args.formats:
        base = medians(READERS[0], fmt)
        for reader in READERS:
            med = medians(reader, fmt)
            print(f"| {fmt} | {reader} | {args.records / med['reading']:,.0f} | {args.records / med['seconds']:,.0f} "
                  f"| {base['reading'] / med['reading']:.2f}x | {base['seconds'] / med['seconds']:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    readers.add_drain_arguments(parser)
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: parquet, delta, iceberg")
    args = parser.parse_args(argv)
    args.formats = [f for f in FORMATS if f in args.formats.split(",")]
    if not lakehouse.supported():
        parser.error(f"Delta and Iceberg have no jars for pyspark {lakehouse.spark_minor()}: run under 4.0 or 4.1")
    print(f"load average at the start {os.getloadavg()[0]:.1f}", flush=True)
    broker = local_broker.start()
    warehouse = Path(tempfile.mkdtemp(prefix="kafkasource-bench-warehouse-"))
    try:
        topic = f"bench-lake-{uuid.uuid4().hex[:6]}"
        size = produce(broker.bootstrap_servers, topic, args.partitions, args.records)
        spark = session(warehouse)
        import pyspark

        import kafkasource

        kafkasource.register(spark)
        print(f"{args.records:,} orders of {size:.0f} B on average over {args.partitions} partitions; pyspark "
              f"{pyspark.__version__}, {', '.join(lakehouse.format_jars(lakehouse.spark_minor()))}", flush=True)
        bench(spark, broker.bootstrap_servers, topic, warehouse, args)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)
        shutil.rmtree(warehouse, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
