"""The sink's producer settings, measured one knob at a time without Spark: what each costs or gains a task's write.

    python3 -m bench.producer_settings [--scale 0.2] [--rounds 4] [--only linger,compression] [--write]

Starts a local broker and, in this process, calls the sink's task writer (kafkasource.writing.task.write_task)
with Arrow record batches of 10,000 rows, as a Spark task's write() is called: one task writing its rows to a
4-partition topic, no key (the sink's partitioner chooses), under deliveryGuarantee at-least-once (the pooled
idempotent producer, kept between writes as in a Python worker) and exactly-once (a transactional producer and one
transaction per write, as per task). Each setting is the sink's defaults with one kafka.* setting changed; per
value size and guarantee the settings run in rounds (one untimed write each first: the producer made and
connected), alternating, and the median of the timed writes counts. Measured per write: records/s (wall), this
process's CPU seconds (process_time: the Python loop and librdkafka's threads) and the broker's (/proc), and the
bytes the broker's log grew by (its .log segment files), which is what compression changes: on loopback it
saves no network time, only bytes on disk and on a real network. Every write is checked: the task's count, and
the topic's end offsets grown by exactly that many records (exactly-once: plus at most one commit marker per
partition).

Values: random bytes (incompressible); the compression knob also with half-compressible values (half random,
half one repeated byte, as bench/datasets.py makes them). Prints the tables; --write puts them in the section
"Figures" of bench/PRODUCER.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from bench import markdown
from bench.run import machine
from dev import broker as local_broker
from dev.process import stat_fields

OUT = Path(__file__).parent / "PRODUCER.md"
TICKS = os.sysconf("SC_CLK_TCK")
PARTITIONS = 4
ROWS_PER_BATCH = 10_000  # Spark's spark.sql.execution.arrow.maxRecordsPerBatch default
SIZES = {"100 B": (100, 150_000), "1 KB": (1000, 40_000)}  # value bytes, records per write at --scale 1
GUARANTEES = ("at-least-once", "exactly-once")


@dataclass(frozen=True)
class Setting:
    knob: str
    label: str
    config: tuple[tuple[str, str], ...] = ()  # kafka.* settings over the sink's defaults
    compressible: bool = False

    @property
    def name(self) -> str:
        return f"{self.label}{', half-compressible values' if self.compressible else ''}"


DEFAULT = Setting("defaults", "the sink's defaults")
SETTINGS = (
    DEFAULT,
    Setting("linger", "linger.ms=20", (("linger.ms", "20"),)),
    Setting("linger", "linger.ms=100", (("linger.ms", "100"),)),
    Setting("batch", "batch.num.messages=100000", (("batch.num.messages", "100000"),)),
    Setting("batch", "batch.size=262144", (("batch.size", "262144"),)),
    Setting("compression", "compression.type=lz4", (("compression.type", "lz4"),)),
    Setting("compression", "compression.type=zstd", (("compression.type", "zstd"),)),
    Setting("compression", "compression.type=none", (), compressible=True),
    Setting("compression", "compression.type=lz4", (("compression.type", "lz4"),), compressible=True),
    Setting("compression", "compression.type=zstd", (("compression.type", "zstd"),), compressible=True),
    Setting("in-flight", "max.in.flight=1", (("max.in.flight", "1"),)),
    Setting("in-flight", "max.in.flight=2", (("max.in.flight", "2"),)),
)


class Measured(NamedTuple):
    seconds: float
    client_cpu: float
    broker_cpu: float
    log_bytes: int


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="records per write × this")
    parser.add_argument("--rounds", type=int, default=4, help="timed writes per setting; the median counts")
    parser.add_argument("--only", help="comma-separated knobs (linger, batch, compression, in-flight); the "
                        "defaults always run")
    parser.add_argument("--sizes", default=",".join(SIZES), help="value sizes: " + ", ".join(SIZES))
    parser.add_argument("--guarantees", default=",".join(GUARANTEES))
    parser.add_argument("--write", action="store_true", help="put the tables in bench/PRODUCER.md")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.rounds < 1:
        parser.error("--scale must be above 0 and --rounds at least 1")
    knobs = set(args.only.split(",")) if args.only else {s.knob for s in SETTINGS}
    args.settings = [s for s in SETTINGS if s is DEFAULT or s.knob in knobs]
    args.sizes = [s.strip() for s in args.sizes.split(",")]
    args.guarantees = args.guarantees.split(",")
    if set(args.sizes) - set(SIZES) or set(args.guarantees) - set(GUARANTEES):
        parser.error(f"--sizes takes {', '.join(SIZES)}; --guarantees {', '.join(GUARANTEES)}")
    return args


def batches(value_bytes: int, records: int, compressible: bool) -> list:
    """Arrow record batches of one `value` column, ROWS_PER_BATCH rows each, every value distinct."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(11)
    out = []
    for start in range(0, records, ROWS_PER_BATCH):
        rows = min(ROWS_PER_BATCH, records - start)
        if compressible:  # each value: half random, half one repeated byte
            data = np.full((rows, value_bytes), ord("x"), dtype=np.uint8)
            data[:, : value_bytes // 2] = rng.integers(0, 256, (rows, value_bytes // 2), dtype=np.uint8)
            raw = data.tobytes()
        else:
            raw = rng.bytes(rows * value_bytes)
        offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * value_bytes).tobytes())
        values = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, pa.py_buffer(raw)])
        out.append(pa.RecordBatch.from_arrays([values], names=["value"]))
    return out


