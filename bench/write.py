"""Write throughput: kafkasource's sink against Spark's built-in format("kafka") sink, the same rows into each.

    python3 -m bench.write [--scale 0.1] [--repeat 3] [--warm-up 1] [--sets 1p-100B,4p-1KB]
                           [--paths native,python] [--sinks built-in,at-least-once] [--avro] [--results F]

Starts a local broker, writes each data set once to Parquet (random values, one file per target partition, one
Spark task per file), then in one Spark session writes every set with every sink `--warm-up` times untimed and
`--repeat` times timed, rotating the sinks' order each round. Each write is a Trigger.AvailableNow stream from
`readStream.format("parquet")` into the sink (so every sink gets the same input, cheap to read), to a fresh
topic with the set's partition count, no key and no partition column (each sink's partitioner chooses), with a
fresh checkpoint. After every write the topic must hold exactly the set's record count, or the run fails:
the sum of the partitions' end offsets for the at-least-once writes, the records a read_committed consumer
reads for exactly-once (whose end offsets also count a commit marker per transaction and partition).

Sinks: the built-in (spark-sql-kafka-0-10 from bench/pom.xml, at-least-once, its only guarantee, default
settings), kafkasource with deliveryGuarantee at-least-once and exactly-once (one transaction per task), each
with `writePath` from `--paths` (by default the option is not passed: the sink's own choice).

`--avro`: a struct value (long, string, double, boolean, timestamp) instead, written by kafkasource with
valueFormat=avro against a schema registry (dev/registry.py) and by the built-in fed the usual workaround,
`concat(<magic byte 0 and the registry's 4-byte schema id>, to_avro(struct, <the registered schema>))`
(spark-avro, fetched by bench/reference.py).

Writes the section "Write throughput" (or "Avro write throughput") of bench/RESULTS.md: records/s and MB/s of
values, end to end (start() to awaitTermination()) and inside Spark's triggers (progress
durationMs.triggerExecution summed), medians of the timed writes, ratios to the built-in, each of ours against the
built-in and exactly-once against at-least-once round by round (the ratio within each timed round, and its median),
and CPU seconds.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

from bench import cpu, datasets
from bench.markdown import OWN_SECTIONS, replace_section
from bench.reference import SPARK_AVRO, reference_jars, spark_avro_jar
from bench.run import cpu_cell, machine, spark_session
from dev import broker as local_broker

SECTION, AVRO_SECTION = OWN_SECTIONS[1], OWN_SECTIONS[2]
BUILT_IN = "built-in"
GUARANTEES = ("at-least-once", "exactly-once")
PREFIXES = ("per-set", "per-write")
# a Python sink that drops every batch Spark hands it: what the hand-off alone costs, the bound of any Python sink
CEILING = "Python sink ceiling"
DROP_FORMAT = "kafkasource-bench-drop"
# sized so that a run with --paths native,python (3 sets × 5 sinks × (1 + 3) writes) takes 15-20 minutes on the 2-core
# machine: at --scale 0.2 with 3 sinks and 1 + 1 writes, under a load of about 7 from other work, the built-in wrote
# 40k records/s on one partition, 16-20k of 1 KB and 190k on 16 partitions; kafkasource 70-80k, 11-15k and 60-100k
DATA_SETS = (
    datasets.DataSet("1p-100B", 1, 1_000_000, 100),
    datasets.DataSet("4p-1KB", 4, 75_000, 1000),
    datasets.DataSet("16p-100B", 16, 100_000, 100),
)
AVRO_SET = datasets.DataSet("4p-avro", 4, 250_000, 0)  # value_bytes unknown before encoding: rates in records/s
AVRO_SCHEMA = {  # what to_avro writes for the struct's nullable Parquet columns, registered once
    "type": "record", "name": "topLevelRecord", "fields": [
        {"name": "id", "type": ["long", "null"]},
        {"name": "name", "type": ["string", "null"]},
        {"name": "amount", "type": ["double", "null"]},
        {"name": "paid", "type": ["boolean", "null"]},
        {"name": "at", "type": [{"type": "long", "logicalType": "timestamp-micros"}, "null"]},
    ]}
# every file one Spark task: never packed together (open cost above any file), never split
ONE_TASK_PER_FILE = {"spark.sql.files.openCostInBytes": str(2**30), "spark.sql.files.maxPartitionBytes": str(2**30)}


@dataclass(frozen=True)
class Sink:
    name: str
    guarantee: str  # at-least-once or exactly-once
    path: str | None = None  # kafkasource's writePath, passed only when given

    @property
    def builtin(self) -> bool:
        return self.name == BUILT_IN

    @property
    def ceiling(self) -> bool:
        return self.name == CEILING


def sinks_for(paths: list[str]) -> tuple[Sink, ...]:
    ours = tuple(Sink(f"kafkasource {path + ' ' if path else ''}{g}", g, path or None)
                 for path in (paths or [""]) for g in GUARANTEES)
    return (Sink(BUILT_IN, "at-least-once"), *ours, Sink(CEILING, "none"))


class DropSource(DataSource):
    """format("kafkasource-bench-drop"): a stream writer that takes every Arrow batch of its task and drops it."""

    @classmethod
    def name(cls) -> str:
        return DROP_FORMAT

    def streamWriter(self, schema, overwrite: bool):
        return DropWriter()


class DropWriter(DataSourceStreamArrowWriter):
    def write(self, iterator) -> WriterCommitMessage:
        for _ in iterator:  # Spark's batches taken, as a sink takes them, and nothing done with them
            pass
        return WriterCommitMessage()

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass


class Write(NamedTuple):
    seconds: float  # start() to the end of awaitTermination()
    inside: float  # seconds inside Spark's triggers
    rows: int
    cpu: cpu.Cpu


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="records per partition × this")
    parser.add_argument("--repeat", type=int, default=3, help="timed writes per sink and data set; the median counts")
    parser.add_argument("--warm-up", type=int, default=1, help="untimed writes per sink and data set first")
    parser.add_argument("--sets", help="comma-separated data set names (default: all): "
                        + ", ".join(d.name for d in DATA_SETS))
    parser.add_argument("--paths", default="",
                        help="comma-separated writePath values for kafkasource (auto, native, python); "
                             "default: the option not passed")
    parser.add_argument("--sinks", dest="sinks_wanted",
                        help="comma-separated sinks to run (default: all), by name or by a word of it "
                             "(built-in, at-least-once, exactly-once, python, ...)")
    parser.add_argument("--avro", action="store_true", help="the Avro struct value instead of the byte data sets")
    parser.add_argument("--prefix", choices=PREFIXES, default=PREFIXES[0],
                        help="exactly-once's transactionalIdPrefix: one per data set, the same in every round, as a "
                             "job's configuration names one (per-set, the default), or a new one for every write "
                             "(per-write: every task makes a new transactional producer)")
    parser.add_argument("--results", default=str(Path(__file__).parent / "RESULTS.md"), help="Markdown to write")
    args = parser.parse_args(argv)
    if args.scale <= 0 or args.repeat < 1 or args.warm_up < 0:
        parser.error("--scale must be above 0, --repeat at least 1, --warm-up at least 0")
    known = {d.name for d in DATA_SETS}
    wanted = set(args.sets.split(",")) if args.sets else known
    if wanted - known:
        parser.error(f"unknown data set(s) {', '.join(sorted(wanted - known))}; known: {', '.join(sorted(known))}")
    args.data_sets = ([AVRO_SET.scaled(args.scale)] if args.avro else
                      [d.scaled(args.scale) for d in DATA_SETS if d.name in wanted])
    paths = [p for p in args.paths.split(",") if p]
    if set(paths) - {"auto", "native", "python"}:
        parser.error("--paths takes auto, native and python")
    args.sinks = sinks_for(paths)
    return args


def selected(sinks: tuple[Sink, ...], wanted: str | None) -> tuple[Sink, ...]:
    if not wanted:
        return sinks
    words = wanted.split(",")
    chosen = tuple(s for s in sinks if any(w == s.name or w in s.name.split() for w in words))
    if not chosen:
        raise SystemExit(f"--sinks {wanted} matches none of {', '.join(s.name for s in sinks)}")
    return chosen


# ---- the input ---------------------------------------------------------------------------------------------------

def write_parquet(folder: Path, data_set: datasets.DataSet, avro: bool) -> None:
    """One Parquet file per partition of the set: random values of its size, or the Avro set's struct fields."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rows = data_set.records_per_partition
    rng = np.random.default_rng(7)
    for part in range(data_set.partitions):
        if avro:
            ids = np.arange(part * rows, (part + 1) * rows, dtype=np.int64)
            table = pa.table({
                "id": ids,
                "name": pa.array([f"customer-{i % 10_007:05d}" for i in ids.tolist()]),
                "amount": rng.random(rows) * 1000,
                "paid": ids % 3 == 0,
                "at": pa.array(1_764_000_000_000_000 + ids * 1000, pa.timestamp("us", tz="UTC")),
            })
        else:
            size = data_set.value_bytes
            offsets = pa.py_buffer((np.arange(rows + 1, dtype=np.int32) * size).tobytes())
            values = pa.Array.from_buffers(pa.binary(), rows, [None, offsets, pa.py_buffer(rng.bytes(rows * size))])
            table = pa.table({"value": values})
        pq.write_table(table, folder / f"part-{part:03d}.parquet", compression="none", use_dictionary=False)


