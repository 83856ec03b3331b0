"""The sink's two write paths compared without Spark: one task's Arrow record batches written through the task
writer (kafkasource.writing.task.write_task) with writePath=python (a confluent-kafka produce() call per record)
and writePath=native (the extension's producer, one call per batch), under at-least-once and exactly-once.

Each run writes `--records` records of `--size` bytes (no key, the partitioner's choice of 3 partitions) in
batches of 10,000 rows, as Spark hands a Python sink's task its rows, to a fresh topic, and is timed to the end
of write_task (every record delivered, or the transaction committed). Prints records/s per run, the medians and
native's ratio to python; and, in the same run, what an exactly-once task spends on the count and digest its marker
keeps (writing/digest.py): records/s of the digest alone (inline, over the same batches), and each path's
exactly-once write with the hashing skipped (a stand-in that measures, not a mode of the sink) against the real one.

    python3 -m bench.write_native [--records 1000000] [--size 100] [--repeat 3] [--bootstrap HOST:PORT]

Without --bootstrap it starts a local broker (dev/broker.py) and stops it after.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import uuid

import pyarrow as pa

BATCH_ROWS = 10_000  # Spark's spark.sql.execution.arrow.maxRecordsPerBatch default
PATHS = ("python", "native")
GUARANTEES = ("at-least-once", "exactly-once")


def columns(topic: str):
    """The task's columns: the value alone, every record to the topic option's topic."""
    from kafkasource.writing.rows import Columns

    return Columns(topic, key=False, headers=False, partition=False)


@contextlib.contextmanager
def hashing_skipped():
    """The digest's hashing made a no-op (the count stays), to measure what it costs a write."""
    from kafkasource.writing.digest import RecordDigest

    real = RecordDigest._hash
    RecordDigest._hash = lambda self, batch: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        RecordDigest._hash = real  # type: ignore[method-assign]


def digest_seconds(data: list[pa.RecordBatch]) -> float:
    """Seconds the count and digest of `data` take, as an exactly-once task takes them."""
    from kafkasource.writing.digest import RecordDigest

    started = time.perf_counter()
    digest = RecordDigest(columns("any"))
    for batch in data:
        digest.add(batch)
    digest.hexdigest()
    return time.perf_counter() - started


def batches(records: int, size: int) -> list[pa.RecordBatch]:
    """`records` values of `size` bytes (each distinct in its first bytes), in batches of BATCH_ROWS rows."""
    out = []
    for start in range(0, records, BATCH_ROWS):
        rows = min(BATCH_ROWS, records - start)
        data = b"".join(f"{start + i:0{size}d}".encode()[:size] for i in range(rows))
        offsets = pa.array(range(0, (rows + 1) * size, size), pa.int32())
        value = pa.Array.from_buffers(pa.binary(), rows, [None, offsets.buffers()[1], pa.py_buffer(data)])
        out.append(pa.RecordBatch.from_arrays([value], names=["value"]))
    return out


def write_once(bootstrap: str, path: str, guarantee: str, data: list[pa.RecordBatch]) -> float:
    """Seconds one task takes to write `data` to a fresh topic."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkasource.options.sink import parse_sink_options
    from kafkasource.writing.task import TaskInfo, write_task

    topic = f"write-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    options = {"kafka.bootstrap.servers": bootstrap, "topic": topic, "writePath": path, "deliveryGuarantee": guarantee}
    if guarantee == "exactly-once":
        options["transactionalIdPrefix"] = topic
    sink = parse_sink_options(options, streaming=False)
    started = time.perf_counter()
    message = write_task(sink, columns(topic), data, TaskInfo(0, 0, None), streaming=False, write_id=f"write-{topic}")
    seconds = time.perf_counter() - started
    expected = sum(b.num_rows for b in data)
    if message.records != expected:
        raise RuntimeError(f"{path} {guarantee}: wrote {message.records} of {expected} records")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="bytes per value")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per path and guarantee")
    parser.add_argument("--bootstrap", help="an existing broker's address (else a local one is started)")
    args = parser.parse_args(argv)

    broker = None
    if args.bootstrap is None:
        from dev import broker as local_broker

        broker = local_broker.start()
    bootstrap = args.bootstrap or broker.bootstrap_servers
    data = batches(args.records, args.size)
    try:
        for guarantee in GUARANTEES:
            write_once(bootstrap, "native", guarantee, data[:1])  # warm: the extension loaded, the broker ready
            write_once(bootstrap, "python", guarantee, data[:1])
            medians = {}
            for path in PATHS:
                rates = [args.records / write_once(bootstrap, path, guarantee, data) for _ in range(args.repeat)]
                medians[path] = statistics.median(rates)
                print(f"{guarantee:13s} {path:6s}: {', '.join(f'{r:,.0f}' for r in rates)} records/s "
                      f"(median {medians[path]:,.0f})", flush=True)
            print(f"{guarantee:13s} native / python: {medians['native'] / medians['python']:.2f}x", flush=True)
            if guarantee == "exactly-once":
                digest = statistics.median(args.records / digest_seconds(data) for _ in range(args.repeat))
                print(f"digest alone (inline): {digest:,.0f} records/s", flush=True)
                for path in PATHS:
                    with hashing_skipped():
                        skipped = statistics.median(
                            args.records / write_once(bootstrap, path, guarantee, data) for _ in range(args.repeat)
                        )
                    print(f"exactly-once  {path:6s} hashing skipped: {skipped:,.0f} records/s; with the digest "
                          f"{medians[path] / skipped:.2f}x of that", flush=True)
    finally:
        from kafkasource.writing import producer, transactional_pool

        # the producers and marker consumers the task writer kept, closed while their broker still answers
        transactional_pool.POOL.close_all()
        producer.POOL.close_all()
        if broker is not None:
            broker.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
