"""Plain JSON end to end in Spark, the pipeline most topics feed: JSON orders read into typed columns and written to
a noop sink or to Parquet files, and a struct column written to Kafka as JSON; kafkasource against Spark's built-in
Kafka connector with `from_json` / `to_json`, in one run and one session.

    python3 -m bench.json_e2e [--records 400000] [--partitions 4] [--rounds 3] [--warm-up 1] [--only read,write]

Starts a local broker and writes --records JSON orders of about 600 B (12 fields: a long, strings, a double, an int,
a timestamp, a boolean, an array of strings, a free-text note), cycled over the partitions.

Reading: Trigger.AvailableNow queries from the first offset, `select("value.*")` (every field a column):
- built-in + from_json: `format("kafka")` then `from_json(CAST(value AS STRING), DDL)`;
- kafkasource + from_json: the same over kafkasource's raw rows (what users wrote before valueFormat=json);
- kafkasource json native / python: `valueFormat=json, valueSchema=DDL`, readPath native (the extension's decoder)
  or python (the Python read path and decoder);
- kafkasource raw: the native read path's `value` bytes, not decoded: the read alone, for the share decoding takes.
into the noop sink and into Parquet files (a fresh folder per drain). `reading` is the time inside Spark's
triggers, end to end adds the query's start and stop. All readers must give the same rows (a hash of every field,
summed, checked before timing).

Writing: a cached DataFrame of the same orders as a struct column, batch-written to a fresh topic: the built-in
sink fed `to_json(value)`, kafkasource with `valueFormat=json` (writePath native, at-least-once), and kafkasource
fed `to_json(value)` (the JVM's encoding, our sink). Rows/s, medians.
Figures and ratios only: bench/JSON.md keeps them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

from bench import readers
from bench.reference import reference_jars
from bench.run import spark_session
from dev import broker as local_broker

DDL = ("order_id BIGINT, customer STRING, sku STRING, status STRING, currency STRING, amount DOUBLE, "
       "quantity INT, created_at TIMESTAMP, paid BOOLEAN, tags ARRAY<STRING>, region STRING, note STRING")
READERS = ("built-in + from_json", "kafkasource + from_json", "kafkasource json native", "kafkasource json python")
READ_ALONE = "kafkasource raw (no decoding)"  # the read without the JSON: what decoding adds to it
SINKS = ("noop", "parquet")
POOL = 10_000
NOTES = ("Leave the parcel at the side door if nobody answers; the dog is friendly but loud. ",
         "Deliver between nine and five on weekdays only, ring twice and wait. ",
         "Fragile: glassware inside, keep upright, do not stack heavy boxes on top. ")


def order(i: int) -> bytes:
    import json

    seconds, millis = divmod(1_700_000_000_000 + i * 7_777, 1000)
    created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"
    note = None if i % 5 == 0 else (NOTES[i % 3] * 6)[: 330 + i % 150] + f' "{i % 10}"'
    return json.dumps({
        "order_id": i, "customer": f"customer-{i % 9973}", "sku": f"SKU-{i % 500:05d}",
        "status": ("NEW", "PAID", "SHIPPED", "CANCELLED")[i % 4], "currency": "EUR" if i % 3 == 0 else "USD",
        "amount": round((i % 100_000) * 1.37 / 7, 2), "quantity": i % 12 + 1, "created_at": created,
        "paid": i % 2 == 0, "tags": ["gift", "express", "fragile", "bulk"][: i % 4],
        "region": ("eu-west", "us-east", "ap-south")[i % 3], "note": note,
        "channel": ("web", "app", "store")[i % 3], "warehouse": f"WH-{i % 17:02d}",  # fields nobody reads
    }, separators=(",", ":")).encode()


def produce(bootstrap: str, topic: str, partitions: int, records: int) -> float:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    pool = [order(i) for i in range(POOL)]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000, "acks": 1,
                         "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=pool[i % POOL], partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(300):
        raise RuntimeError(f"records of {topic} were not delivered within 300 s")
    return statistics.mean(map(len, pool))


def frame(spark, reader: str, bootstrap: str, topic: str, stream: bool = True):
    from pyspark.sql import functions as F

    source = (spark.readStream if stream else spark.read).option("kafka.bootstrap.servers", bootstrap)
    source = source.option("subscribe", topic).option("startingOffsets", "earliest")
    if reader == READ_ALONE:
        return source.format("kafkasource").option("readPath", "native").load().select("value")
    if reader.startswith("kafkasource json"):
        df = (source.format("kafkasource").option("readPath", reader.split()[-1]).option("valueFormat", "json")
              .option("valueSchema", DDL).option("json.timeZone", "UTC").load())
    else:
        df = source.format("kafka" if reader.startswith("built-in") else "kafkasource").load()
        df = df.select(F.from_json(F.col("value").cast("string"), DDL, {"timeZone": "UTC"}).alias("value"))
    return df.select("value.*")


def fingerprint(df) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = df.select(F.count("*").alias("n"), F.sum(F.xxhash64(*df.columns).cast("decimal(38,0)")).alias("h")).first()
    return row["n"], row["h"]


def drain(df, sink: str) -> readers.Drain:
    if sink == "noop":
        return readers.timed(df)
    folder = tempfile.mkdtemp(prefix="kafkasource-bench-json-")
    try:
        started = time.perf_counter()
        query = (df.writeStream.format("parquet").option("path", os.path.join(folder, "out"))
                 .option("checkpointLocation", os.path.join(folder, "ck")).trigger(availableNow=True).start())
        query.awaitTermination()
        progress = query.recentProgress
        reading = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
        return readers.Drain(time.perf_counter() - started, sum(p["numInputRows"] for p in progress), reading)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def read_bench(spark, bootstrap: str, topic: str, args) -> None:
    prints = {r: fingerprint(frame(spark, r, bootstrap, topic, stream=False)) for r in READERS}
    if len(set(prints.values())) != 1 or next(iter(prints.values()))[0] != args.records:
        raise RuntimeError(f"the readers disagree on the rows: {prints}")
    print(f"same rows from every reader: {prints[READERS[0]]}", flush=True)
    timed = (*READERS, READ_ALONE)
    results: dict[tuple[str, str], list[readers.Drain]] = {(r, s): [] for r in timed for s in SINKS}
    for sink in SINKS:
        for round_ in range(args.warm_up + args.rounds):
            for reader in timed[round_ % len(timed):] + timed[:round_ % len(timed)]:
                result = drain(frame(spark, reader, bootstrap, topic), sink)
                if result.rows != args.records:
                    raise RuntimeError(f"{reader} read {result.rows:,} rows, expected {args.records:,}")
                if round_ >= args.warm_up:
                    results[(reader, sink)].append(result)
                print(f"{sink:8s} round {round_ + 1}: {reader:24s} reading {result.reading:6.2f} s, "
                      f"end to end {result.seconds:6.2f} s", flush=True)
    print("\n| sink | reader | reading rows/s | end to end rows/s | reading / built-in | end to end / built-in |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    def medians(reader: str, sink: str) -> dict[str, float]:
        return {m: statistics.median(getattr(d, m) for d in results[(reader, sink)]) for m in ("reading", "seconds")}

    for sink in SINKS:
        base = medians(READERS[0], sink)
        for reader in timed:
            med = medians(reader, sink)
            print(f"| {sink} | {reader} | {args.records / med['reading']:,.0f} | {args.records / med['seconds']:,.0f} "
                  f"| {base['reading'] / med['reading']:.2f}x | {base['seconds'] / med['seconds']:.2f}x |")


def write_bench(spark, bootstrap: str, args) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import functions as F

    rows = spark.createDataFrame([(order(i),) for i in range(POOL)], "raw binary")
    parsed = rows.select(F.from_json(F.col("raw").cast("string"), DDL, {"timeZone": "UTC"}).alias("value"))
    copies = max(1, args.records // POOL)
    data = parsed.crossJoin(spark.range(copies).withColumnRenamed("id", "copy")).select("value")
    data = data.repartition(args.partitions).cache()
    count = data.count()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    writers = ("built-in + to_json", "kafkasource json", "kafkasource + to_json", FLOOR)
    spark.dataSource.register(CountingSink)
    seconds: dict[str, list[float]] = {w: [] for w in writers}
    for round_ in range(args.warm_up + args.rounds):
        for writer in writers[round_ % len(writers):] + writers[:round_ % len(writers)]:
            topic = f"bench-json-write-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
            started = time.perf_counter()
            if writer == writers[0]:
                (data.select(F.to_json("value", {"timeZone": "UTC"}).alias("value")).write.format("kafka")
                 .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
            elif writer == FLOOR:
                data.write.format("bench_counting_sink").mode("append").save()
            elif writer == writers[2]:
                (data.select(F.to_json("value", {"timeZone": "UTC"}).alias("value")).write.format("kafkasource")
                 .mode("append").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
                 .option("writePath", "native").save())
            else:
                (data.write.format("kafkasource").mode("append").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", topic).option("valueFormat", "json").option("json.timeZone", "UTC")
                 .option("writePath", "native").save())
            elapsed = time.perf_counter() - started
            if round_ >= args.warm_up:
                seconds[writer].append(elapsed)
            rate = count / elapsed
            print(f"write round {round_ + 1}: {writer:20s} {elapsed:6.2f} s ({rate:,.0f} rows/s)", flush=True)
            admin.delete_topics([topic])
    base = statistics.median(seconds[writers[0]])
    print("\n| writer | rows/s | / built-in |\n| --- | ---: | ---: |")
    for writer in writers:
        med = statistics.median(seconds[writer])
        print(f"| {writer} | {count / med:,.0f} | {base / med:.2f}x |")


FLOOR = "Python sink floor (no Kafka)"


def _counting_sink():
    """A Python data source whose writer only counts the Arrow rows it is handed: the ceiling of any sink written
    against Spark's Python Data Source API, the JVM's conversion of the struct column and its transfer included."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class CountingWriter(DataSourceArrowWriter):
        def write(self, iterator):
            rows = 0
            for batch in iterator:
                rows += batch.num_rows
            return WriterCommitMessage()

    class CountingSink(DataSource):
        @classmethod
        def name(cls):
            return "bench_counting_sink"

        def writer(self, schema, overwrite):
            return CountingWriter()

    return CountingSink


CountingSink = _counting_sink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    readers.add_drain_arguments(parser)
    parser.add_argument("--only", default="read,write", help="read, write or both (comma-separated)")
    args = parser.parse_args(argv)
    broker = local_broker.start()
    try:
        topic = f"bench-json-{uuid.uuid4().hex[:6]}"
        size = produce(broker.bootstrap_servers, topic, args.partitions, args.records)
        print(f"{args.records:,} orders of {size:.0f} B on average over {args.partitions} partitions; "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        spark = spark_session(reference_jars())
        import kafkasource

        kafkasource.register(spark)
        if "read" in args.only:
            read_bench(spark, broker.bootstrap_servers, topic, args)
        if "write" in args.only:
            write_bench(spark, broker.bootstrap_servers, args)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
