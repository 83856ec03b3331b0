"""The quick start's ingest job under spark-submit where Spark has no admission control for Python stream readers
(pyspark 4.0 and 4.1): a rate-limited backlog read to its end and committed (scripts/compat.py runs it there; on
4.2 and newer it is deselected, and tests/system/test_jobs.py runs the same backlog)."""

from __future__ import annotations

import pytest

from tests.support.job_helpers import produce_orders, read_output, run_job, write_config


# on pyspark 4.2+ the job needs nothing of its own:
# test_jobs.py::test_ingest_writes_every_record_once_decodes_and_commits runs the same backlog there
@pytest.mark.before_admission_control
def test_the_ingest_job_reads_a_rate_limited_backlog_to_its_end_and_commits_it(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("compat-ingest"), partitions=3)
    group = kafka.unique_name("compat-ingest-group")
    produce_orders(kafka, topic, 30, 3)
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source="maxOffsetsPerTrigger = 12")

    run = run_job("ingest", "--config", str(config))

    assert run.returncode == 0, run.stderr[-3000:]
    # on 4.0/4.1 the job runs AvailableNow again while a run (one batch there) ended below the ends it fixed at the
    # start, then commits the last batch itself; on 4.2+ Spark runs the three batches in one run and the reader commits
    assert run.stdout.splitlines()[-1] == f"ingest: 30 rows in 3 batches from subscribe={topic} into {tmp_path / 'out'}"
    batches = [line.split("kafkasource.jobs: ")[1].split(",")[0] for line in run.stdout.splitlines()
               if "kafkasource.jobs: batch" in line]
    assert batches == ["batch 0: 12 rows", "batch 1: 12 rows", "batch 2: 6 rows"]
    assert sorted((r["kafka_partition"], r["kafka_offset"]) for r in read_output(tmp_path / "out")) == [
        (p, o) for p in range(3) for o in range(10)]
    assert kafka.committed(group, topic, 3) == {0: 10, 1: 10, 2: 10}