# ---- the broker side ---------------------------------------------------------------------------------------------

@functools.cache
def admin_of(bootstrap: str):
    """One admin client per broker for the whole run (a client closed before its answer cancels the call)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic

    admin_of(bootstrap).create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def delete_topic(bootstrap: str, topic: str) -> None:
    admin_of(bootstrap).delete_topics([topic])[topic].result(60)


def end_offsets(bootstrap: str, topic: str, partitions: int, committed: bool) -> list[int]:
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    admin = admin_of(bootstrap)
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    found = admin.list_offsets(asked, isolation_level=level, request_timeout=30)
    return [found[tp].result(60).offset for tp in asked]


def count_committed(bootstrap: str, topic: str, partitions: int, timeout_s: float = 300) -> tuple[int, bytes | None]:
    """Records a read_committed consumer reads from the topic, and the first value of partition 0."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    # a committed transaction's markers reach its partitions just after commit_transaction() returns: until then
    # the last stable offset stays before its records
    deadline = time.monotonic() + 30
    while (ends := end_offsets(bootstrap, topic, partitions, committed=True)) != \
            end_offsets(bootstrap, topic, partitions, committed=False):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} still has an open transaction 30 s after its write ended")
        time.sleep(0.1)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafkasource-bench-write-check",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    deadline = time.monotonic() + timeout_s
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        counted, first, at_end = 0, None, {p for p in range(partitions) if ends[p] == 0}
        while len(at_end) < partitions and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None:
                    counted += 1
                    if first is None and message.partition() == 0:
                        first = message.value()
                elif message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise RuntimeError(f"reading {topic} back: {message.error()}")
        if len(at_end) < partitions:
            raise RuntimeError(f"reading {topic} back did not reach its end in {timeout_s:.0f} s")
        return counted, first
    finally:
        consumer.close()


