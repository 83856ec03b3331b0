"""Read a Kafka topic through a Spark Connect server with format("kafkasource").

The client needs only pyspark's Connect client (`pip install pyspark-client`, or pyspark with its
`connect` extra); kafkasource and confluent-kafka must be installed where the server runs its
Python workers. Nothing here imports kafkasource.

    python3 examples/connect_read.py --remote sc://127.0.0.1:15002 --bootstrap-servers 127.0.0.1:9092 \\
        --topic orders [--group orders-etl --checkpoint /tmp/orders-ck]

Prints what a batch read found per partition; with --group, also drains the topic from the group's
committed offsets with a Trigger.AvailableNow stream (which commits back) and prints what it read.
"""

from __future__ import annotations

import argparse
import sys
import uuid

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remote", required=True, help="the Connect server, sc://host:port")
    parser.add_argument("--bootstrap-servers", required=True, help="Kafka brokers, as the server's workers reach them")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", help="also drain the topic as this consumer group (commits its offsets)")
    parser.add_argument("--checkpoint", help="the stream's checkpoint folder on the server (with --group)")
    return parser.parse_args(argv)


def batch_summary(spark: SparkSession, servers: str, topic: str) -> list[str]:
    """One line per partition: its offsets and record count, from a batch read of the whole topic."""
    df = (spark.read.format("kafkasource")  # resolved on the server: no register call, no jar
          .option("kafka.bootstrap.servers", servers)
          .option("subscribe", topic)
          .load())
    rows = (df.groupBy("partition")
            .agg(F.min("offset").alias("first"), F.max("offset").alias("last"), F.count("*").alias("records"))
            .orderBy("partition").collect())
    return [f"partition {r.partition}: offsets {r.first}..{r.last} ({r.records} records)" for r in rows]


def drain_group(spark: SparkSession, servers: str, topic: str, group: str, checkpoint: str) -> int:
    """Read what the group has not committed yet, once (AvailableNow), into a memory table; commits on the way."""
    table = f"drained_{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format("kafkasource")
             .option("kafka.bootstrap.servers", servers)
             .option("subscribe", topic)
             .option("kafka.group.id", group)
             .option("kafka.auto.offset.reset", "earliest")  # partitions the group never committed
             .load()
             .writeStream.format("memory").queryName(table)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()
    return spark.table(table).count()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.group and not args.checkpoint:
        print("--group needs --checkpoint: a folder on the server for the stream's checkpoint", file=sys.stderr)
        return 2
    spark = SparkSession.builder.remote(args.remote).getOrCreate()
    try:
        lines = batch_summary(spark, args.bootstrap_servers, args.topic)
        print(f"{args.topic}: {len(lines)} partitions with records, read over {args.remote}")
        print("\n".join(lines))
        if args.group:
            drained = drain_group(spark, args.bootstrap_servers, args.topic, args.group, args.checkpoint)
            print(f"group {args.group}: read {drained} records past its committed offsets, and committed the end")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
