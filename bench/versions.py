"""The reader on an older pyspark against the newest, on the same machine in the same run: pyspark 4.1 (the
compatibility run's virtualenv, scripts/compat.py) against constraints.txt's pyspark (4.3).

Starts a local broker, produces the data sets once, then runs one Spark session per pyspark in a process of its
own (this module with --worker, under that pyspark's Python), in rounds that alternate which pyspark goes first.
Each session drains every data set with each read path `--warm-up` times untimed and `--repeat` times timed
(Trigger.AvailableNow into the noop sink, as bench/run.py), and the medians of all timed drains count. On 4.1 the
reader plans without Spark's admission control (docs/support.md); with no rate limit an AvailableNow drain is one
batch on either. Writes bench/VERSIONS.md.

    python3 -m bench.versions [--older 4.1] [--scale 0.5] [--rounds 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SETS = ("1p-100B", "4p-100B", "4p-1KB")


def drain(spark, path: str, bootstrap: str, topic: str, shape: tuple[int, int, int]) -> tuple[float, float, int]:
    """(seconds start to end, seconds inside the triggers, rows) of one AvailableNow drain of `topic` (the ceiling:
    of the same rows, `shape` = partitions, records per partition, value bytes, from a source with no Kafka)."""
    from bench import ceiling, readers

    if path == "ceiling":
        spark.dataSource.register(ceiling.CeilingSource)
        df = (spark.readStream.format(ceiling.NAME).option("partitions", shape[0])
              .option("recordsPerPartition", shape[1]).option("valueBytes", shape[2]).option("topic", topic).load())
    else:
        df = (spark.readStream.format("kafkasource").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").option("readPath", path).load())
    drained = readers.timed(df)
    return drained.seconds, drained.reading, drained.rows


def worker(args: argparse.Namespace) -> int:
    """One Spark session under this Python's pyspark: a JSON line per timed drain on stdout."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    import pyspark
    from pyspark.sql import SparkSession

    from kafkasource.runtime import native_extension

    spark = (SparkSession.builder.master("local[2]").appName("kafkasource-bench-versions")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "2g").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    paths = (["native"] if native_extension.available() else []) + ["python", "ceiling"]
    try:
        for item in args.topics.split(","):
            name, topic, partitions, per_partition, value_bytes = item.split(":")
            shape = (int(partitions), int(per_partition), int(value_bytes))
            records = shape[0] * shape[1]
            for round_ in range(args.warm_up + args.repeat):
                for path in paths[round_ % len(paths):] + paths[:round_ % len(paths)]:
                    seconds, reading, rows = drain(spark, path, args.bootstrap, topic, shape)
                    if rows != records:
                        raise RuntimeError(f"{path} read {rows:,} rows of {name}, expected {records}")
                    if round_ >= args.warm_up:
                        print(json.dumps({"pyspark": pyspark.__version__, "set": name, "path": path,
                                          "seconds": seconds, "reading": reading, "rows": rows}), flush=True)
    finally:
        spark.stop()
    return 0