def check_count(bootstrap: str, topic: str, sink: Sink, data_set: datasets.DataSet,
                prefix: bytes | None) -> None:
    """The topic holds exactly the set's records, or the run fails: a write that loses or duplicates is no result."""
    if sink.guarantee == "exactly-once" or prefix is not None:
        held, first = count_committed(bootstrap, topic, data_set.partitions)
        if prefix is not None and (first is None or not first.startswith(prefix)):
            raise RuntimeError(f"{sink.name} wrote {topic} without the registry's prefix {prefix.hex()}: "
                               f"{(first or b'')[:8].hex()}")
    else:
        held = sum(end_offsets(bootstrap, topic, data_set.partitions, committed=False))
    if held != data_set.records:
        raise RuntimeError(f"{sink.name} left {held:,} records in {topic}, expected {data_set.records:,} "
                           f"({data_set.name}): the write lost or duplicated records")


def check_tasks(bootstrap: str, prefix: str, data_set: datasets.DataSet) -> None:
    """An exactly-once stream's tasks each commit a batch marker for group `<prefix>-<partition>`: one group per
    Parquet file shows Spark wrote the set in one task per file, the shape every sink is meant to get."""
    listed = admin_of(bootstrap).list_consumer_groups().result(60).valid
    groups = sorted(g.group_id for g in listed if g.group_id.startswith(f"{prefix}-"))
    expected = [f"{prefix}-{p}" for p in range(data_set.partitions)]
    if groups != sorted(expected):
        raise RuntimeError(f"{data_set.name} was written by the tasks {groups}, expected one per file: {expected}")


