"""Read throughput: kafkasource against Spark's built-in format("kafka") and a bare consumer, in one run.

Starts a local broker, produces the data sets of bench/datasets.py once, then in one Spark session
takes the data sets one after another and drains each `--warm-up` times with each reader untimed and
`--repeat` times timed, rotating the readers' order each round so none always runs first. The untimed
rounds matter: a reader's first drains of a shape are 2-5 times slower than its later ones, for the
built-in (all JVM) as for kafkasource, and a small warm-up set of another shape did not take that cost
away. A data set's drains run back to back, as a running query's triggers do: Spark ends a Python worker
that has been idle for a minute, and when each round went over every data set, the long drains of the
big sets by the built-in and the bare consumer (no Spark Python worker) could leave kafkasource a fresh worker
(one partition of 1M records: 2.2-2.9 s after 75 s idle, 0.7 s back to back). That cost is measured on its own:
after the timed rounds of the first data set, each Spark reader drains it once more after `--idle-seconds` of nothing.
Prints and writes to bench/RESULTS.md the medians (rows/s, MB/s of values) and the ratio to the built-in, with
the machine it ran on, twice: end to end (start() to termination) and inside Spark's triggers (the
reading, without the query's start and stop); then the CPU seconds each drain cost the broker, the JVM
and the Python processes (bench/cpu.py), and what starting and stopping a query cost each reader.
A chart as bench/results.png when matplotlib is installed.

    bash scripts/bench.sh                      # installs the bench extra, then runs this module
    python3 -m bench.run [--scale 0.1] [--repeat 3] [--idle-seconds 75] [--sets 1p-100B,wide-200p] [--results F]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path

from bench import cpu, datasets, readers
from bench.markdown import carry_sections
from bench.reference import reference_jars
from dev import broker as local_broker
from kafkasource.runtime import native_extension

# the native read path when the extension is built (readPath=native), and the pure-Python one (readPath=python)
READERS = ((("kafkasource native",) if native_extension.available() else ())
           + ("kafkasource python", "built-in", "bare", "ceiling"))
PACKED = "kafkasource packed"  # packRecordsPerTask, on the wide data sets only
# drained once more after a pause, on the first data set: what a fresh Python worker costs
AFTER_IDLE = READERS[:READERS.index("built-in") + 1]


def readers_for(data_set: datasets.DataSet) -> tuple[str, ...]:
    return READERS + ((PACKED,) if data_set.name in datasets.WIDE else ())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="records per partition × this (wide sets excepted)")
    parser.add_argument("--repeat", type=int, default=3, help="drains per reader and data set; the median counts")
    parser.add_argument("--warm-up", type=int, default=1,
                        help="untimed drains per reader and data set before the timed ones")
    parser.add_argument("--idle-seconds", type=float, default=75,
                        help="pause before each reader's extra drain of the first data set, longer than the minute "
                             "after which Spark ends an idle Python worker (0: no such drains)")
    parser.add_argument("--sets", help="comma-separated data set names (default: all): "
                        + ", ".join(d.name for d in datasets.DATA_SETS))
    parser.add_argument("--results", default=str(Path(__file__).parent / "RESULTS.md"), help="Markdown to write")
    args = parser.parse_args(argv)
    known = {d.name for d in datasets.DATA_SETS}
    wanted = set(args.sets.split(",")) if args.sets else known
    if wanted - known:
        parser.error(f"unknown data set(s) {', '.join(sorted(wanted - known))}; known: {', '.join(sorted(known))}")
    if args.scale <= 0 or args.repeat < 1 or args.warm_up < 0 or args.idle_seconds < 0:
        parser.error("--scale must be above 0, --repeat at least 1, --warm-up and --idle-seconds at least 0")
    args.data_sets = [d if d.name in datasets.WIDE else d.scaled(args.scale)
                      for d in datasets.DATA_SETS if d.name in wanted]
    return args


def spark_session(jars: list[Path], settings: Mapping[str, str] | None = None, app_name: str = "kafkasource-bench"):
    """A local[2] session for the benchmarks, with `jars` and `settings` (a table format's catalog, say)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[2]").appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.memory", "2g").config("spark.ui.showConsoleProgress", "false")
               .config("spark.jars", ",".join(str(j) for j in jars)))
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def drain(spark, meter: cpu.Meter, reader: str, bootstrap: str, topic: str,
          data_set: datasets.DataSet) -> readers.Drain:
    with meter.measuring() as used:
        if reader == "bare":
            result = readers.bare_drain(bootstrap, topic, data_set.partitions, data_set.records)
        elif reader == "ceiling":
            result = readers.ceiling_drain(spark, topic, data_set.partitions, data_set.records_per_partition,
                                           data_set.value_bytes)
        else:
            result = readers.spark_drain(spark, reader, bootstrap, topic)
    if result.rows != data_set.records:
        raise RuntimeError(f"{reader} read {result.rows:,} rows of {data_set.name}, expected {data_set.records:,}")
    return result._replace(cpu=used.cpu)