def run_worker(python: str, args: argparse.Namespace, topics: str, bootstrap: str) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [python, "-m", "bench.versions", "--worker", "--bootstrap", bootstrap, "--topics", topics,
               "--warm-up", str(args.warm_up), "--repeat", str(args.repeat)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the worker under {python} failed:\n{done.stderr[-3000:]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def table(results: list[dict], data_sets, measure: str, newer: str, older: str) -> list[str]:
    lines = [f"| data set | read path | pyspark {newer} rows/s | pyspark {older} rows/s | {older} / {newer} |",
             "| --- | --- | ---: | ---: | ---: |"]
    for d in data_sets:
        for path in ("native", "python", "ceiling"):
            rates = {}
            for version in (newer, older):
                times = [r[measure] for r in results if r["pyspark"] == version and r["set"] == d.name
                         and r["path"] == path]
                if times:
                    rates[version] = d.records / statistics.median(times)
            if len(rates) == 2:
                lines.append(f"| {d.name} ({d.describe()}) | {path} | {rates[newer]:,.0f} | {rates[older]:,.0f} | "
                             f"{rates[older] / rates[newer]:.2f}x |")
    return lines


def median_reading(results: list[dict], version: str, name: str, path: str) -> float | None:
    times = [r["reading"] for r in results if r["pyspark"] == version and r["set"] == name and r["path"] == path]
    return statistics.median(times) if times else None


def ceiling_table(results: list[dict], data_sets, newer: str, older: str) -> list[str]:
    """kafkasource's reading rate as a share of the ceiling's, on each pyspark: what is ours in a difference."""
    lines = [f"| data set | read path | pyspark {newer} | pyspark {older} |", "| --- | --- | ---: | ---: |"]
    for d in data_sets:
        for path in ("native", "python"):
            shares = []
            for version in (newer, older):
                ours, ceiling = (median_reading(results, version, d.name, p) for p in (path, "ceiling"))
                if ours is not None and ceiling is not None:
                    shares.append(ceiling / ours)
            if len(shares) == 2:
                lines.append(f"| {d.name} | {path} | {shares[0]:.0%} | {shares[1]:.0%} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topics", help=argparse.SUPPRESS)
    parser.add_argument("--older", default="4.1", help="the older pyspark: a key of scripts/compat.py's TARGETS")
    parser.add_argument("--scale", type=float, default=0.5, help="records per partition × this")
    parser.add_argument("--rounds", type=int, default=2, help="sessions per pyspark, alternating which goes first")
    parser.add_argument("--warm-up", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", default=str(REPO / "bench" / "VERSIONS.md"))
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)

    import pyspark

    from bench import datasets
    from bench.run import machine
    from dev import broker as local_broker
    from scripts import compat

    started = time.perf_counter()
    pinned, python_version = compat.TARGETS[args.older]
    older_python = str(compat.virtualenv(pinned, compat.find_python(python_version)))
    data_sets = [d.scaled(args.scale) for d in datasets.DATA_SETS if d.name in SETS]
    broker = local_broker.start()
    results: list[dict] = []
    try:
        topics = []
        for d in data_sets:
            topic = f"bench-{d.name}-{uuid.uuid4().hex[:6]}"
            datasets.produce(broker.bootstrap_servers, topic, d)
            topics.append(f"{d.name}:{topic}:{d.partitions}:{d.records_per_partition}:{d.value_bytes}")
        pythons = [sys.executable, older_python]
        for round_ in range(args.rounds):
            for python in pythons[round_ % 2:] + pythons[:round_ % 2]:
                found = run_worker(python, args, ",".join(topics), broker.bootstrap_servers)
                print(f"round {round_ + 1}: pyspark {found[0]['pyspark']}: {len(found)} timed drains", flush=True)
                results += found
                for r in found:  # the raw drains, for a table computed otherwise later
                    print(json.dumps(r), flush=True)
    finally:
        broker.stop()
        shutil.rmtree(broker.data_dir, ignore_errors=True)

    newer, older = pyspark.__version__, next(r["pyspark"] for r in results if r["pyspark"] != pyspark.__version__)
    text = "\n".join([
        f"# The reader on pyspark {older} against {newer}", "",
        f"`{' '.join(['python3 -m bench.versions', *(argv if argv is not None else sys.argv[1:])])}`, "
        f"{time.strftime('%Y-%m-%d')}, {(time.perf_counter() - started) / 60:.0f} minutes.", "",
        f"Machine: {machine()}.", "",
        f"One broker and one set of topics; {args.rounds} Spark sessions per pyspark (`local[2]`, each in a process of "
        "its own, the two pysparks alternating which goes first), each draining every data set with each read path "
        f"{args.warm_up} time(s) untimed, then {args.repeat} times timed (Trigger.AvailableNow into the noop sink, "
        "default options, random values). Medians of all the timed drains of a pyspark. On "
        f"{older} the reader plans without Spark's admission control (docs/support.md). ceiling: bench/ceiling.py, "
        "a Python source with no Kafka that hands Spark ready Arrow batches of the same rows: what that Spark costs "
        "to take rows from any Python source.", "",
        "## End to end", "", "Each drain from `start()` to the end of `awaitTermination()`.", "",
        *table(results, data_sets, "seconds", newer, older), "",
        "## Reading", "", "The time Spark spent in the query's triggers (progress `durationMs.triggerExecution`).", "",
        *table(results, data_sets, "reading", newer, older), "",
        "## Against the ceiling", "",
        "kafkasource's reading rate as a share of the ceiling's on the same pyspark: where both pysparks give the "
        "same share, the difference between them is Spark's own cost of taking rows from a Python source.", "",
        *ceiling_table(results, data_sets, newer, older), ""])
    Path(args.results).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
