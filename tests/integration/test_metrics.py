"""The metrics exporter against the broker's truth, with real Spark: while a processing-time query runs and
after it has caught up; metric names stable and documented; the ingest job's textfile after an AvailableNow run;
the Grafana dashboard's queries against the names exported. `parse` reads what a scrape or the textfile gives."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from kafkasource import metrics
from kafkasource.metrics import CommitCounts, collector
from kafkasource.metrics.queries import Queries
from tests.support.job_helpers import REPO_ROOT, run_job, write_config
from tests.support.kafka_helpers import Record, await_condition
from tests.support.query_helpers import base_options, stream

METRIC_NAMES = [  # what dashboards and alerts rely on: a change here breaks them, and docs/monitoring.md lists them
    "kafkasource_partition_offset",
    "kafkasource_partition_log_end_offset",
    "kafkasource_partition_lag_records",
    "kafkasource_partition_lag_seconds",
    "kafkasource_query_input_rows_total",
    "kafkasource_query_batches_total",
    "kafkasource_query_rows_per_second",
    "kafkasource_query_batch_duration_seconds",
    "kafkasource_query_last_progress_timestamp_seconds",
    "kafkasource_query_active",
    "kafkasource_query_records_written_total",
    "kafkasource_query_bytes_written_total",
    "kafkasource_group_committed_offset",
    "kafkasource_group_lag_records",
    "kafkasource_group_commit_timestamp_seconds",
    "kafkasource_group_offsets_read_timestamp_seconds",
    "kafkasource_group_offsets_read_errors_total",
    "kafkasource_commits_total",
    "kafkasource_commit_failures_total",
    "kafkasource_commit_retries_total",
]
DASHBOARD = REPO_ROOT / "conf" / "grafana-dashboard.json"


def parse(text: str) -> dict[str, dict[tuple, float]]:
    """Exposition text read back by prometheus_client's parser: {sample name: {sorted (label, value) pairs: value}}
    (a counter's samples are named with their _total, as Prometheus stores them)."""
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def by_partition(samples: dict[tuple, float]) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value for labels, value in samples.items()}


def scrape(url: str) -> dict[str, dict[tuple, float]]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        return parse(answer.read().decode())


def test_metric_names_are_stable_and_documented():
    exposition = collector.Exposition(collector.ExporterCollector(threading.Lock(), Queries(), {}, CommitCounts()),
                                      "127.0.0.1", None, None)
    exported = re.findall(r"^# TYPE (\S+) ", exposition.text(), re.MULTILINE)  # the names as scrapes show them
    assert exported == METRIC_NAMES
    page = (REPO_ROOT / "docs" / "monitoring.md").read_text()
    assert [name for name in METRIC_NAMES if f"`{name}`" not in page] == []
    assert "`kafkasource_partition_offset`" in page  # the search above finds what is there


def test_every_dashboard_query_uses_only_exported_metric_names():
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(expressions) >= 5
    expressions += [variable["query"] for variable in dashboard["templating"]["list"] if variable["type"] == "query"]
    used = {name for expr in expressions for name in re.findall(r"\b(kafkasource_\w+)", expr)}
    # range functions and label names are not metric names; every kafkasource_ word must be one
    assert sorted(used - set(METRIC_NAMES)) == []
    assert {"kafkasource_partition_lag_records", "kafkasource_partition_lag_seconds",
            "kafkasource_query_rows_per_second", "kafkasource_query_batch_duration_seconds",
            "kafkasource_commit_failures_total"} <= used


