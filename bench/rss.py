"""Python worker memory over a long stream: is it flat?

Starts a local broker, produces a steady flow (`--rate` records of 100 B per second, round-robin over 4
partitions) while a processing-time kafkasource query (1 s trigger, noop sink) reads it for `--minutes`,
and samples every 15 s the resident memory (VmRSS) of Spark's Python worker processes, the ones that
run the readers (`python -m pyspark.daemon pyspark.worker` and the workers it forks). Prints the
samples and writes a summary to `--results`: the workers' total RSS after the first minute (warm-up:
workers started, consumers pooled) and at the end, and the growth per minute.

    python3 -m bench.rss [--minutes 10] [--rate 5000] [--read-path auto|native|python] [--results bench/RSS.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.job_memory import command_line, vm_rss_kb
from bench.run import machine, spark_session
from dev import broker as local_broker
from dev.process import descendants
from kafkasource.metrics.progress import input_rows

SAMPLE_EVERY_S = 15
PARTITIONS = 4


def python_worker_rss_kb(marker: bytes = b"pyspark.worker") -> dict[int, int]:
    """VmRSS of this run's Python processes whose command line holds `marker`: by default the daemon that forks
    the workers running the readers, and those workers (Spark's planning daemons come and go)."""
    found = {}
    for pid in descendants(os.getpid()):
        argv = command_line(pid)
        if argv and os.path.basename(argv[0]).startswith(b"python") and marker in argv:
            rss = vm_rss_kb(pid)
            if rss is not None:  # None: the process ended meanwhile
                found[pid] = rss
    return found


def steady_flow(bootstrap: str, topic: str, rate: int, stop: threading.Event) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = os.urandom(100)
    tick, i = 0.1, 0
    while not stop.is_set():
        for _ in range(int(rate * tick)):
            producer.produce(topic, value=value, partition=i % PARTITIONS)
            i += 1
        producer.poll(0)
        stop.wait(tick)
    producer.flush(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--rate", type=int, default=5000, help="records per second")
    parser.add_argument("--read-path", default="auto", choices=("auto", "native", "python"))
    parser.add_argument("--results", default=str(Path(__file__).parent / "RSS.md"))
    args = parser.parse_args(argv)
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = local_broker.start()
    samples: list[tuple[float, int, int]] = []  # (seconds, workers, total RSS kB)
    rows_by_batch: dict[int, int] = {}
    try:
        bootstrap = broker.bootstrap_servers
        topic = f"rss-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a collected client cancels its futures
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
        spark = spark_session([])
        df = (spark.readStream.format("kafkasource").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("readPath", args.read_path).load())
        query = (df.writeStream.format("noop").trigger(processingTime="1 second")
                 .option("checkpointLocation", os.path.join(tempfile.mkdtemp(prefix="kafkasource-rss-"), "ck"))
                 .start())
        stop = threading.Event()
        producer = threading.Thread(target=steady_flow, args=(bootstrap, topic, args.rate, stop))
        producer.start()
        started = time.monotonic()
        try:
            while time.monotonic() - started < args.minutes * 60:
                time.sleep(SAMPLE_EVERY_S)
                if query.exception():
                    raise RuntimeError(f"the query failed: {query.exception()}")
                rss = python_worker_rss_kb()
                rows_by_batch.update((p["batchId"], input_rows(p)) for p in query.recentProgress)
                samples.append((time.monotonic() - started, len(rss), sum(rss.values())))
                print(f"{samples[-1][0]:6.0f} s  workers {len(rss)}  RSS {sum(rss.values()) / 1024:8.1f} MiB  "
                      f"(largest {max(rss.values(), default=0) / 1024:.1f} MiB)", flush=True)
        finally:
            stop.set()
            producer.join()
            query.stop()
            spark.stop()
    finally:
        broker.stop()

    warm = next(s for s in samples if s[0] >= 60)
    last = samples[-1]
    growth = (last[2] - warm[2]) / 1024 / ((last[0] - warm[0]) / 60)
    text = "\n".join([
        "# Python worker memory over a long stream", "",
        f"`{' '.join(['python3 -m bench.rss', *sys.argv[1:]])}`, {time.strftime('%Y-%m-%d')}.", "",
        f"Machine: {machine()}.", "",
        f"A processing-time kafkasource query (1 s trigger, noop sink, readPath={args.read_path}) read "
        f"{args.rate:,} records of 100 B per second from {PARTITIONS} partitions for {args.minutes:g} minutes "
        f"({sum(rows_by_batch.values()):,} rows in {len(rows_by_batch):,} batches). "
        f"Resident memory of Spark's Python workers, summed, sampled every {SAMPLE_EVERY_S} s:", "",
        "| | at | workers | RSS (MiB) |", "| --- | --- | --- | --- |",
        f"| after warm-up | {warm[0]:.0f} s | {warm[1]} | {warm[2] / 1024:.1f} |",
        f"| end | {last[0]:.0f} s | {last[1]} | {last[2] / 1024:.1f} |", "",
        f"Growth after warm-up: {growth:+.2f} MiB per minute.", "",
        "Every sample (s/workers/MiB): " + ", ".join(f"{s[0]:.0f}/{s[1]}/{s[2] / 1024:.0f}" for s in samples), ""])
    Path(args.results).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