def log_bytes(broker: local_broker.Broker, topic: str) -> int:
    return sum(f.stat().st_size for p in range(PARTITIONS)
               for f in (broker.data_dir / "logs" / f"{topic}-{p}").glob("*.log"))


def end_offsets(admin, topic: str) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}
    return sum(f.result(60).offset for f in admin.list_offsets(asked, request_timeout=30).values())


def broker_ticks(broker: local_broker.Broker) -> int:
    fields = stat_fields(broker.pid)
    return int(fields[11]) + int(fields[12])


def write(broker, admin, topic: str, guarantee: str, setting: Setting, data: list, records: int) -> Measured:
    """One task's write of `data` through the sink's task writer, measured and checked."""
    from kafkasource.options.sink import parse_sink_options
    from kafkasource.writing.rows import Columns
    from kafkasource.writing.task import TaskInfo, write_task

    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "topic": topic,
               "deliveryGuarantee": guarantee, **{f"kafka.{k}": v for k, v in setting.config}}
    if guarantee == "exactly-once":
        options["transactionalIdPrefix"] = f"{topic}-tx"
    sink = parse_sink_options(options, streaming=False)
    columns = Columns(topic=topic, key=False, headers=False, partition=False)
    offsets_before, bytes_before = end_offsets(admin, topic), log_bytes(broker, topic)
    ticks_before = broker_ticks(broker)
    cpu_before, started = time.process_time(), time.perf_counter()
    message = write_task(sink, columns, iter(data), TaskInfo(0, 0, None), streaming=False, write_id=f"write-{topic}")
    seconds, client_cpu = time.perf_counter() - started, time.process_time() - cpu_before
    broker_cpu = (broker_ticks(broker) - ticks_before) / TICKS
    grown = end_offsets(admin, topic) - offsets_before
    markers = PARTITIONS if guarantee == "exactly-once" else 0  # a commit marker in each partition written to
    if message.records != records or not records <= grown <= records + markers:
        raise RuntimeError(f"{setting.name}, {guarantee}: the task wrote {message.records:,} records and the "
                           f"topic grew by {grown:,} offsets, expected {records:,} records")
    return Measured(seconds, client_cpu, broker_cpu, log_bytes(broker, topic) - bytes_before)


Results = dict[tuple[str, str], dict[Setting, list[Measured]]]  # (size, guarantee) -> setting -> its writes