# ---- the writes --------------------------------------------------------------------------------------------------

def source(spark, folder: Path, avro: bool):
    from pyspark.sql import types as T

    if avro:
        schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType()),
                               T.StructField("amount", T.DoubleType()), T.StructField("paid", T.BooleanType()),
                               T.StructField("at", T.TimestampType())])
    else:
        schema = T.StructType([T.StructField("value", T.BinaryType())])
    return spark.readStream.schema(schema).format("parquet").load(str(folder))


def framed(df, sink: Sink, schema_id: int | None):
    """The value column each sink is given: the bytes as they are; for --avro, the struct (kafkasource) or the
    workaround's wire-format bytes (the built-in)."""
    if schema_id is None:
        return df
    import json

    from pyspark.sql import functions as F

    fields = F.struct(*[F.col(f["name"]) for f in AVRO_SCHEMA["fields"]])
    if not sink.builtin:
        return df.select(fields.alias("value"))
    from pyspark.sql.avro.functions import to_avro

    magic = bytes([0]) + schema_id.to_bytes(4, "big")
    return df.select(F.concat(F.lit(magic), to_avro(fields, json.dumps(AVRO_SCHEMA))).alias("value"))


def transactional_prefix(sink: Sink, data_set: datasets.DataSet, topic: str, per: str) -> str:
    """exactly-once's transactionalIdPrefix: the set's own for the sink's write path, kept from write to write as a
    job keeps the one its configuration names, so a worker's transactional producers serve its later writes (two
    paths under one prefix would fence each other's); or, per write, the topic's, so that every task makes and
    initialises a new one."""
    return f"{topic}-tx" if per == "per-write" else f"bench-write-{data_set.name}-{sink.path or 'auto'}-tx"


def sink_options(sink: Sink, bootstrap: str, topic: str, registry: str | None, subject: str | None,
                 prefix: str) -> dict:
    options = {"kafka.bootstrap.servers": bootstrap, "topic": topic}
    if sink.builtin or sink.ceiling:
        return options
    options["deliveryGuarantee"] = sink.guarantee
    if sink.guarantee == "exactly-once":
        options["transactionalIdPrefix"] = prefix
    if sink.path:
        options["writePath"] = sink.path
    if registry is not None:
        options.update({"valueFormat": "avro", "schema.registry.url": registry, "valueSubject": subject})
    return options


