"""Delta Lake and Apache Iceberg for the tests and benchmarks: their Spark jars, fetched by Maven from Maven Central
into the git-ignored cache for the running pyspark; the spark-submit arguments that load them with an Iceberg
catalog on local disk; and what a table holds durably, read from its own log and metadata files without Spark (so
that a test can look at it the moment after it killed the job writing it).

    python3 -m dev.lakehouse fetch    # the jars of the running pyspark, into .cache/lakehouse-jars/
    python3 -m dev.lakehouse check    # those jars on the running pyspark, past a Delta checkpoint and Iceberg's merges
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
from kafkasource.jobs import table_jars


def format_jars(minor: str) -> list[str]:
    """The artifacts of both formats for a Spark minor release, from the package's own table (the ingest job's error
    names the same jars): Delta's jar needs its storage jar beside it, of the same version (spark-submit --packages
    brings it; `mvn dependency:copy` does not); Iceberg's runtime jar holds everything."""
    artifacts = []
    if (delta := table_jars.DELTA.jars.get(minor)) is not None:
        artifacts += [delta, f"io.delta:delta-storage:{delta.rsplit(':', 1)[1]}"]
    if (iceberg := table_jars.ICEBERG.jars.get(minor)) is not None:
        artifacts.append(iceberg)
    return artifacts


CATALOG = "lake"  # the Iceberg catalog the tests name tables in: lake.<namespace>.<table>


def spark_minor() -> str:
    return table_jars.spark_minor(pyspark.__version__)


def supported() -> bool:
    """Whether both Delta and Iceberg have jars for the running pyspark."""
    return all(table_jars.supported(fmt, pyspark.__version__) for fmt in table_jars.FORMATS)


def jars() -> list[Path]:
    """The running pyspark's Delta and Iceberg jars, fetched once into a folder named by their versions (a cache
    filled for other versions is not reused)."""
    artifacts = format_jars(spark_minor())
    if not artifacts:
        raise RuntimeError(f"no Delta or Iceberg jars are known for pyspark {pyspark.__version__}")
    versions = "-".join(artifact.rsplit(":", 1)[1] for artifact in artifacts)  # e.g. 4.4.0-4.4.0-1.12.0
    folder = REPO_ROOT / ".cache" / "lakehouse-jars" / spark_minor() / versions
    return maven.fetch(artifacts, folder, "the Delta and Iceberg jars")


def session_settings(warehouse: Path, formats: tuple[str, ...] = ("delta", "iceberg")) -> dict[str, str]:
    """Delta's session extension and catalog, and an Iceberg catalog named `lake` keeping its tables under
    `warehouse` (Iceberg's Hadoop catalog: files only, no server); of `formats` only."""
    extensions = {"delta": "io.delta.sql.DeltaSparkSessionExtension",
                  "iceberg": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"}
    settings = {"spark.sql.extensions": ",".join(extensions[fmt] for fmt in formats)}
    if "delta" in formats:
        settings["spark.sql.catalog.spark_catalog"] = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
    if "iceberg" in formats:
        settings.update({f"spark.sql.catalog.{CATALOG}": "org.apache.iceberg.spark.SparkCatalog",
                         f"spark.sql.catalog.{CATALOG}.type": "hadoop",
                         f"spark.sql.catalog.{CATALOG}.warehouse": str(warehouse)})
    return settings


def submit_arguments(warehouse: Path, delta_jars: list[Path] | None = None) -> tuple[str, ...]:
    """spark-submit arguments: the jars and session_settings; given `delta_jars`, those and Delta's settings only."""
    formats = ("delta",) if delta_jars else ("delta", "iceberg")
    settings = session_settings(warehouse, formats)
    conf = [part for key, value in settings.items() for part in ("--conf", f"{key}={value}")]
    return ("--jars", ",".join(str(j) for j in delta_jars or jars()), *conf)


def delta_actions(table: Path) -> Iterator[dict]:
    """The actions of a Delta table's log, oldest first: its commits (one JSON file each, written whole or not at
    all) read in order. The log keeps every commit's JSON file beside its periodic checkpoints, so the JSON files
    alone give the table's state."""
    log = table / "_delta_log"
    for commit in sorted(log.glob("[0-9]*.json")) if log.exists() else []:
        for line in commit.read_text().splitlines():
            yield json.loads(line)


def delta_versions(table: Path) -> tuple[list[int], list[int]]:
    """The versions of a Delta table's commits and of its log's checkpoints (single-file Parquet checkpoints, Delta's
    own kind for a table of this size), oldest first."""
    log = table / "_delta_log"
    commits = sorted(int(f.name.split(".")[0]) for f in log.glob("[0-9]*.json")) if log.exists() else []
    checkpoints = sorted(int(f.name.split(".")[0]) for f in log.glob("[0-9]*.checkpoint.parquet")) \
        if log.exists() else []
    return commits, checkpoints


def delta_files(table: Path) -> list[Path]:
    """The data files of a Delta table's last version: each file added and not removed since."""
    live: dict[str, None] = {}
    for action in delta_actions(table):
        if "add" in action:
            live[action["add"]["path"]] = None
        elif "remove" in action:
            live.pop(action["remove"]["path"], None)
    return [table / unquote(path) for path in live]


def iceberg_metadata_files(warehouse: Path, name: str) -> list[Path]:
    """The vN.metadata.json files an Iceberg table in a Hadoop catalog (`name`: lake.<namespace>.<table>) keeps,
    oldest first (older ones are deleted after a commit when write.metadata.delete-after-commit.enabled is set)."""
    _, *parts = name.split(".")
    metadata_dir = warehouse.joinpath(*parts) / "metadata"
    return sorted(metadata_dir.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))