def run(args) -> tuple[Results, dict[str, int]]:
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = local_broker.start()
    results: Results = {}
    counts = {}
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for size in args.sizes:
            value_bytes, records = SIZES[size]
            records = max(ROWS_PER_BATCH, round(records * args.scale))
            counts[size] = records
            data = {c: batches(value_bytes, records, c) for c in {s.compressible for s in args.settings}}
            for guarantee in args.guarantees:
                topics = {s: f"producer-{uuid.uuid4().hex[:8]}" for s in args.settings}
                for topic in topics.values():
                    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
                found = results[(size, guarantee)] = {s: [] for s in args.settings}
                for round_ in range(1 + args.rounds):  # round 0: untimed
                    order = args.settings[round_ % len(args.settings):] + args.settings[:round_ % len(args.settings)]
                    for setting in order:
                        m = write(broker, admin, topics[setting], guarantee, setting, data[setting.compressible],
                                  records)
                        if round_:
                            found[setting].append(m)
                        print(f"{'timed' if round_ else 'untimed'} {size:5s} {guarantee:13s} {setting.name:55s} "
                              f"{records / m.seconds:10,.0f} records/s, CPU {m.client_cpu:5.2f} + broker "
                              f"{m.broker_cpu:5.2f} s, {m.log_bytes / records:6.1f} B/record on the broker",
                              flush=True)
                for topic in topics.values():
                    admin.delete_topics([topic])[topic].result(60)
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)
    return results, counts


def table(found: dict[Setting, list[Measured]], records: int, value_bytes: int) -> list[str]:
    base = statistics.median(m.seconds for m in found[DEFAULT])
    lines = ["| setting | records/s (MB/s) | slowest–fastest write, records/s | vs defaults "
             "| CPU s per 100k records: client + broker | broker log bytes per record |",
             "| --- | --- | --- | --- | --- | --- |"]
    for setting, writes in found.items():
        seconds = statistics.median(m.seconds for m in writes)
        spread = f"{records / max(m.seconds for m in writes):,.0f}–{records / min(m.seconds for m in writes):,.0f}"
        client = statistics.median(m.client_cpu for m in writes) / records * 1e5
        broker = statistics.median(m.broker_cpu for m in writes) / records * 1e5
        stored = statistics.median(m.log_bytes for m in writes) / records
        lines.append(f"| {setting.name} | {records / seconds:,.0f} ({records * value_bytes / seconds / 1e6:,.1f}) | "
                     f"{spread} | {base / seconds:.2f}× | {client:.2f} + {broker:.2f} | {stored:,.1f} |")
    return lines


def report(results: Results, counts: dict[str, int], args, elapsed: float) -> str:
    command = ("python3 -m bench.producer_settings " + " ".join(sys.argv[1:])).strip()
    from kafkasource.options.sink import AT_LEAST_ONCE_DEFAULTS, PRODUCER_DEFAULTS

    defaults = ", ".join(f"`{k}={v}`" for k, v in {**PRODUCER_DEFAULTS, **AT_LEAST_ONCE_DEFAULTS}.items())
    lines = ["## Figures", "",
             f"`{command}`, {time.strftime('%Y-%m-%d')}, {elapsed / 60:.1f} minutes, one run.", "",
             f"Machine: {machine()}.", "",
             f"The sink's defaults at the time: {defaults} (the idempotence under at-least-once only), librdkafka's "
             f"for the rest. Medians of {args.rounds} timed writes per setting, after an untimed one; one task's "
             f"write of 10,000-row Arrow batches to a {PARTITIONS}-partition topic.", ""]
    for (size, guarantee), found in results.items():
        value_bytes, _ = SIZES[size]
        lines += [f"### {size} values, {guarantee}, {counts[size]:,} records per write", "",
                  *table(found, counts[size], value_bytes), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    results, counts = run(args)
    text = report(results, counts, args, time.perf_counter() - started)
    print(text)
    if args.write:
        markdown.replace_section(OUT, "Figures", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
