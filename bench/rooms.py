"""The read paths' speed before and after a change to the package's Python code, on the same machine: by
default the package as it was before it moved into rooms (f0bab94^, flat modules) against HEAD.

Exports `kafkasource/` at both revisions with `git archive` into a temporary folder and copies this checkout's
native extension into both, so the same build serves both and only the Python code differs. Starts a local
broker and produces the data sets once (one partition each: random 100 B and 1 KB values, and the Avro orders
of bench/avro.py in the registry's wire format), then runs rounds alternating the revisions (before, after,
before, ...), each in a fresh Python that imports that revision's copy. A round reads every partition fully
through the task reader without Spark (read_ranges, as a Spark task does) with each read path, once untimed
(the consumer made and connected, the code compiled) then `--repeat` times timed: CPU seconds of the process
(process_time, librdkafka's threads included: steadier than wall time on a machine others are using) and wall
seconds, the row count checked. The Avro set is also decoded, batch by batch, by the Python decoder (fastavro)
and by the native one, as a query with valueFormat avro does after reading.

Prints a markdown table of the medians per data set and read path, and with --write puts it in bench/ROOMS.md's
"Figures" section.

    python3 -m bench.rooms [--before f0bab94^] [--after HEAD] [--scale 0.3] [--rounds 5] [--repeat 2] [--write]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from bench import datasets, markdown

REPO = Path(__file__).resolve().parent.parent
EXTENSION = "kafkasource/_native.abi3.so"
OUT = REPO / "bench" / "ROOMS.md"

# name -> (its module since the rooms, before them); a copy holding kafkasource/reading/ is in rooms
ROOMS = {
    "FetchConfig": ("kafkasource.reading.consumers", "kafkasource.fetch"),
    "OffsetRange": ("kafkasource.planning.ranges", "kafkasource.ranges"),
    "read_ranges": ("kafkasource.reading.task_reader", "kafkasource.task_reader"),
    "AvroDecoder": ("kafkasource.formats.avro.decode", "kafkasource.avro_decode"),
    "RegistrySchema": ("kafkasource.formats.registry", "kafkasource.schema_registry"),
}

# what each data set is read with: a read path, and for the Avro set the decoder after it
PATHS = {"100B": ("python", "native"), "1KB": ("python", "native"), "avro": ("python+fastavro", "native+native")}


def data_sets(scale: float) -> dict[str, datasets.DataSet]:
    one_kb = next(d for d in datasets.DATA_SETS if d.name == "4p-1KB")
    return {"100B": next(d for d in datasets.DATA_SETS if d.name == "1p-100B").scaled(scale),
            "1KB": datasets.DataSet("1p-1KB", 1, one_kb.records_per_partition, 1000).scaled(scale),
            "avro": datasets.DataSet("1p-avro", 1, 200_000, 150).scaled(scale)}


def describe(key: str, data_set: datasets.DataSet) -> str:
    if key == "avro":
        return f"{data_set.partitions} × {data_set.records_per_partition:,} × an Avro order (~150 B, wire format)"
    return data_set.describe()


def export(revision: str, folder: Path) -> Path:
    """`kafkasource/` as it was at `revision`, with this checkout's native extension, in `folder`."""
    archive = subprocess.run(["git", "archive", "--format=tar", revision, "kafkasource"], cwd=REPO,
                             capture_output=True, check=True).stdout
    folder.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    shutil.copy(REPO / EXTENSION, folder / EXTENSION)
    return folder


def names() -> dict:
    in_rooms = importlib.util.find_spec("kafkasource.reading") is not None
    return {name: getattr(importlib.import_module(modules[0 if in_rooms else 1]), name)
            for name, modules in ROOMS.items()}


def measure(bootstrap: str, cases: list[dict], avro: dict, repeat: int) -> None:
    """In this process (a copy's kafkasource first on the path): every case read once untimed, then `repeat`
    times timed; prints JSON."""
    n = names()
    writers = {int(i): n["RegistrySchema"](int(i), "AVRO", json.dumps(s)) for i, s in avro["writers"].items()}
    results = {}
    for case in cases:
        read_path, _, decoder_kind = case["path"].partition("+")
        config = n["FetchConfig"]({"bootstrap.servers": bootstrap}, include_headers=False, fail_on_data_loss=True,
                                  poll_timeout_ms=10_000, read_path=read_path)
        ranges = (n["OffsetRange"](case["topic"], 0, 0, case["records"]),)
        decoder = None
        if decoder_kind:
            decoder = n["AvroDecoder"](json.dumps(avro["reader"]), native=decoder_kind == "native")
        cpu, wall = [], []
        for _ in range(repeat + 1):
            started, started_cpu = time.perf_counter(), time.process_time()
            rows = 0
            for batch in n["read_ranges"](ranges, config):
                rows += batch.num_rows
                if decoder:
                    _, reasons = decoder.decode(batch.column("value"), writers)
                    if reasons.null_count != batch.num_rows:
                        raise RuntimeError(f"{case['name']}: a record failed to decode: {reasons.drop_null()[0]}")
            cpu.append(time.process_time() - started_cpu)
            wall.append(time.perf_counter() - started)
            if rows != case["records"]:
                raise RuntimeError(f"{case['name']}: read {rows} rows, expected {case['records']}")
        results[case["name"]] = {"cpu": cpu[1:], "wall": wall[1:]}
    import kafkasource

    print(json.dumps({"package": kafkasource.__file__, "results": results}))


