"""The ingest job into a Delta Lake table (by path) and an Apache Iceberg table (by name, in a catalog on local disk):
SIGKILLed at a random moment of a stream and restarted, every record lands in the table once and the group's
committed offsets are never ahead of what the table's last version holds. Real parts: spark-submit, the formats'
jars from Maven Central (dev/lakehouse.py), the broker. Run by the compatibility run, on a pyspark the formats
have jars for."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dev import lakehouse
from tests.cluster_helpers import log_ends
from tests.job_helpers import alive, kill_at_random_moments, kill_group, start_job, write_config
from tests.kafka_helpers import KafkaHarness, SequenceProducer, await_condition

pytestmark = [pytest.mark.lakehouse, pytest.mark.spark]  # spark-submit

TABLE = f"{lakehouse.CATALOG}.db.orders"
# each format's [sink], and a table property the job sets when it creates the table
SINKS = {
    "delta": 'format = "delta"\ntable_properties = { "delta.appendOnly" = "true" }',
    "iceberg": f'format = "iceberg"\ntable = "{TABLE}"\n'
               'table_properties = { "write.metadata.previous-versions-max" = "7" }',
}
# one kill per format: each costs a spark-submit start with the format's jars, the longest waits of the compatibility
# run; the Parquet job's crash test (test_faults.py) runs the same cycle twice, with the same helper
KILLS = 1


def config_for(kafka: KafkaHarness, fmt: str, topic: str, group: str, workdir: Path) -> Path:
    path = write_config(workdir / "ingest.toml", kafka.bootstrap_servers, topic, group, workdir,
                        trigger="processingTime=500ms", extra_source="maxOffsetsPerTrigger = 200")
    text = path.read_text().replace("[sink]\n", f"[sink]\n{SINKS[fmt]}\n")
    if fmt == "iceberg":  # by name in the catalog, not by path
        text = "\n".join(line for line in text.splitlines() if not line.startswith("path = ")) + "\n"
    path.write_text(text)
    return path


def durable(fmt: str, workdir: Path) -> list[tuple[int, int]]:
    """(kafka_partition, kafka_offset) of every row of the table's last committed version."""
    if fmt == "delta":
        return lakehouse.positions(lakehouse.delta_files(workdir / "out"))
    return lakehouse.positions(lakehouse.iceberg_files(workdir / "warehouse", TABLE))


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
                                                lambda: kafka.committed(group, topic, 2), seed=20261128)
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
    properties = table_properties(fmt, tmp_path)
    assert {"delta": {"delta.appendOnly": "true"},
            "iceberg": {"write.metadata.previous-versions-max": "7"}}[fmt].items() <= properties.items()
    with capsys.disabled():
        print(f"\n{fmt}: {KILLS} SIGKILL{'s' if KILLS > 1 else ''} of the ingest job, {len(expected)} records, each "
              "in the table once; the group's commits never ahead of the table's last version")