def write_once(spark, meter: cpu.Meter, sink: Sink, bootstrap: str, data_set: datasets.DataSet, folder: Path,
               avro: tuple[str, str, int] | None, per: str) -> Write:
    """One timed write of the set into a fresh topic, checked, the topic deleted after."""
    topic = f"write-{data_set.name}-{uuid.uuid4().hex[:8]}"
    prefix = transactional_prefix(sink, data_set, topic, per)
    create_topic(bootstrap, topic, data_set.partitions)
    registry, subject, schema_id = avro if avro else (None, None, None)
    df = framed(source(spark, folder, avro is not None), sink, schema_id)
    checkpoint = tempfile.mkdtemp(prefix="kafkasource-bench-write-")
    writer = (df.writeStream.format("kafka" if sink.builtin else DROP_FORMAT if sink.ceiling else "kafkasource")
              .options(**sink_options(sink, bootstrap, topic, registry, subject, prefix))
              .option("checkpointLocation", checkpoint).trigger(availableNow=True))
    try:
        with meter.measuring() as used:
            started = time.perf_counter()
            query = writer.start()
            query.awaitTermination()
            elapsed = time.perf_counter() - started
        progress = query.recentProgress
        inside = sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000
        rows = sum(p.get("numInputRows", 0) for p in progress)
        if rows != data_set.records:
            raise RuntimeError(f"{sink.name}: the query read {rows:,} rows of {data_set.name}, expected "
                               f"{data_set.records:,}")
        if not sink.ceiling:
            check_count(bootstrap, topic, sink, data_set, bytes([0]) + schema_id.to_bytes(4, "big") if avro else None)
        if sink.guarantee == "exactly-once":
            check_tasks(bootstrap, prefix, data_set)
        delete_topic(bootstrap, topic)  # kept when the write failed, for a look at what it holds
        assert used.cpu is not None
        return Write(elapsed, inside, rows, used.cpu)
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)


# ---- the report --------------------------------------------------------------------------------------------------

Results = dict[str, dict[str, list[Write]]]  # data set -> sink -> its timed writes
MEASURES = {"end to end": lambda w: w.seconds, "inside triggers": lambda w: w.inside}


def rate_table(results: Results, data_sets: list[datasets.DataSet], sinks: tuple[Sink, ...], measure: str,
               avro: bool) -> list[str]:
    ours = [s for s in sinks if not s.builtin]
    unit = "records/s" if avro else "records/s (MB/s)"
    has_builtin = any(s.builtin for s in sinks)
    lines = ["| data set | records | " + " | ".join(f"{s.name} {unit}" for s in sinks)
             + "".join(f" | {s.name} / built-in" for s in ours if has_builtin) + " |",
             "|" + " --- |" * (2 + len(sinks) + (len(ours) if has_builtin else 0))]
    for d in data_sets:
        median = {s.name: statistics.median(MEASURES[measure](w) for w in results[d.name][s.name]) for s in sinks}
        cells = [f"{d.records / median[s.name]:,.0f}" + ("" if avro else
                 f" ({d.payload_bytes / median[s.name] / 1e6:,.1f})") for s in sinks]
        ratios = [f"{median[BUILT_IN] / median[s.name]:.2f}×" for s in ours] if has_builtin else []
        lines.append(f"| {describe(d, avro)} | {d.records:,} | " + " | ".join(cells + ratios) + " |")
    return lines


def pairs_of(sinks: tuple[Sink, ...]) -> list[tuple[Sink, Sink]]:
    """(sink, reference) pairs compared round by round: each of ours against the built-in, and exactly-once against
    at-least-once on the same write path."""
    ours = [s for s in sinks if not s.builtin and not s.ceiling]
    pairs = [(s, b) for b in sinks if b.builtin for s in ours]
    return pairs + [(e, a) for e in ours for a in ours
                    if e.guarantee == "exactly-once" and a.guarantee == "at-least-once" and e.path == a.path]


def round_table(results: Results, data_sets: list[datasets.DataSet], sinks: tuple[Sink, ...]) -> list[str]:
    """Each pair's ratio of rates within each round, and their median. The sinks of a round write one after the
    other, so a slow spell of the machine that lasts a round weighs on both sides of its ratio; between rounds the
    same write's rate has swung by up to 2.4x on the 2-core machine, which a ratio of medians carries over."""
    pairs = pairs_of(sinks)
    if not pairs:
        return ["(no two sinks to compare)"]
    lines = ["| data set | " + " | ".join(f"{s.name} / {r.name}" for s, r in pairs) + " |",
             "|" + " --- |" * (1 + len(pairs))]
    for d in data_sets:
        cells = []
        for sink, reference in pairs:
            rounds = [r.seconds / w.seconds for w, r in zip(results[d.name][sink.name],
                                                            results[d.name][reference.name], strict=True)]
            cells.append(f"**{statistics.median(rounds):.2f}** ({', '.join(f'{x:.2f}' for x in rounds)})")
        lines.append(f"| {d.name} | " + " | ".join(cells) + " |")
    return lines