def test_exported_lag_and_commits_match_the_broker_while_running_and_after_catching_up(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("metrics"), partitions=3)
    group = kafka.unique_name("metrics-group")
    kafka.produce_values(topic, 300, partitions=3)
    options = base_options(kafka, subscribe=topic, maxOffsetsPerTrigger="30",
                           **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})
    exporter = metrics.serve(spark, port=0, source_options=options, broker_interval_s=1)
    query = None
    try:
        query = (stream(spark, options).writeStream.format("noop").queryName("metrics_test")
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds")
                 .start())
        # while it runs (30 records a batch out of 300): the exported view is consistent with the broker's
        running = await_condition("a scrape while the query is behind", lambda: (
            lambda m: m if m.get("kafkasource_partition_lag_records") and
            sum(m["kafkasource_partition_lag_records"].values()) > 0 and
            m.get("kafkasource_group_committed_offset") else None)(scrape(exporter.url)), query, timeout=120)
        truth = kafka.committed(group, topic, 3)
        offsets = by_partition(running["kafkasource_partition_offset"])
        log_ends = by_partition(running["kafkasource_partition_log_end_offset"])
        assert log_ends == {0: 100, 1: 100, 2: 100}
        assert by_partition(running["kafkasource_partition_lag_records"]) == {p: 100 - offsets[p] for p in range(3)}
        committed = by_partition(running["kafkasource_group_committed_offset"])
        assert all(committed[p] <= truth[p] <= 100 for p in committed), (committed, truth)
        assert all(s >= 0 for s in running["kafkasource_partition_lag_seconds"].values())

        # caught up: every view says 0, and the committed offsets are the broker's, at the log end
        final = await_condition("the exporter to see the group at the log end", lambda: (
            lambda m: m if by_partition(m.get("kafkasource_group_lag_records", {})) == {0: 0, 1: 0, 2: 0} and
            by_partition(m["kafkasource_partition_lag_records"]) == {0: 0, 1: 0, 2: 0} else None)(scrape(exporter.url)),
            query, timeout=180)
        assert kafka.committed(group, topic, 3) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_group_committed_offset"]) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_partition_offset"]) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_partition_lag_seconds"]) == {0: 0, 1: 0, 2: 0}
        q = (("query", "metrics_test"), ("query_id", str(query.id)))
        assert final["kafkasource_query_input_rows_total"] == {q: 300}
        assert final["kafkasource_query_batches_total"][q] >= 10  # 30 records a batch at most
        assert final["kafkasource_query_active"] == {q: 1}
        # from the reader's process
        assert final["kafkasource_commits_total"][(("group", group), ("mode", "sync"))] >= 9
        commit_times = by_partition(final["kafkasource_group_commit_timestamp_seconds"])
        assert all(time.time() - 300 < t <= time.time() for t in commit_times.values()), commit_times
        query.stop()
        await_condition("the query to show as ended",
                        lambda: scrape(exporter.url)["kafkasource_query_active"] == {q: 0}, timeout=60)

        # a known lag that is not 0: records produced after the query stopped, behind the group's commit at 100,
        # which the exporter (still reading the group every second) reports exactly
        more = {0: 4, 1: 7, 2: 11}
        kafka.produce(topic, [Record(p, None, f"more-{p}-{i}".encode()) for p, n in more.items() for i in range(n)])
        behind = await_condition("the exporter to read the group behind the new records", lambda: (
            lambda m: m if by_partition(m.get("kafkasource_group_lag_records", {})) == more else None)(
            scrape(exporter.url)), timeout=60)
        assert by_partition(behind["kafkasource_group_committed_offset"]) == {0: 100, 1: 100, 2: 100}
        assert kafka.committed(group, topic, 3) == {0: 100, 1: 100, 2: 100}
        assert kafka.latest(topic, 3) == {p: 100 + n for p, n in more.items()}
    finally:
        if query is not None and query.isActive:
            query.stop()
        exporter.close()


def test_ingest_job_writes_the_textfile_of_an_available_now_run(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("textfile"), partitions=3)
    group = kafka.unique_name("textfile-group")
    kafka.produce_values(topic, 30, partitions=3)
    textfile = tmp_path / "kafkasource.prom"
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source="maxOffsetsPerTrigger = 12")
    with open(config, "a") as f:
        f.write(f'[metrics]\ntextfile = "{textfile}"\n')

    done = run_job("ingest", "--config", str(config))

    assert done.returncode == 0, done.stdout[-3000:]
    found = parse(textfile.read_text())
    assert by_partition(found["kafkasource_partition_offset"]) == {0: 10, 1: 10, 2: 10}
    assert by_partition(found["kafkasource_partition_lag_records"]) == {0: 0, 1: 0, 2: 0}
    assert by_partition(found["kafkasource_group_committed_offset"]) == {0: 10, 1: 10, 2: 10}
    assert by_partition(found["kafkasource_group_lag_records"]) == {0: 0, 1: 0, 2: 0}
    assert list(found["kafkasource_query_input_rows_total"].values()) == [30]
    assert list(found["kafkasource_query_batches_total"].values()) == [3]
    assert list(found["kafkasource_query_active"].values()) == [0]
    assert list(found["kafkasource_commits_total"].values())[0] >= 3
    # written whole, by a rename (prometheus_client's temporary file: the textfile's name and .pid.thread)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("kafkasource.prom.")] == []
    rates = [float(m.group(1).replace(",", "")) for m in re.finditer(r"rows, ([\d.,]+) rows/s", done.stdout)]
    assert len(rates) == 3 and all(r > 0 for r in rates), done.stdout[-2000:]
