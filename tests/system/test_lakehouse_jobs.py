"""The ingest job into a Delta Lake table (by path) and an Apache Iceberg table (by name, in a catalog on local disk):
SIGKILLed at random moments of a stream and restarted, every record lands in the table once and the group's
committed offsets are never ahead of what the table's last version holds, while the tables do what a long stream's
do: Delta checkpoints its log and reads the checkpoint back, in the process that wrote it and after a restart;
Iceberg merges its manifests and deletes old metadata. And a Delta jar built for another Spark stops the job with a
line naming both and the jar that fits. Real parts: spark-submit, the formats' jars from Maven Central
(dev/lakehouse.py), the broker. Run by the compatibility run, on a pyspark the formats have jars for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyspark
import pytest

from dev import lakehouse, maven
from dev.process import REPO_ROOT
from tests.support.cluster_helpers import log_ends
from tests.support.job_helpers import alive, kill_at_random_moments, kill_group, run_job, start_job, write_config
from tests.support.kafka_helpers import KafkaHarness, SequenceProducer, await_condition

pytestmark = [pytest.mark.lakehouse, pytest.mark.spark]  # spark-submit

TABLE = f"{lakehouse.CATALOG}.db.orders"
# the table properties the job sets when it creates the table: what a long stream's table does at its defaults
# (Delta checkpoints its log every 10 commits; Iceberg merges manifests from 100 on, keeps 100 old metadata files),
# made to happen at every commit
PROPERTIES = {
    "delta": {"delta.appendOnly": "true", "delta.checkpointInterval": "1"},
    "iceberg": {"commit.manifest.min-count-to-merge": "2", "write.metadata.delete-after-commit.enabled": "true",
                "write.metadata.previous-versions-max": "3"},
}
# Iceberg's streaming writes append without merging manifests unless the writer is told to
SINKS = {"delta": 'format = "delta"',
         "iceberg": f'format = "iceberg"\ntable = "{TABLE}"\noptions = {{ "use-merge-append-for-streaming" = "true" }}'}
# each kill costs a spark-submit start with the format's jars, the longest waits of the compatibility run
KILLS = 3
# what each run does before its kill: Delta, two more checkpoints followed by a commit (at most one can be from the
# run before, so the run wrote one and read it back for its next commit, where a Delta jar that does not fit its
# Spark fails); Iceberg, 3 more commits (merging manifests and deleting old metadata). Every start after the first
# reads a table that has a checkpoint.
PROGRESS_PER_RUN = {"delta": 2, "iceberg": 3}


def config_for(kafka: KafkaHarness, fmt: str, topic: str, group: str, workdir: Path) -> Path:
    path = write_config(workdir / "ingest.toml", kafka.bootstrap_servers, topic, group, workdir,
                        trigger="processingTime=500ms", extra_source="maxOffsetsPerTrigger = 200")
    properties = ", ".join(f'"{key}" = "{value}"' for key, value in PROPERTIES[fmt].items())
    text = path.read_text().replace("[sink]\n", f"[sink]\n{SINKS[fmt]}\ntable_properties = {{ {properties} }}\n")
    if fmt == "iceberg":  # by name in the catalog, not by path
        text = "\n".join(line for line in text.splitlines() if not line.startswith("path = ")) + "\n"
    path.write_text(text)
    return path


def durable(fmt: str, workdir: Path) -> list[tuple[int, int]]:
    """(kafka_partition, kafka_offset) of every row of the table's last committed version."""
    if fmt == "delta":
        return lakehouse.positions(lakehouse.delta_files(workdir / "out"))
    return lakehouse.positions(lakehouse.iceberg_files(workdir / "warehouse", TABLE))


def progress(fmt: str, workdir: Path) -> int:
    """Delta: its log's checkpoints that a later commit followed (a checkpoint is written after its commit, so a kill
    can leave one out); Iceberg: its commits."""
    if fmt == "delta":
        versions, checkpoints = lakehouse.delta_versions(workdir / "out")
        return sum(1 for c in checkpoints if c < versions[-1]) if versions else 0
    return commits(fmt, workdir)


def commits(fmt: str, workdir: Path) -> int:
    """How many commits the table has: Delta's log versions, Iceberg's sequence numbers (one per snapshot)."""
    if fmt == "delta":
        return len(lakehouse.delta_versions(workdir / "out")[0])
    metadata = lakehouse.iceberg_metadata(workdir / "warehouse", TABLE)
    return 0 if metadata is None else int(metadata["last-sequence-number"])


