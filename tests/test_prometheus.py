"""A real Prometheus (built by dev/prometheus.py) scrapes the ingest job's exporter: through its HTTP API, with
PromQL, the lag series equal the broker's truth (log end minus committed offset) once the job has caught up."""

from __future__ import annotations

import pytest

from dev import prometheus
from dev.process import free_port
from tests.job_helpers import kill_group, start_job, write_config
from tests.kafka_helpers import await_condition

pytestmark = pytest.mark.spark  # the job runs under spark-submit


def by_partition(result: list[dict]) -> dict[int, float]:
    return {int(r["metric"]["partition"]): float(r["value"][1]) for r in result}


def test_prometheus_scrapes_lag_equal_to_the_brokers_truth(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("prometheus"), partitions=3)
    group = kafka.unique_name("prometheus-group")
    kafka.produce_values(topic, 90, partitions=3)
    port = free_port()
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          trigger="processingTime=1s", extra_source="maxOffsetsPerTrigger = 30")
    with open(config, "a") as f:
        f.write(f'[metrics]\nport = {port}\nbroker_interval = "1s"\n')
    job = start_job("ingest", "--config", str(config), log_path=tmp_path / "job.log")
    server = prometheus.start([f"127.0.0.1:{port}"], data_dir=tmp_path / "prometheus")
    try:
        # Prometheus' own view of the exporter: scraped, and the group at the log end
        await_condition("Prometheus to scrape the job at the log end", lambda: by_partition(server.query(
            f'kafkasource_group_lag_records{{group="{group}",topic="{topic}"}}')) == {0: 0, 1: 0, 2: 0} and
            by_partition(server.query(f'kafkasource_partition_lag_records{{topic="{topic}"}}')) == {0: 0, 1: 0, 2: 0},
            timeout=300)
        committed = kafka.committed(group, topic, 3)
        log_ends = kafka.offsets(topic, 3, __import__("confluent_kafka").admin.OffsetSpec.latest())
        truth = {p: log_ends[p] - committed[p] for p in range(3)}
        assert committed == {0: 30, 1: 30, 2: 30} and truth == {0: 0, 1: 0, 2: 0}
        # log end minus committed offset, computed by Prometheus from two exported series
        computed = server.query(f'max by (partition) (kafkasource_partition_log_end_offset{{topic="{topic}"}}) - '
                                f'max by (partition) (kafkasource_group_committed_offset{{group="{group}",topic="{topic}"}})')
        assert by_partition(computed) == truth
        assert by_partition(server.query(f'kafkasource_group_committed_offset{{group="{group}"}}')) == {
            p: float(o) for p, o in committed.items()}
        assert [float(r["value"][1]) for r in server.query(
            'sum(kafkasource_query_input_rows_total{query_id!=""})')] == [90.0]
        assert server.query('up{job="kafkasource"}')[0]["value"][1] == "1"
    finally:
        server.stop()
        kill_group(job)