Results = dict[str, dict[str, list[readers.Drain]]]  # data set -> reader -> its drains
MEASURES = {"end to end": lambda d: d.seconds, "reading": lambda d: d.reading}


def median_seconds(drains: list[readers.Drain], measure: str) -> float:
    return statistics.median(MEASURES[measure](d) for d in drains)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal"))
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    import confluent_kafka

    return (f"{os.cpu_count()} cores ({cpu}), {memory_kb / 2**20:.0f} GiB, Python {platform.python_version()}, "
            f"{java}, pyspark {version('pyspark')}, confluent-kafka {version('confluent-kafka')} "
            f"(librdkafka {confluent_kafka.libversion()[0]}), Apache Kafka {local_broker.KAFKA_VERSION} (one broker)")


def throughput_table(results: Results, data_sets: list[datasets.DataSet], measure: str) -> list[str]:
    columns = READERS + (PACKED,)
    compared = [r for r in columns if r != "built-in"]
    to_ceiling = [r for r in columns if r.startswith("kafkasource") and measure == "reading"]
    lines = ["| data set | records | " + " | ".join(f"{r} rows/s (MB/s)" for r in columns) + " | "
             + " | ".join(f"{r} / built-in" for r in compared) + "".join(f" | {r} / ceiling" for r in to_ceiling)
             + " |",
             "|" + " --- |" * (2 + len(columns) + len(compared) + len(to_ceiling))]
    for d in data_sets:
        median = {r: median_seconds(results[d.name][r], measure) for r in readers_for(d)}
        cells = [f"{d.records / median[r]:,.0f} ({d.payload_bytes / median[r] / 1e6:,.1f})" if r in median else "–"
                 for r in columns]
        ratios = [f"{median['built-in'] / median[r]:.2f}×" if r in median else "–" for r in compared]
        ratios += [f"{median['ceiling'] / median[r]:.2f}" if r in median else "–" for r in to_ceiling]
        lines.append(f"| {d.name}: {d.describe()} | {d.records:,} | " + " | ".join(cells) + " | "
                     + " | ".join(ratios) + " |")
    return lines


def log_drain(label: str, d: datasets.DataSet, reader: str, result: readers.Drain) -> None:
    print(f"{label}: {d.name:12s} {reader:18s} {result.seconds:7.2f} s {d.records / result.seconds:12,.0f} rows/s, "
          f"reading {result.reading:7.2f} s, CPU {cpu_cell(result.cpu)}", flush=True)


def cpu_cell(used: cpu.Cpu) -> str:
    return f"{used.total:.1f} ({used.broker:.1f} / {used.jvm:.1f} / {used.python:.1f})"