def table_properties(fmt: str, workdir: Path) -> dict[str, str]:
    if fmt == "delta":
        found: dict[str, str] = {}
        for action in lakehouse.delta_actions(workdir / "out"):
            found.update(action.get("metaData", {}).get("configuration", {}))
        return found
    metadata = lakehouse.iceberg_metadata(workdir / "warehouse", TABLE)
    assert metadata is not None, "the Iceberg table has no metadata"
    return metadata["properties"]


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_sigkilled_ingest_job_lands_every_record_once_and_commits_never_run_ahead_of_the_table(
        kafka, tmp_path, capsys, fmt):
    topic = kafka.create_topic(kafka.unique_name(f"lake-{fmt}"), partitions=2)
    group = kafka.unique_name(f"lake-{fmt}-group")
    config, log_path = config_for(kafka, fmt, topic, group, tmp_path), tmp_path / "spark-submit.log"
    extra = lakehouse.submit_arguments(tmp_path / "warehouse")

    def start() -> subprocess.Popen:
        return start_job("ingest", "--config", str(config), log_path=log_path, extra=extra)

    with SequenceProducer(kafka, topic, 2) as producer:
        ahead_of_table = kill_at_random_moments(KILLS, start, log_path, lambda: durable(fmt, tmp_path),
                                                lambda: kafka.committed(group, topic, 2), seed=20261128,
                                                progress=lambda: progress(fmt, tmp_path),
                                                progress_per_run=PROGRESS_PER_RUN[fmt])
        producer.stop()
        ends = await_condition("the log ends", lambda: log_ends(kafka, topic, 2), timeout=60)
        expected = sorted((p, o) for p in range(2) for o in range(ends[p]))
        # the last run drains the rest in big batches: the restart's cost is the point, not the batch size
        config.write_text(config.read_text().replace("maxOffsetsPerTrigger = 200", "maxOffsetsPerTrigger = 100000"))
        app = start()
        try:
            await_condition("every record in the table",
                            lambda: alive(app, log_path) and set(durable(fmt, tmp_path)) >= set(expected), timeout=300)
            await_condition("the group committed the log end",
                            lambda: alive(app, log_path) and kafka.committed(group, topic, 2) == ends, timeout=120)
        finally:
            kill_group(app)

    rows = durable(fmt, tmp_path)
    assert ahead_of_table == []
    assert sorted(rows) == expected  # every record once: 0 lost, 0 duplicated
    assert PROPERTIES[fmt].items() <= table_properties(fmt, tmp_path).items()
    made = commits(fmt, tmp_path)
    if fmt == "delta":  # 2 checkpoints followed by a commit in each killed run
        versions, checkpoints = lakehouse.delta_versions(tmp_path / "out")
        assert len(checkpoints) >= 2 * KILLS, (versions, checkpoints)
        maintenance = f"{len(checkpoints)} checkpoints of its log"
    else:
        # 3 commits in each killed run; each commit merged the manifests (its new one and the merged one before); old
        # metadata files deleted (the newest and 3 before it are kept, and any a kill left between a commit and its
        # deletes)
        assert made >= KILLS * PROGRESS_PER_RUN["iceberg"]
        manifests = lakehouse.iceberg_manifests(tmp_path / "warehouse", TABLE)
        kept = lakehouse.iceberg_metadata_files(tmp_path / "warehouse", TABLE)
        assert len(manifests) <= 2 and len(kept) < made, (made, manifests, kept)
        maintenance = f"{len(manifests)} manifests after merges, {len(kept)} metadata files kept"
    with capsys.disabled():
        print(f"\n{fmt}: {KILLS} SIGKILLs of the ingest job, {len(expected)} records in {made} commits "
              f"({maintenance}), each record in the table once; the group's commits never ahead of the table")


# a Delta jar built for another patch release of the running Spark's minor: Delta 4.1.0, built against Spark 4.1.0,
# calls a constructor of Spark's Parquet schema converter that 4.1.4 no longer has, first when the process that wrote
# the log's first checkpoint reads the table back
MISMATCHED_DELTA = {"4.1": ["io.delta:delta-spark_2.13:4.1.0", "io.delta:delta-storage:4.1.0"]}


@pytest.mark.skipif(lakehouse.spark_minor() not in MISMATCHED_DELTA or pyspark.__version__.endswith(".0"),
                    reason="needs a pyspark that a Delta jar of its own minor release no longer fits")
def test_an_ingest_job_on_a_delta_jar_built_for_another_spark_stops_naming_it_the_spark_and_the_jar_that_fits(
        kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("lake-mismatch"), partitions=2)
    group = kafka.unique_name("lake-mismatch-group")
    kafka.produce_values(topic, 1000, partitions=2)
    config = config_for(kafka, "delta", topic, group, tmp_path)  # 200 records a batch, a checkpoint at each
    old_delta = maven.fetch(MISMATCHED_DELTA[lakehouse.spark_minor()],
                            REPO_ROOT / ".cache" / "lakehouse-jars" / "mismatched-delta-4.1.0", "a mismatched Delta")
    result = run_job("ingest", "--config", str(config), timeout=300,
                     extra=lakehouse.submit_arguments(tmp_path / "warehouse", delta_jars=old_delta))
    # the job's Python process writes to spark-submit's stdout
    failed = [line for line in result.stdout.splitlines() if line.startswith("ingest: failed:")]
    assert result.returncode == 1 and failed == [
        "ingest: failed: TableFormatJarError: the Delta Lake jar delta-spark_2.13-4.1.0.jar does not fit Spark "
        f"{pyspark.__version__} (java.lang.NoSuchMethodError: 'void org.apache.spark.sql.execution.datasources."
        "parquet.ParquetToSparkSchemaConverter.<init>(boolean, boolean, boolean, boolean, boolean, boolean, boolean)'):"
        " for Spark 4.1 use io.delta:delta-spark_4.1_2.13:4.4.0; the docs' Spark versions page lists which Delta Lake"
        " and Iceberg go with which Spark"], result.stdout[-3000:]
    # it stopped at the first commit after a checkpoint, and the group's commits are covered by the table
    versions, checkpoints = lakehouse.delta_versions(tmp_path / "out")
    assert checkpoints == [versions[-1]] and versions[-1] >= 1, (versions, checkpoints)
    held = set(durable("delta", tmp_path))
    assert all((p, o) in held for p, end in kafka.committed(group, topic, 2).items() for o in range(end))
