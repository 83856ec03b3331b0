"""The exactly-once sink's task writer through a rolling restart of a 3-node cluster, without Spark: how long a batch
can stall while a broker goes away, and whether any record is lost or written twice.

A writer thread runs one stream batch a second, each the transactions of 3 Spark partitions' tasks (write_transaction
with one TransactionalPool, so each partition keeps its producer from batch to batch, as a Python worker that keeps
its tasks does), 100 records each: 300 records a second. Meanwhile each node in turn is stopped (cleanly, or with
SIGKILL), kept down `--down` seconds, started again, and the next one goes once the restarted node is back in every
replicated partition's in-sync replicas. A task that fails is run again for the same batch, as Spark retries it. At
the end a read_committed consumer reads the topic: every value once, or the counts of lost and duplicated ones.

    python3 -m bench.rolling_restart [--stop clean|kill] [--write-path python|native] [--idle-ms N] [--down 10]

`--idle-ms` sets kafka.connections.max.idle.ms (0: librdkafka's default, none), to compare with the sink's own.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dev.kafka_cluster import start_cluster
from kafkasource.options.sink import parse_sink_options
from kafkasource.writing.markers import MarkedBatch
from kafkasource.writing.transactional_pool import TransactionalPool
from kafkasource.writing.transactions import write_transaction

TOPIC, PARTITIONS, PER_TASK = "rolling", 3, 100


def values(batch: int, partition: int) -> list[bytes]:
    return [f"b{batch}-p{partition}-{i}".encode() for i in range(PER_TASK)]


class Writer(threading.Thread):
    """Batches one a second until stopped; each batch's seconds (first attempt to last task done) and failures."""

    def __init__(self, options) -> None:
        super().__init__(daemon=True)
        self.options, self.pool = options, TransactionalPool()
        self.stop_requested = threading.Event()
        self.batches: list[tuple[float, float]] = []  # (began, ended), by the monotonic clock
        self.failures: Counter[str] = Counter()

    def run(self) -> None:
        batch = 0
        while not self.stop_requested.is_set():
            began = time.monotonic()
            for partition in range(PARTITIONS):
                while True:  # Spark runs a failed task again
                    try:
                        write_transaction(self.options, partition, iter(
                            [(TOPIC, None, v, None, partition) for v in values(batch, partition)]),
                            MarkedBatch("rolling", batch), self.pool)
                        break
                    except Exception as exc:
                        self.failures[f"{type(exc).__name__}: {str(exc)[:120]}"] += 1
                        time.sleep(1)
            self.batches.append((began, time.monotonic()))
            batch += 1
            self.stop_requested.wait(max(0.0, 1 - (time.monotonic() - began)))
        self.pool.close_all()


def read_back(bootstrap: str) -> Counter[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rolling-check", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    found: Counter[bytes] = Counter()
    at_end: set[int] = set()
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 120
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())
                    continue
                at_end.discard(msg.partition())
                found[msg.value()] += 1
    finally:
        consumer.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stop", choices=("clean", "kill"), default="clean")
    parser.add_argument("--write-path", choices=("python", "native"), default="python")
    parser.add_argument("--idle-ms", type=int, help="kafka.connections.max.idle.ms (default: the sink's own)")
    parser.add_argument("--down", type=float, default=10.0, help="seconds each node stays down")
    args = parser.parse_args()
    cluster = start_cluster(3)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 2})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result()
        extra = {} if args.idle_ms is None else {"kafka.connections.max.idle.ms": str(args.idle_ms)}
        options = parse_sink_options({"kafka.bootstrap.servers": cluster.bootstrap_servers, "topic": TOPIC,
                                      "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "rolling",
                                      "writePath": args.write_path, **extra}, streaming=True)
        writer = Writer(options)
        writer.start()
        time.sleep(10)  # steady state first
        outages = cluster.rolling_restart(args.stop, down=args.down)
        time.sleep(5)  # steady state after
        writer.stop_requested.set()
        writer.join(600)
        found = read_back(cluster.bootstrap_servers)
    finally:
        cluster.stop()
    expected = [v for b in range(len(writer.batches)) for p in range(PARTITIONS) for v in values(b, p)]
    lost = sum(1 for v in expected if found[v] == 0)
    duplicated = sum(n - 1 for n in found.values() if n > 1)
    seconds = [ended - began for began, ended in writer.batches]
    gaps = [b[1] - a[1] for a, b in zip(writer.batches, writer.batches[1:], strict=False)]
    print(f"rolling restart ({args.stop}, {args.down:.0f} s down each, writePath={args.write_path}, "
          f"connections.max.idle.ms={args.idle_ms if args.idle_ms is not None else 'the sink default'}): "
          f"{len(writer.batches)} batches, {len(expected):,} records; worst batch {max(seconds):.1f} s, longest "
          f"between two batches {max(gaps):.1f} s; lost {lost}, duplicated {duplicated}; "
          f"node outages {', '.join(f'{n}: {seconds:.0f} s' for n, seconds in outages)}")
    for failure, count in writer.failures.most_common():
        print(f"  {count} x {failure}")


if __name__ == "__main__":
    main()
