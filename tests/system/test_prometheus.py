"""A real Prometheus (built by dev/prometheus.py) scrapes the ingest job's exporter: through its HTTP API, with
PromQL, the lag series equal the broker's truth (log end minus committed offset) once the job has caught up, and
again at a known lag that is not 0, which a log end exported in place of the committed offset would not show."""

from __future__ import annotations

import urllib.request

import pytest

from dev import prometheus
from dev.process import free_port
from tests.support.job_helpers import kill_group, start_job, write_config
from tests.support.kafka_helpers import Record, await_condition
from tests.support.metrics_helpers import parse

pytestmark = pytest.mark.spark  # the job runs under spark-submit

# records produced after the job caught up, by partition: fewer in all than minOffsetsPerTrigger, so the job
# reads none of them for maxTriggerDelay (an hour) and the group's lag stays exactly this
MORE = {0: 4, 1: 7, 2: 11}


def by_partition(result: list[dict]) -> dict[int, float]:
    return {int(r["metric"]["partition"]): float(r["value"][1]) for r in result}


def scraped(port: int, name: str, **labels: str) -> dict[int, float]:
    """A series of the job's exporter by partition, scraped directly, as Prometheus does."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        samples = parse(answer.read().decode()).get(name, {})
    return {int(dict(key)["partition"]): value for key, value in samples.items()
            if all(dict(key).get(k) == v for k, v in labels.items())}


def test_prometheus_scrapes_lag_equal_to_the_brokers_truth(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("prometheus"), partitions=3)
    group = kafka.unique_name("prometheus-group")
    kafka.produce_values(topic, 90, partitions=3)
    port = free_port()
    # the first trigger reads the 90 records; later ones wait for 90 more (or an hour), and commit the batch
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          trigger="processingTime=1s", extra_source='minOffsetsPerTrigger = 90\nmaxTriggerDelay = "1h"')
    with open(config, "a") as f:
        f.write(f'[metrics]\nport = {port}\nbroker_interval = "1s"\n')
    job = start_job("ingest", "--config", str(config), log_path=tmp_path / "job.log")
    server = prometheus.start([f"127.0.0.1:{port}"], data_dir=tmp_path / "prometheus")
    group_lag = f'kafkasource_group_lag_records{{group="{group}",topic="{topic}"}}'
    group_committed = f'kafkasource_group_committed_offset{{group="{group}",topic="{topic}"}}'
    try:
        # Prometheus' own view of the exporter: scraped, and the group at the log end
        await_condition("Prometheus to scrape the job at the log end", lambda: by_partition(server.query(
            group_lag)) == {0: 0, 1: 0, 2: 0} and
            by_partition(server.query(f'kafkasource_partition_lag_records{{topic="{topic}"}}')) == {0: 0, 1: 0, 2: 0},
            timeout=300)
        committed = kafka.committed(group, topic, 3)
        log_ends = kafka.latest(topic, 3)
        truth = {p: log_ends[p] - committed[p] for p in range(3)}
        assert committed == {0: 30, 1: 30, 2: 30} and truth == {0: 0, 1: 0, 2: 0}
        # log end minus committed offset, computed by Prometheus from two exported series
        computed = server.query(f'max by (partition) (kafkasource_partition_log_end_offset{{topic="{topic}"}}) - '
                                f'max by (partition) ({group_committed})')
        assert by_partition(computed) == truth
        assert by_partition(server.query(f'kafkasource_group_committed_offset{{group="{group}"}}')) == {
            p: float(o) for p, o in committed.items()}
        assert [float(r["value"][1]) for r in server.query(
            'sum(kafkasource_query_input_rows_total{query_id!=""})')] == [90.0]
        assert server.query('up{job="kafkasource"}')[0]["value"][1] == "1"

        # a known lag that is not 0: records the job does not read yet, behind the group's commit at 30
        kafka.produce(topic, [Record(p, None, f"more-{p}-{i}".encode()) for p, n in MORE.items() for i in range(n)])
        lagging = {p: float(n) for p, n in MORE.items()}
        at_30 = {0: 30.0, 1: 30.0, 2: 30.0}
        await_condition("the exporter to read the group behind the new records", lambda: scraped(
            port, "kafkasource_group_lag_records", group=group, topic=topic) == lagging, timeout=60)
        assert scraped(port, "kafkasource_group_committed_offset", group=group, topic=topic) == at_30
        await_condition("Prometheus to scrape the group behind the new records", lambda: by_partition(
            server.query(group_lag)) == lagging, timeout=60)
        assert by_partition(server.query(group_committed)) == at_30
        # the broker's truth, and the job indeed read none of the new records
        assert kafka.committed(group, topic, 3) == {0: 30, 1: 30, 2: 30}
        assert kafka.latest(topic, 3) == {p: 30 + n for p, n in MORE.items()}
        assert [float(r["value"][1]) for r in server.query(
            'sum(kafkasource_query_input_rows_total{query_id!=""})')] == [90.0]
    finally:
        server.stop()
        kill_group(job)
