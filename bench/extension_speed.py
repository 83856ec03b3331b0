"""A read's speed with two builds of the native extension: the everyday one (`pip install -e .`, system OpenSSL
and zlib, this machine's glibc) and the portable one from a wheel (scripts/wheels.py: everything linked in,
glibc 2.17, compiled by zig's clang).

Starts a local broker, produces the 1p-100B data set (bench/datasets.py, scaled) once, then drains it with
readPath=native in a fresh Python and Spark per round, alternating the builds: each round runs against a copy of
the package holding that build's extension (first on PYTHONPATH, for the driver and Spark's Python workers, which
report the file they loaded; they run `python -m`, which puts the working directory first, so each round runs in
its copy's folder). Per round one untimed drain, then `--repeat` timed ones; prints the medians of
the reading (Spark's trigger time) and end to end, and of the CPU seconds a read of the partition costs in
one process without Spark (task_reader.read_ranges), and the portable build's ratios to the everyday one.

    python3 -m bench.extension_speed dist/kafkasource-0.2.0-cp311-abi3-manylinux2014_x86_64.whl [--scale 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench import datasets

REPO = Path(__file__).resolve().parent.parent
EXTENSION = "kafkasource/_native.abi3.so"


def package_copy(folder: Path, extension: bytes) -> Path:
    shutil.copytree(REPO / "kafkasource", folder / "kafkasource", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    shutil.copy(REPO / "pyspark_kafkasource.py", folder)
    (folder / EXTENSION).write_bytes(extension)
    return folder


def drain_rounds(bootstrap: str, topic: str, records: int, repeat: int) -> None:
    """In this process: a Spark session, one untimed and `repeat` timed native drains; prints JSON."""
    from bench import readers
    from bench.run import spark_session

    spark = spark_session([])
    loaded = spark.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("kafkasource._native", fromlist=["_"]).__file__).collect()[0]
    drains = [readers.spark_drain(spark, "kafkasource native", bootstrap, topic) for _ in range(repeat + 1)]
    spark.stop()
    if any(d.rows != records for d in drains):
        raise RuntimeError(f"read {[d.rows for d in drains]} rows, expected {records}")
    in_process = [read_in_process(bootstrap, topic, records) for _ in range(repeat + 1)][1:]
    print(json.dumps({"worker_extension": loaded, "reading": [d.reading for d in drains[1:]],
                      "seconds": [d.seconds for d in drains[1:]], "cpu": in_process}))


def read_in_process(bootstrap: str, topic: str, records: int) -> float:
    """The CPU seconds (this process, librdkafka's threads included) of reading the partition with the native
    consumer here, without Spark: steadier than wall time on a machine others are using."""
    from kafkasource.planning.ranges import OffsetRange
    from kafkasource.reading.consumers import FetchConfig
    from kafkasource.reading.task_reader import read_ranges

    config = FetchConfig({"bootstrap.servers": bootstrap}, include_headers=False, fail_on_data_loss=True,
                         poll_timeout_ms=10_000, read_path="native")
    started = time.process_time()
    rows = sum(batch.num_rows for batch in read_ranges((OffsetRange(topic, 0, 0, records),), config))
    used = time.process_time() - started
    if rows != records:
        raise RuntimeError(f"read {rows} rows in process, expected {records}")
    return used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help="a portable wheel for this machine (x86_64)")
    parser.add_argument("--everyday", type=Path, default=REPO / EXTENSION,
                        help="the everyday build's extension (default: the one in the checkout)")
    parser.add_argument("--scale", type=float, default=0.5, help="1p-100B's 1M records × this")
    parser.add_argument("--repeat", type=int, default=3, help="timed drains per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per build, alternating")
    parser.add_argument("--drain", nargs=3, metavar=("BOOTSTRAP", "TOPIC", "RECORDS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drain:
        drain_rounds(args.drain[0], args.drain[1], int(args.drain[2]), args.repeat)
        return 0

    from dev import broker as local_broker

    with zipfile.ZipFile(args.wheel) as wheel:
        builds = {"everyday": args.everyday.read_bytes(), "portable": wheel.read(EXTENSION)}
    data_set = next(d for d in datasets.DATA_SETS if d.name == "1p-100B").scaled(args.scale)
    broker = local_broker.start()
    results: dict[str, dict[str, list[float]]] = {name: {"reading": [], "seconds": [], "cpu": []} for name in builds}
    try:
        topic = "extension-speed"
        datasets.produce(broker.bootstrap_servers, topic, data_set)
        with tempfile.TemporaryDirectory(prefix="kafkasource-extension-speed-") as tmp:
            folders = {name: package_copy(Path(tmp) / name, extension) for name, extension in builds.items()}
            for round_ in range(args.rounds):
                for name, folder in folders.items():
                    env = dict(os.environ, PYTHONPATH=f"{folder}{os.pathsep}{REPO}")
                    out = subprocess.run([sys.executable, "-m", "bench.extension_speed", str(args.wheel),
                                          "--repeat", str(args.repeat), "--drain", broker.bootstrap_servers, topic,
                                          str(data_set.records)], cwd=folder, env=env, capture_output=True,
                                         text=True, check=True).stdout
                    run = json.loads(out.strip().splitlines()[-1])
                    if not run["worker_extension"].startswith(str(folder)):
                        raise RuntimeError(f"{name}: Spark's worker loaded {run['worker_extension']}")
                    results[name]["reading"] += run["reading"]
                    results[name]["seconds"] += run["seconds"]
                    results[name]["cpu"] += run["cpu"]
                    print(f"round {round_ + 1} {name:8s}: reading {', '.join(f'{s:.2f}' for s in run['reading'])} s; "
                          f"end to end {', '.join(f'{s:.2f}' for s in run['seconds'])} s; "
                          f"in process {', '.join(f'{s:.2f}' for s in run['cpu'])} CPU s", flush=True)
    finally:
        broker.stop()

    print(f"\n{data_set.name}: {data_set.describe()}, {data_set.records:,} records, readPath=native, "
          f"{args.rounds} rounds × {args.repeat} drains per build")
    print("| build | reading, median s | rows/s | end to end, median s | rows/s | in process, median CPU s |\n"
          "| --- | --- | --- | --- | --- | --- |")
    medians = {}
    for name, measures in results.items():
        medians[name] = reading, seconds, cpu = [statistics.median(measures[m]) for m in ("reading", "seconds", "cpu")]
        print(f"| {name} | {reading:.2f} | {data_set.records / reading:,.0f} | {seconds:.2f} | "
              f"{data_set.records / seconds:,.0f} | {cpu:.2f} |")
    ratios = [medians["portable"][i] / medians["everyday"][i] for i in range(3)]
    print(f"portable / everyday: reading {ratios[0]:.2f}, end to end {ratios[1]:.2f}, CPU in process {ratios[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
