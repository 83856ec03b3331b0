"""Delta Lake and Apache Iceberg for the tests and benchmarks: their Spark jars, fetched by Maven from Maven Central
into the git-ignored cache for the running pyspark; the spark-submit arguments that load them with an Iceberg
catalog on local disk; and what a table holds durably, read from its own log and metadata files without Spark (so
that a test can look at it the moment after it killed the job writing it).

    python3 -m dev.lakehouse fetch    # the jars of the running pyspark, into .cache/lakehouse-jars/
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
import pyspark

from dev import maven
from dev.process import REPO_ROOT

# The table formats lag Spark's releases: the newest of each built for a pyspark minor release (Maven Central has
# no Delta or Iceberg for Spark 4.2 or 4.3 yet). Delta's jar needs its storage jar beside it; Iceberg's runtime jar
# holds everything.
FORMAT_JARS = {
    "4.0": ["io.delta:delta-spark_2.13:4.0.0", "io.delta:delta-storage:4.0.0",
            "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.1"],
    "4.1": ["io.delta:delta-spark_2.13:4.1.0", "io.delta:delta-storage:4.1.0",
            "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0"],
}
CATALOG = "lake"  # the Iceberg catalog the tests name tables in: lake.<namespace>.<table>


def spark_minor() -> str:
    return ".".join(pyspark.__version__.split(".")[:2])


def supported() -> bool:
    """Whether Delta and Iceberg have jars for the running pyspark."""
    return spark_minor() in FORMAT_JARS


def jars() -> list[Path]:
    """The running pyspark's Delta and Iceberg jars, fetched once."""
    artifacts = FORMAT_JARS.get(spark_minor())
    if artifacts is None:
        raise RuntimeError(f"no Delta or Iceberg jars are known for pyspark {pyspark.__version__} "
                           f"(known: {', '.join(FORMAT_JARS)})")
    folder = REPO_ROOT / ".cache" / "lakehouse-jars" / spark_minor()
    return maven.fetch(artifacts, folder, "the Delta and Iceberg jars")


def session_settings(warehouse: Path) -> dict[str, str]:
    """Delta's session extension and catalog, and an Iceberg catalog named `lake` keeping its tables under
    `warehouse` (Iceberg's Hadoop catalog: files only, no server)."""
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension,"
                                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{CATALOG}.type": "hadoop",
        f"spark.sql.catalog.{CATALOG}.warehouse": str(warehouse),
    }


def submit_arguments(warehouse: Path) -> tuple[str, ...]:
    """spark-submit arguments: the jars and session_settings."""
    conf = [part for key, value in session_settings(warehouse).items() for part in ("--conf", f"{key}={value}")]
    return ("--jars", ",".join(str(j) for j in jars()), *conf)


def delta_actions(table: Path) -> Iterator[dict]:
    """The actions of a Delta table's log, oldest first: its commits (one JSON file each, written whole or not at
    all) read in order. The log keeps every commit's JSON file beside its periodic checkpoints, so the JSON files
    alone give the table's state."""
    log = table / "_delta_log"
    for commit in sorted(log.glob("[0-9]*.json")) if log.exists() else []:
        for line in commit.read_text().splitlines():
            yield json.loads(line)


def delta_files(table: Path) -> list[Path]:
    """The data files of a Delta table's last version: each file added and not removed since."""
    live: dict[str, None] = {}
    for action in delta_actions(table):
        if "add" in action:
            live[action["add"]["path"]] = None
        elif "remove" in action:
            live.pop(action["remove"]["path"], None)
    return [table / unquote(path) for path in live]


def iceberg_metadata(warehouse: Path, name: str) -> dict | None:
    """The newest metadata of an Iceberg table in a Hadoop catalog (`name`: lake.<namespace>.<table>), None before
    its first commit: a commit is the atomic creation of the next vN.metadata.json; version-hint.text is only a
    hint."""
    _, *parts = name.split(".")
    metadata_dir = warehouse.joinpath(*parts) / "metadata"
    versions = sorted(metadata_dir.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0])) \
        if metadata_dir.exists() else []
    return json.loads(versions[-1].read_text()) if versions else None


def iceberg_files(warehouse: Path, name: str) -> list[Path]:
    """The data files of an Iceberg table's current snapshot in a Hadoop catalog: the newest metadata's current
    snapshot, its manifest list, the manifests' live entries."""
    import fastavro

    metadata = iceberg_metadata(warehouse, name)
    if metadata is None:
        return []
    current = metadata.get("current-snapshot-id")
    snapshot = next((s for s in metadata.get("snapshots", []) if s["snapshot-id"] == current), None)
    if snapshot is None:
        return []
    files = []
    with open(_local(snapshot["manifest-list"]), "rb") as f:
        manifests = [m["manifest_path"] for m in fastavro.reader(f)]
    for manifest in manifests:
        with open(_local(manifest), "rb") as f:
            files += [_local(e["data_file"]["file_path"]) for e in fastavro.reader(f) if e["status"] != 2]  # 2: deleted
    return files


def _local(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def positions(files: list[Path]) -> list[tuple[int, int]]:
    """(kafka_partition, kafka_offset) of every row of the data files."""
    rows: list[tuple[int, int]] = []
    for path in sorted(files):
        table = pq.read_table(path, columns=["kafka_partition", "kafka_offset"])
        rows += zip(table.column("kafka_partition").to_pylist(), table.column("kafka_offset").to_pylist(), strict=True)
    return rows


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit(__doc__)
    print("\n".join(str(j) for j in jars()))
