"""The example Spark Declarative Pipeline (examples/pipeline/) run by `spark-pipelines`, as its users run it: a
streaming table read from Kafka through kafkasource, a materialized view derived from it, the consumer group
committed. Two runs over a growing topic: every record once in the streaming table, the view recomputed, the
group's commits where each pyspark puts them. Real parts: pyspark's own spark-pipelines (a local Spark Connect
server), the broker."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pyspark
import pytest

from kafkasource.runtime.spark_api import ADMISSION_CONTROL
from tests.support.job_helpers import REPO_ROOT
from tests.support.kafka_helpers import KafkaHarness, Record

pytestmark = pytest.mark.spark  # spark-pipelines starts Spark

SPARK_PIPELINES = Path(pyspark.__file__).parent / "bin" / "spark-pipelines"


def run_pipeline(kafka: KafkaHarness, project: Path, topic: str, group: str) -> subprocess.CompletedProcess:
    """One run of the pipeline. Hive's catalog (a Derby metastore in the project's folder) keeps the tables between
    runs: Spark's default in-memory catalog forgets them and the second run would refuse their folders."""
    log_config = REPO_ROOT / "conf" / "log4j2.properties"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
           "PYTHONPATH": os.pathsep.join(p for p in [str(REPO_ROOT), os.environ.get("PYTHONPATH")] if p),
           "KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers, "ORDERS_TOPIC": topic, "ORDERS_GROUP": group}
    return subprocess.run(
        [str(SPARK_PIPELINES), "--conf", "spark.sql.catalogImplementation=hive", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.driver.extraJavaOptions=-Dlog4j2.configurationFile={log_config}",
         "run", "--spec", "spark-pipeline.yml"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300)


def table_rows(project: Path, name: str, columns: list[str]) -> list[dict]:
    table = ds.dataset(project / "spark-warehouse" / name, format="parquet").to_table(columns=columns)
    return sorted(table.to_pylist(), key=lambda r: tuple(r[c] for c in columns))


def test_the_example_pipeline_lands_every_record_once_derives_its_view_and_commits_the_group(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("pipeline"), partitions=2)
    group = kafka.unique_name("pipeline-group")
    project = tmp_path / "pipeline"
    shutil.copytree(REPO_ROOT / "examples" / "pipeline", project)
    spec = project / "spark-pipeline.yml"
    storage = (project / "storage").as_uri()
    spec.write_text(spec.read_text().replace("file:///tmp/kafkasource-pipeline/storage", storage))
    kafka.produce(topic, [Record(i % 2, None, f"order {i}".encode()) for i in range(30)])

    first = run_pipeline(kafka, project, topic, group)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    assert "Run is COMPLETED." in first.stdout + first.stderr
    committed_after_first = kafka.committed(group, topic, 2)
    kafka.produce(topic, [Record(i % 2, None, f"order {i}".encode()) for i in range(30, 40)])
    second = run_pipeline(kafka, project, topic, group)
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]

    raw = table_rows(project, "orders_raw", ["partition", "offset", "value"])
    assert [(r["partition"], r["offset"]) for r in raw] == [(p, o) for p in range(2) for o in range(20)]  # once each
    assert sorted(r["value"] for r in raw) == sorted(f"order {i}".encode() for i in range(40))
    assert table_rows(project, "orders_per_partition", ["partition", "records", "last_offset"]) == [
        {"partition": 0, "records": 20, "last_offset": 19}, {"partition": 1, "records": 20, "last_offset": 19}]
    if ADMISSION_CONTROL:  # pyspark 4.2+: each run's last batch is committed by the run itself
        assert committed_after_first == {0: 15, 1: 15}
        assert kafka.committed(group, topic, 2) == {0: 20, 1: 20}
    else:  # 4.1: Spark commits a run's last batch to the source at the start of the next run
        assert committed_after_first == {}
        assert kafka.committed(group, topic, 2) == {0: 15, 1: 15}