def iceberg_metadata(warehouse: Path, name: str) -> dict | None:
    """The newest metadata of an Iceberg table in a Hadoop catalog, None before its first commit: a commit is the
    atomic creation of the next vN.metadata.json; version-hint.text is only a hint."""
    versions = iceberg_metadata_files(warehouse, name)
    return json.loads(versions[-1].read_text()) if versions else None


def iceberg_manifests(warehouse: Path, name: str) -> list[str]:
    """The manifests of an Iceberg table's current snapshot, from its manifest list: fewer than its appends once
    Iceberg merged them."""
    import fastavro

    metadata = iceberg_metadata(warehouse, name)
    current = metadata and metadata.get("current-snapshot-id")
    snapshot = next((s for s in (metadata or {}).get("snapshots", []) if s["snapshot-id"] == current), None)
    if snapshot is None:
        return []
    with open(_local(snapshot["manifest-list"]), "rb") as f:
        return [m["manifest_path"] for m in fastavro.reader(f)]


def iceberg_files(warehouse: Path, name: str) -> list[Path]:
    """The data files of an Iceberg table's current snapshot in a Hadoop catalog: the newest metadata's current
    snapshot, its manifest list, the manifests' live entries."""
    import fastavro

    files = []
    manifests = iceberg_manifests(warehouse, name)
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


def check(commits: int = 12) -> None:
    """Each format's jar on the running pyspark (those it has) through what a long stream meets: `commits` appends
    to a Delta table, past its log's checkpoint at the 10th (the default interval), which a jar built for another
    Spark may fail to read back, and ALTER TABLE on it; as many to an Iceberg table that merges its manifests and
    deletes old metadata from the second commit on. Each count, read back by the session that wrote it, is exact."""
    import tempfile

    from pyspark.sql import SparkSession

    minor = spark_minor()
    formats = tuple(fmt for fmt, table_format in table_jars.FORMATS.items() if minor in table_format.jars)
    warehouse = Path(tempfile.mkdtemp(prefix="lakehouse-check-"))
    settings = {**session_settings(warehouse, formats), "spark.jars": ",".join(str(j) for j in jars()),
                "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
    builder = SparkSession.builder.master("local[1]")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    delta, iceberg = f"delta.`{warehouse / 'delta'}`", f"{CATALOG}.db.check"
    try:
        if "delta" in formats:
            spark.sql(f"CREATE TABLE {delta} (id BIGINT) USING delta")
            spark.sql(f"ALTER TABLE {delta} SET TBLPROPERTIES ('delta.appendOnly' = 'true')")
        if "iceberg" in formats:
            spark.sql(f"CREATE TABLE {iceberg} (id BIGINT) USING iceberg TBLPROPERTIES "
                      "('commit.manifest.min-count-to-merge' = '2', 'write.metadata.delete-after-commit.enabled' = "
                      "'true', 'write.metadata.previous-versions-max' = '2')")
        for commit in range(commits):
            rows = spark.range(commit * 10, commit * 10 + 10)
            for fmt in formats:
                rows.writeTo(delta if fmt == "delta" else iceberg).append()
        counts = {fmt: spark.table(delta if fmt == "delta" else iceberg).count() for fmt in formats}
        assert counts == dict.fromkeys(formats, commits * 10), counts
        print(f"pyspark {pyspark.__version__}: {', '.join(format_jars(minor))}: {commits} commits each, "
              f"counts {counts}")
    finally:
        spark.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        print("\n".join(str(j) for j in jars()))
    elif sys.argv[1:] == ["check"]:
        check()
    else:
        sys.exit(__doc__)