def cpu_table(results: Results, data_sets: list[datasets.DataSet]) -> list[str]:
    """Per data set and reader, the CPU seconds of its median drain by that measure, and where they went."""
    columns = READERS + (PACKED,)
    lines = ["| data set | " + " | ".join(columns) + " |", "|" + " --- |" * (1 + len(columns))]
    for d in data_sets:
        cells = []
        for reader in columns:
            drains = sorted(results[d.name].get(reader, []), key=lambda drain: drain.cpu.total)
            cells.append(cpu_cell(drains[(len(drains) - 1) // 2].cpu) if drains else "–")
        lines.append(f"| {d.name} | " + " | ".join(cells) + " |")
    return lines


def start_stop_table(results: Results) -> list[str]:
    """Per Spark reader, the seconds a drain spent outside Spark's triggers, over every drain of the run."""
    lines = ["| reader | median s | min s | max s |", "| --- | --- | --- | --- |"]
    for reader in [r for r in READERS + (PACKED,) if r != "bare"]:  # bare: no query, nothing outside
        outside = [d.seconds - d.reading for sets in results.values() for d in sets.get(reader, [])]
        if outside:
            lines.append(f"| {reader} | {statistics.median(outside):.2f} | {min(outside):.2f} | {max(outside):.2f} |")
    return lines


def after_idle_table(results: Results, after_idle: dict[str, readers.Drain], data_set: datasets.DataSet,
                     idle_seconds: float) -> list[str]:
    """Per Spark reader, its drain of `data_set` after a pause next to its timed drains' medians."""
    if not after_idle:
        return ["No drains after a pause in this run (--idle-seconds 0)."]
    lines = [f"{data_set.name}, each reader's drain after {idle_seconds:.0f} s with nothing running, next to the "
             "medians of its timed drains (seconds):", "",
             "| reader | reading after the pause | reading, timed rounds | end to end after the pause "
             "| end to end, timed rounds |", "| --- | --- | --- | --- | --- |"]
    for reader, drain_ in after_idle.items():
        timed = results[data_set.name][reader]
        lines.append(f"| {reader} | {drain_.reading:.2f} | {median_seconds(timed, 'reading'):.2f} | "
                     f"{drain_.seconds:.2f} | {median_seconds(timed, 'end to end'):.2f} |")
    return lines


def report(results: Results, after_idle: dict[str, readers.Drain], data_sets: list[datasets.DataSet], args,
           elapsed: float) -> str:
    command = "python3 -m bench.run " + " ".join(sys.argv[1:])
    return "\n".join([
        "# Read throughput", "",
        f"`{command.strip()}`, {time.strftime('%Y-%m-%d')}, {elapsed / 60:.0f} minutes.", "",
        f"Machine: {machine()}.", "",
        f"Data set by data set, each reader drained it {args.warm_up} time(s) untimed, then {args.repeat} times "
        "timed, from its first offset, readers alternating; the tables show medians of the timed drains (a "
        "reader's first drains of a shape are slower, the built-in's as kafkasource's). A data set's drains run "
        "back to back, so Spark's Python workers stay up between them as in a running query; what a fresh worker "
        "costs is measured apart (After a pause). Spark readers: Trigger.AvailableNow into "
        "the noop sink, `local[2]`, one session, default options; kafkasource "
        f"native: `readPath=native` (librdkafka {native_extension.librdkafka_version()} in the extension); "
        "kafkasource python: "
        "`readPath=python`; kafkasource packed: `packRecordsPerTask=10000`, on the wide topics. bare: one "
        "confluent-kafka consumer in one Python process, a Message object per record. ceiling: a Python streaming "
        "source with nothing to read that yields ready Arrow batches of the same rows, partitions and batch sizes "
        "(bench/ceiling.py): what Spark itself costs to take rows from a Python source. MB/s counts value bytes.", "",
        "## End to end", "",
        "Each drain timed from `start()` to the end of `awaitTermination()`: the query's start and stop included.",
        "", *throughput_table(results, data_sets, "end to end"), "",
        "## Reading", "",
        "The same drains, counting only the time Spark spent in the query's triggers (progress "
        "`durationMs.triggerExecution`, summed over its batches: planning, reading, the sink and the offset log, "
        "measured by Spark alike for both sources). bare: its whole drain.", "",
        *throughput_table(results, data_sets, "reading"), "",
        "## CPU per drain", "",
        "CPU seconds the drain cost the machine (user and system time from /proc, the median drain by that "
        "measure): total (the broker / Spark's JVM / Python: the processes Spark started, and for bare this "
        "process). The whole drain counts, its start included: for a Python source that is the process Spark "
        "starts for the reader's driver side with every query (about 1.3 CPU s here, the ceiling's too). Wall "
        "time on this shared machine varies from drain to drain more than CPU time does.", "",
        *cpu_table(results, data_sets), "",
        "## Starting and stopping a query", "",
        "Seconds per drain outside the triggers, over all data sets. For a Python source Spark starts a new "
        "Python process for the reader's driver side with every query, and that process imports pyspark from "
        "`pyspark.zip`, which Python cannot keep compiled: most of the difference is that start. A query that "
        "runs for hours pays it once; a short AvailableNow job pays it every run.", "",
        *start_stop_table(results), "",
        "## After a pause", "",
        "Spark ends a Python worker that has been idle for a minute (checked every 10 s); the next task forks a "
        "new one, which imports pyspark's worker module (from `pyspark.zip`), pyarrow and the source and opens a "
        "new consumer before it reads. Any Python source pays this once per idle minute; the built-in's JVM "
        "readers do not. A query whose triggers come less than a minute apart keeps its workers.", "",
        *after_idle_table(results, after_idle, data_sets[0], args.idle_seconds), "",
        "![read throughput](results.png)" if _has_matplotlib() else "", ""])


def _has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def chart(results: Results, data_sets: list[datasets.DataSet], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MEASURES), figsize=(14, 4.5), sharey=True)
    width = 0.8 / len(READERS)
    for ax, measure in zip(axes, MEASURES, strict=True):
        for i, reader in enumerate(READERS):
            rates = [d.records / median_seconds(results[d.name][reader], measure) if reader in results[d.name]
                     else 0 for d in data_sets]
            ax.bar([x + i * width for x in range(len(data_sets))], rates, width, label=reader)
        middle = width * (len(READERS) - 1) / 2  # under the middle of each group of bars
        ax.set_xticks([x + middle for x in range(len(data_sets))], [d.name for d in data_sets], rotation=20)
        ax.set_yscale("log")
        ax.set_title(f"{measure}: drain of a whole topic, 2 cores")
    axes[0].set_ylabel("rows/s (median)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    jars = reference_jars()
    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        topics = {}
        for d in args.data_sets:
            t0 = time.perf_counter()
            topics[d.name] = f"bench-{d.name}-{uuid.uuid4().hex[:6]}"
            datasets.produce(bootstrap, topics[d.name], d)
            print(f"produced {d.name}: {d.describe()} in {time.perf_counter() - t0:.1f} s", flush=True)
        spark = spark_session(jars)
        meter = cpu.Meter(broker.pid, spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())

        results: Results = {d.name: {r: [] for r in readers_for(d)} for d in args.data_sets}
        after_idle: dict[str, readers.Drain] = {}
        for d in args.data_sets:
            names = readers_for(d)
            for round_ in range(args.warm_up + args.repeat):
                label = f"warm-up {round_ + 1}" if round_ < args.warm_up else f"round {round_ - args.warm_up + 1}"
                for reader in names[round_ % len(names):] + names[:round_ % len(names)]:
                    result = drain(spark, meter, reader, bootstrap, topics[d.name], d)
                    if round_ >= args.warm_up:
                        results[d.name][reader].append(result)
                    log_drain(label, d, reader, result)
            if args.idle_seconds and d is args.data_sets[0]:
                for reader in AFTER_IDLE:
                    time.sleep(args.idle_seconds)
                    after_idle[reader] = drain(spark, meter, reader, bootstrap, topics[d.name], d)
                    log_drain(f"after {args.idle_seconds:.0f} s idle", d, reader, after_idle[reader])
        spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)

    text = report(results, after_idle, args.data_sets, args, time.perf_counter() - started)
    Path(args.results).write_text(carry_sections(Path(args.results), text))  # other scripts' sections kept
    if _has_matplotlib():
        chart(results, args.data_sets, Path(args.results).with_name("results.png"))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