def cpu_table(results: Results, data_sets: list[datasets.DataSet], sinks: tuple[Sink, ...]) -> list[str]:
    lines = ["| data set | " + " | ".join(s.name for s in sinks) + " |", "|" + " --- |" * (1 + len(sinks))]
    for d in data_sets:
        cells = []
        for s in sinks:
            writes = sorted(results[d.name][s.name], key=lambda w: w.cpu.total)
            cells.append(cpu_cell(writes[(len(writes) - 1) // 2].cpu))
        lines.append(f"| {d.name} | " + " | ".join(cells) + " |")
    return lines


def describe(d: datasets.DataSet, avro: bool) -> str:
    if avro:
        return (f"{d.name}: {d.partitions} × {d.records_per_partition:,} × a struct (long, string, double, "
                "boolean, timestamp)")
    return f"{d.name}: {d.describe()}"


def report(results: Results, data_sets: list[datasets.DataSet], sinks: tuple[Sink, ...], args,
           elapsed: float) -> str:
    command = ("python3 -m bench.write " + " ".join(sys.argv[1:])).strip()
    paths = (f"`writePath` {', '.join(p for p in dict.fromkeys(s.path for s in sinks if s.path))}"
             if any(s.path for s in sinks) else "no `writePath` option (the sink's own choice)")
    what = ("Each sink wrote a DataFrame of a struct value (5 fields: long, string, double, boolean, timestamp): "
            "kafkasource with `valueFormat=avro` against the schema registry (dev/registry.py), the built-in fed "
            "`concat(<0x00 and the registry's 4-byte schema id>, to_avro(struct, <the registered schema>))` "
            f"(spark-avro {SPARK_AVRO.rsplit(':', 1)[1]}), the usual workaround; each write's first record "
            "checked to carry that prefix. " if args.avro else "MB/s counts value bytes. ")
    return "\n".join([
        f"## {AVRO_SECTION if args.avro else SECTION}", "",
        f"`{command}`, {time.strftime('%Y-%m-%d')}, {elapsed / 60:.0f} minutes, one run.", "",
        f"Machine: {machine()}.", "",
        "Each data set was first written once to Parquet (one file per target partition, so one Spark task per "
        "file; " + ("the struct's fields" if args.avro else "random values") + "); each write is a "
        "Trigger.AvailableNow stream of `readStream.format(\"parquet\")` into the sink, `local[2]`, one "
        "session, to a fresh topic with the set's partition count (no key, no "
        "partition column: each sink's partitioner chooses), default producer settings. Per data set, each sink "
        f"wrote {args.warm_up} time(s) untimed, then {args.repeat} times timed, sinks rotating; the tables show "
        "medians of the timed writes. After every write the topic held exactly the set's record count (end "
        "offsets; for exactly-once, what a read_committed consumer reads), or the run would have failed. "
        "Sinks: the built-in `format(\"kafka\")` (Kafka's Java producer, at-least-once, its only guarantee); "
        f"kafkasource with `deliveryGuarantee` at-least-once and exactly-once (one transaction per task; "
        + ("one `transactionalIdPrefix` per data set and write path, the same in every write, so a Python worker's "
           "transactional producers serve the next write's tasks" if args.prefix == "per-set" else
           "a new `transactionalIdPrefix` for every write, so every task makes and initialises a new transactional "
           "producer") + f"), {paths}; "
        "and the Python sink ceiling: a Python stream writer (`DataSourceStreamArrowWriter`) that takes every "
        "Arrow batch Spark hands it and drops it, so its rate is what the hand-off from Spark's JVM to a Python "
        "writer allows, the bound of any Python sink on this machine (no topic is written: no count to check). "
        + what, "",
        "### End to end", "",
        "Each write timed from `start()` to the end of `awaitTermination()`: the query's start and stop included.",
        "", *rate_table(results, data_sets, sinks, "end to end", args.avro), "",
        "### Inside triggers", "",
        "The same writes, counting only Spark's time in the query's triggers (progress "
        "`durationMs.triggerExecution`, summed over its batches: reading the Parquet files, the sink's tasks, "
        "the commit and the offset log).", "",
        *rate_table(results, data_sets, sinks, "inside triggers", args.avro), "",
        "### Round by round", "",
        "End to end, the ratio of two sinks' rates within each timed round (the sinks of a round write one after "
        "the other), their median in bold, each round's in brackets.", "",
        *round_table(results, data_sets, sinks), "",
        "### CPU per write", "",
        "CPU seconds of the median write by that measure: total (the broker / Spark's JVM / the Python "
        "processes), from /proc (bench/cpu.py).", "",
        *cpu_table(results, data_sets, sinks), ""])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sinks = selected(args.sinks, args.sinks_wanted)
    started = time.perf_counter()
    jars = reference_jars() + ([spark_avro_jar()] if args.avro else [])
    work = Path(tempfile.mkdtemp(prefix="kafkasource-bench-write-data-"))
    broker = local_broker.start()
    registry = None
    try:
        bootstrap = broker.bootstrap_servers
        folders = {}
        for d in args.data_sets:
            t0 = time.perf_counter()
            folders[d.name] = work / d.name
            write_parquet(folders[d.name], d, args.avro)
            print(f"Parquet {d.name}: {describe(d, args.avro)} in {time.perf_counter() - t0:.1f} s", flush=True)
        avro = None
        if args.avro:
            avro = start_registry_subject()
            registry = avro[3]
            avro = avro[:3]
        spark = spark_session(jars)
        spark.dataSource.register(DropSource)
        for key, value in ONE_TASK_PER_FILE.items():
            spark.conf.set(key, value)
        for d in args.data_sets:
            tasks = spark.read.parquet(str(folders[d.name])).rdd.getNumPartitions()
            if tasks != d.partitions:
                raise RuntimeError(f"{d.name}: Spark reads its Parquet files in {tasks} tasks, not {d.partitions}")
        meter = cpu.Meter(broker.pid, spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
        results: Results = {d.name: {s.name: [] for s in sinks} for d in args.data_sets}
        for d in args.data_sets:
            for round_ in range(args.warm_up + args.repeat):
                label = f"warm-up {round_ + 1}" if round_ < args.warm_up else f"round {round_ - args.warm_up + 1}"
                for sink in sinks[round_ % len(sinks):] + sinks[:round_ % len(sinks)]:
                    w = write_once(spark, meter, sink, bootstrap, d, folders[d.name], avro, args.prefix)
                    if round_ >= args.warm_up:
                        results[d.name][sink.name].append(w)
                    print(f"{label}: {d.name:9s} {sink.name:34s} {w.seconds:7.2f} s {d.records / w.seconds:10,.0f} "
                          f"records/s, inside {w.inside:6.2f} s {d.records / w.inside:10,.0f} records/s, "
                          f"CPU {cpu_cell(w.cpu)}", flush=True)
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        if registry is not None:
            registry.stop()

    text = report(results, args.data_sets, sinks, args, time.perf_counter() - started)
    replace_section(Path(args.results), AVRO_SECTION if args.avro else SECTION, text)
    print(text)
    return 0


def start_registry_subject():
    """A schema registry with AVRO_SCHEMA registered: (url, subject, schema id, the registry)."""
    import json

    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    from dev import registry as local_registry

    registry = local_registry.start()
    subject = "bench-write-avro-value"
    schema_id = SchemaRegistryClient({"url": registry.url}).register_schema(
        subject, Schema(json.dumps(AVRO_SCHEMA), "AVRO"))
    return registry.url, subject, schema_id, registry


if __name__ == "__main__":
    sys.exit(main())
