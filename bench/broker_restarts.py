"""Kafka-to-Kafka streaming copies through broker restarts on a 3-node cluster, kafkasource beside Spark's built-in
connector in one run: for each query its batches, worst trigger, longest time between two batches' starts, and the
records it lost or wrote twice.

All rows run at once, in one local[2] Spark session, over one source topic (3 partitions, replication 3,
min.insync.replicas 2) fed `--rate` records a second by an idempotent acks=all producer, each on 1 s triggers with a
checkpoint of its own:

- `ours`: kafkasource (a consumer group, sync commits) into kafkasource, deliveryGuarantee=exactly-once;
- `builtin-into-ours`: format("kafka") into kafkasource, exactly-once: the sink behind a source of another kind;
- `builtin`: format("kafka") into format("kafka"), at-least-once, the built-in sink's only guarantee: the reference
  for how long a trigger stalls while a broker goes away.

The faults: by default one rolling restart (each node in turn stopped, cleanly or with SIGKILL, kept down `--down`
seconds, started again, the next once every partition is fully replicated: dev/kafka_cluster.py); with
`--soak-minutes N`, N minutes in which a node is restarted that way every `--every` seconds, round robin. Then the
producer stops, each query catches up, and each target is read back (read_committed under exactly-once) and compared
with the source value by value.

    python3 -m bench.broker_restarts [--stop clean|kill] [--down 10] [--rate 200] [--rows ours,builtin,...]
                                     [--soak-minutes 0] [--every 120] [--results bench/ROLLING_RESTART.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.reference import reference_jars
from bench.run import spark_session
from dev.kafka_cluster import KafkaCluster, start_cluster
from tests.support.cluster_helpers import replicated_topic, triggers
from tests.support.kafka_helpers import KafkaHarness, SequenceProducer, await_condition
from tests.support.sink_helpers import read_topic

PARTITIONS = 3
ROWS = ("ours", "builtin-into-ours", "builtin")
EXACTLY_ONCE = {"ours", "builtin-into-ours"}


@dataclass
class Row:
    name: str
    target: str
    query: object

    @property
    def exactly_once(self) -> bool:
        return self.name in EXACTLY_ONCE


def start_row(spark, kafka: KafkaHarness, name: str, source: str, checkpoints: Path) -> Row:
    target = replicated_topic(kafka, f"restarts-{name}", PARTITIONS)
    ours_in, ours_out = name == "ours", name in EXACTLY_ONCE
    group = {"kafka.group.id": kafka.unique_name("restarts"), "commitMode": "sync"} if ours_in else {}
    reader = spark.readStream.format("kafkasource" if ours_in else "kafka").options(
        **{"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": source, "startingOffsets": "earliest",
           "maxOffsetsPerTrigger": "2000", **group})
    exactly_once = ({"deliveryGuarantee": "exactly-once", "transactionalIdPrefix": kafka.unique_name(name)}
                    if ours_out else {})
    writer = reader.load().selectExpr("key", "value", "partition").writeStream.format(
        "kafkasource" if ours_out else "kafka").options(
        **{"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": target,
           "checkpointLocation": str(checkpoints / name), **exactly_once})
    return Row(name, target, writer.trigger(processingTime="1 second").start())


def restarts(cluster: KafkaCluster, how: str, down: float, soak_minutes: float, every: float) -> list[float]:
    """The faults; each restart's seconds from the node's stop to every partition fully replicated again."""
    if not soak_minutes:
        return [seconds for _node, seconds in cluster.rolling_restart(how, down)]
    took, node, ends = [], 1, time.monotonic() + soak_minutes * 60
    while time.monotonic() < ends:
        began = time.monotonic()
        took.append(cluster.bounce(node, how, down))
        node = node % len(cluster.nodes) + 1
        time.sleep(max(0.0, min(every - (time.monotonic() - began), ends - time.monotonic())))
    return took


def held(kafka: KafkaHarness, row: Row) -> Counter[bytes]:
    """The values the row's target holds (read_committed under exactly-once), each with its count."""
    return Counter(r[3] for r in read_topic(kafka, row.target, PARTITIONS, read_committed=row.exactly_once))


