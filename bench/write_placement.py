"""Where an exactly-once task's keyless records go, measured without Spark: one task writes `--records` keyless
records of `--size` bytes to a fresh topic of `--partitions` partitions, through the task writer
(kafkasource.writing.task.write_task, writePath native), either spread by the partitioner (a partition column of
nulls, which lets librdkafka choose, as the sink did before it placed keyless records) or as the sink places them
now (no partition column: one partition per task, writing/placement.py); at-least-once (which the sink leaves to
the partitioner) beside both for reference.
Prints each row's median records/s over `--repeat` writes (rows interleaved) and the mean CPU seconds of this
process (the producer) and of the broker per write.

    python3 -m bench.write_placement [--records 1000000] [--size 100] [--partitions 16] [--repeat 3]

Starts a local broker (dev/broker.py) and stops it after.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
import uuid

import pyarrow as pa

from bench.write_native import batches
from dev import broker as local_broker
from dev.process import stat_fields

ROWS = [
    ("at-least-once", "spread"),
    ("exactly-once", "spread"),
    ("exactly-once", "placed"),
]


def with_null_partitions(data: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    return [
        pa.RecordBatch.from_arrays([b.column(0), pa.nulls(b.num_rows, pa.int32())], names=["value", "partition"])
        for b in data
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="bytes per value")
    parser.add_argument("--partitions", type=int, default=16, help="the topic's partitions")
    parser.add_argument("--repeat", type=int, default=3, help="timed writes per row")
    args = parser.parse_args(argv)

    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkasource.options.sink import parse_sink_options
    from kafkasource.writing.rows import Columns
    from kafkasource.writing.task import TaskInfo, write_task

    broker = local_broker.start()
    tick = os.sysconf("SC_CLK_TCK")

    def broker_cpu() -> float:
        fields = stat_fields(broker.pid)
        return (int(fields[11]) + int(fields[12])) / tick

    def own_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    data = batches(args.records, args.size)
    spread = with_null_partitions(data)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})

    def write(guarantee: str, how: str) -> tuple[float, float, float]:
        topic = f"placement-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic, "writePath": "native",
                   "deliveryGuarantee": guarantee}
        if guarantee == "exactly-once":
            options["transactionalIdPrefix"] = "placement-bench"  # one producer, kept between writes
        sink = parse_sink_options(options, streaming=False)
        columns = Columns(topic, key=False, headers=False, partition=how == "spread")
        cpu, broker_before, started = own_cpu(), broker_cpu(), time.perf_counter()
        write_task(sink, columns, spread if how == "spread" else data, TaskInfo(0, 0, None), streaming=False,
                   write_id=f"write-{topic}")
        return time.perf_counter() - started, own_cpu() - cpu, broker_cpu() - broker_before

    try:
        for row in ROWS:
            write(*row)  # warm: the extension loaded, the producers kept
        runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {row: [] for row in ROWS}
        for _ in range(args.repeat):
            for row in ROWS:
                runs[row].append(write(*row))
        print(f"{args.records:,} keyless records of {args.size} B into {args.partitions} partitions, one task, "
              f"medians of {args.repeat}:")
        for (guarantee, how), timed in runs.items():
            rate = args.records / statistics.median(t for t, _, _ in timed)
            own, brokers = statistics.mean(c for _, c, _ in timed), statistics.mean(b for _, _, b in timed)
            print(f"  {guarantee:14} {how:7} {rate:>12,.0f} records/s   CPU: producer {own:.2f} s, "
                  f"broker {brokers:.2f} s")
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
