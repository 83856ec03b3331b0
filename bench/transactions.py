"""What a stream's exactly-once batch costs a task with a producer the worker kept against a new producer per batch.

Starts a local broker and writes `--batches` consecutive stream batches of `--records` 100 B records for one Spark
partition through the sink's exactly-once task writer (write_transaction, without Spark, as a task calls it): once
with one TransactionalPool for all batches (what a Python worker does since it keeps its producers), once with a
new pool per batch (what every batch cost before: init_transactions, new connections, the marker read, and what a
batch costs still when Spark gives the partition's task to another Python worker than the last one), the latter
also with init_transactions() called at once, without the metadata request the writer sends a new producer first
(transactional_pool.learn_brokers). Prints the median and spread of the seconds per batch, wall time, and how many
batches took over 0.4 s, checked against the topic's read_committed contents.

    python3 -m bench.transactions [--batches 20] [--records 1000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dev import broker as dev_broker
from kafkasource.options.sink import parse_sink_options
from kafkasource.writing import transactions
from kafkasource.writing.markers import MarkedBatch
from kafkasource.writing.transactional_pool import TransactionalPool
from kafkasource.writing.transactions import write_transaction

SLOW_S = 0.4  # a batch slower than this is counted: librdkafka's coordinator re-query alone is a 500 ms timer


def committed_records(bootstrap: str, topic: str) -> int:
    """How many records a read_committed consumer finds in partition 0 of `topic`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        count = 0
        while True:
            found = consumer.consume(10_000, timeout=2)
            count += sum(1 for m in found if m.error() is None)
            if not found or (found[-1].offset() or 0) >= end - 2:  # the last offset holds a transaction marker
                return count
    finally:
        consumer.close()


def run(bootstrap: str, name: str, batches: int, records: int, kept: bool) -> list[float]:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: its end cancels the request
    admin.create_topics([NewTopic(name, 1, 1)])[name].result()
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": name,
                                  "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": name},
                                 streaming=True)
    value = b"x" * 100
    pool = TransactionalPool()
    seconds = []
    try:
        for batch in range(batches):
            if not kept:
                pool.close_all()
                pool = TransactionalPool()
            rows = ((name, None, value, None, 0) for _ in range(records))
            started = time.perf_counter()
            write_transaction(options, 0, rows, MarkedBatch("bench", batch), pool)
            seconds.append(time.perf_counter() - started)
    finally:
        pool.close_all()
    found = committed_records(bootstrap, name)
    if found != batches * records:
        raise SystemExit(f"{name}: {found} committed records, expected {batches * records}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--records", type=int, default=1000)
    args = parser.parse_args()
    broker = dev_broker.start()
    try:
        print(f"{args.batches} batches of {args.records:,} × 100 B, one partition, seconds per batch (wall):")
        print(f"| producer | median s | min s | max s | batches over {SLOW_S} s | records/s (median) |")
        print("| --- | --- | --- | --- | --- | --- |")
        learning = transactions.learn_brokers
        for label, kept, learns in (("new per batch, init_transactions() at once", False, False),
                                    ("new per batch", False, True), ("kept across batches", True, True)):
            transactions.learn_brokers = learning if learns else (lambda producer: None)
            # the first batch makes the producer either way; the figures are the batches after it
            try:
                seconds = run(broker.bootstrap_servers, f"txn-{'kept' if kept else 'new'}-{learns}", args.batches,
                              args.records, kept)[1:]
            finally:
                transactions.learn_brokers = learning
            median = statistics.median(seconds)
            print(f"| {label} | {median:.3f} | {min(seconds):.3f} | {max(seconds):.3f} | "
                  f"{sum(s > SLOW_S for s in seconds)} of {len(seconds)} | {args.records / median:,.0f} |")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