def figures(kafka: KafkaHarness, row: Row, source_values: Counter[bytes]) -> dict[str, object]:
    worst, gap, batches, _where = triggers(row.query.recentProgress)  # type: ignore[attr-defined]
    values = held(kafka, row)
    return {
        "batches": batches,
        "worst trigger": worst,
        "longest between two batches": gap,
        "lost": sum(1 for value in source_values if values[value] == 0),
        "duplicated": sum(n - 1 for n in values.values() if n > 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stop", choices=("clean", "kill"), default="clean")
    parser.add_argument("--down", type=float, default=10.0, help="seconds each node stays down")
    parser.add_argument("--rate", type=int, default=200, help="records a second into the source")
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--soak-minutes", type=float, default=0.0, help="0: one rolling restart")
    parser.add_argument("--every", type=float, default=120.0, help="seconds between two restarts of a soak")
    parser.add_argument("--results", type=Path, help="a Markdown file the table is appended to")
    args = parser.parse_args()
    names = [name for name in args.rows.split(",") if name]
    if not names or set(names) - set(ROWS) or args.rate < 10 or args.down < 0:
        parser.error(f"--rows takes some of {', '.join(ROWS)}; --rate at least 10; --down at least 0")

    spark = spark_session(reference_jars(), {"spark.sql.streaming.numRecentProgressUpdates": "100000",
                                             "spark.sql.streaming.stopTimeout": "60000"})
    cluster = start_cluster(3, layout="dedicated")
    try:
        kafka = KafkaHarness(cluster.bootstrap_servers)
        source = replicated_topic(kafka, "restarts-source", PARTITIONS)
        with tempfile.TemporaryDirectory() as checkpoints, SequenceProducer(kafka, source, PARTITIONS,
                                                                             per_second=args.rate) as producer:
            rows = [start_row(spark, kafka, name, source, Path(checkpoints)) for name in names]
            for row in rows:
                await_condition(f"{row.name}'s first batch with rows", lambda r=row: any(
                    p["numInputRows"] > 0 for p in r.query.recentProgress), timeout=180)
            began = time.monotonic()
            took = restarts(cluster, args.stop, args.down, args.soak_minutes, args.every)
            faulted = time.monotonic() - began
            producer.stop()
            source_values = Counter(r[3] for r in read_topic(kafka, source, PARTITIONS))
            for row in rows:  # caught up: the target holds every source value (at least once)
                await_condition(f"{row.name} caught up",
                                lambda r=row: source_values.keys() <= held(kafka, r).keys(), timeout=300)
            results = {row.name: figures(kafka, row, source_values) for row in rows}
            for row in rows:
                row.query.stop()  # type: ignore[attr-defined]
    finally:
        cluster.stop()
        spark.stop()

    faults = (f"a {args.soak_minutes:g}-minute soak, a node every {args.every:.0f} s" if args.soak_minutes
              else "one rolling restart")
    how = "clean stops" if args.stop == "clean" else "SIGKILL"
    what = (f"{faults} ({how}, {args.down:.0f} s down each, {len(took)} restarts in {faulted:.0f} s, back in sync "
            f"after {min(took):.0f}-{max(took):.0f} s); {sum(source_values.values()):,} records at {args.rate}/s")
    table = [f"`python3 -m bench.broker_restarts` ({datetime.date.today()}, {platform.machine()}, "
             f"{os.cpu_count()} cores): {what}", "",
             "| row | batches | worst trigger | longest between two batches | lost | duplicated |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    table += [f"| {name} | {r['batches']} | {r['worst trigger']:.1f} s | {r['longest between two batches']:.1f} s | "
              f"{r['lost']} | {r['duplicated']} |" for name, r in results.items()]
    print("\n".join(table))
    if args.results:
        with args.results.open("a") as out:
            out.write("\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