def table(results: dict, revisions: tuple[str, str], sets: dict[str, datasets.DataSet]) -> str:
    before, after = revisions
    lines = [f"| data set | read path | {before}, CPU s | {after}, CPU s | after / before | "
             f"{before}, wall s | {after}, wall s | after / before |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for key, data_set in sets.items():
        for path in PATHS[key]:
            name = f"{key} {path}"
            cpu = [statistics.median(results[r][name]["cpu"]) for r in revisions]
            wall = [statistics.median(results[r][name]["wall"]) for r in revisions]
            lines.append(f"| {data_set.name}: {describe(key, data_set)} | {path} | {cpu[0]:.3f} | {cpu[1]:.3f} | "
                         f"{cpu[1] / cpu[0]:.2f} | {wall[0]:.3f} | {wall[1]:.3f} | {wall[1] / wall[0]:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="f0bab94^", help="the revision measured first in each pair")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--scale", type=float, default=0.3, help="the data sets' records × this")
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per revision, alternating")
    parser.add_argument("--repeat", type=int, default=2, help="timed reads per case and round")
    parser.add_argument("--write", action="store_true", help=f"put the table in {OUT.relative_to(REPO)}")
    parser.add_argument("--measure", nargs=3, metavar=("BOOTSTRAP", "CASES", "AVRO"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(args.measure[0], json.loads(args.measure[1]), json.loads(args.measure[2]), args.repeat)
        return 0

    from bench import avro
    from dev import broker as local_broker

    revisions = (args.before, args.after)
    sets = data_sets(args.scale)
    avro_schemas = json.dumps({"reader": avro.V2, "writers": avro.WRITERS})
    cases = [{"name": f"{key} {path}", "topic": f"rooms-{key}", "records": sets[key].records, "path": path}
             for key in sets for path in PATHS[key]]
    results: dict[str, dict] = {r: {c["name"]: {"cpu": [], "wall": []} for c in cases} for r in revisions}
    broker = local_broker.start()
    try:
        for key, data_set in sets.items():
            values = avro.payloads(datasets.VALUE_POOL).to_pylist() if key == "avro" else None
            datasets.produce(broker.bootstrap_servers, f"rooms-{key}", data_set, values)
        with tempfile.TemporaryDirectory(prefix="kafkasource-rooms-") as tmp:
            copies = {r: export(r, Path(tmp) / f"rev{i}") for i, r in enumerate(revisions)}
            for round_ in range(args.rounds):
                for revision, folder in copies.items():
                    # `python -m` puts the working directory first: the copy's kafkasource, then bench/ from here
                    env = dict(os.environ, PYTHONPATH=f"{folder}{os.pathsep}{REPO}")
                    out = subprocess.run(
                        [sys.executable, "-m", "bench.rooms", "--repeat", str(args.repeat), "--measure",
                         broker.bootstrap_servers, json.dumps(cases), avro_schemas],
                        cwd=folder, env=env, capture_output=True, text=True, check=True).stdout
                    run = json.loads(out.strip().splitlines()[-1])
                    if not run["package"].startswith(str(folder)):
                        raise RuntimeError(f"{revision}: imported {run['package']}")
                    for name, measures in run["results"].items():
                        for m in ("cpu", "wall"):
                            results[revision][name][m] += measures[m]
                    print(f"round {round_ + 1} {revision}: " + "; ".join(
                        f"{name} {', '.join(f'{s:.2f}' for s in measures['cpu'])}"
                        for name, measures in run["results"].items()) + " CPU s", flush=True)
    finally:
        broker.stop()

    command = "python3 -m bench.rooms " + " ".join(argv if argv is not None else sys.argv[1:])
    load = os.getloadavg()
    body = (f"## Figures\n\nMedians of {args.rounds} rounds × {args.repeat} timed reads per revision (fresh "
            f"process per round, revisions alternating), one partition read fully through read_ranges without "
            f"Spark; the same native extension in both. Load average at the end: {load[0]:.1f}, {load[1]:.1f}, "
            f"{load[2]:.1f} on {os.cpu_count()} cores.\n\n{table(results, revisions, sets)}\n\n`{command.strip()}`\n")
    print("\n" + body)
    if args.write:
        markdown.replace_section(OUT, "Figures", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
