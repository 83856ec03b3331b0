"""The spark-submit jobs end to end: pyspark's own spark-submit as a subprocess, the real broker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from kafkasource.commit import metadata as committer
from tests.support.job_helpers import (
    REPO_ROOT,
    durable_positions,
    kill_group,
    produce_orders,
    read_output,
    run_job,
    start_job,
    write_config,
)
from tests.support.kafka_helpers import Record, await_condition, described_group

pytestmark = pytest.mark.spark  # every test here runs spark-submit, or a script that starts Spark

SCHEMA = "id BIGINT, name STRING"


def test_ingest_writes_every_record_once_decodes_and_commits(kafka, kafka_broker, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("ingest"), partitions=3)
    group = kafka.unique_name("ingest-group")
    produce_orders(kafka, topic, 30, 3)
    kafka.produce(topic, [Record(1, b"k", b"{not json"), Record(2, None, None)])  # corrupt, and a tombstone
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          value="json", schema=SCHEMA, extra_source="maxOffsetsPerTrigger = 12")

    first = run_job("ingest", "--config", str(config))
    second = run_job("ingest", "--config", str(config))

    assert first.returncode == 0, first.stderr[-3000:]
    # Spark's warning that register replaced its startup registration, at the call and at the query's start (the
    # same search finds it in test_registration.py, where a logging configuration lets it through)
    assert "registered data source" not in first.stderr + first.stdout
    # spark-submit passes the Python driver's stderr on as its stdout: log lines and the summary together
    assert first.stdout.splitlines()[-1] == (
        f"ingest: 32 rows in 3 batches from subscribe={topic} into {tmp_path / 'out'}")
    batch_lines = [line.split("kafkasource.jobs: ")[1] for line in first.stdout.splitlines()
                   if "kafkasource.jobs: batch" in line]
    assert [line.split(",")[0] for line in batch_lines] == ["batch 0: 12 rows", "batch 1: 12 rows", "batch 2: 8 rows"]
    assert batch_lines[-1].endswith("lag 0")
    rows = read_output(tmp_path / "out")
    assert [(r["kafka_partition"], r["kafka_offset"]) for r in rows] == (
        [(0, o) for o in range(10)] + [(1, o) for o in range(11)] + [(2, o) for o in range(11)])
    by_position = {(r["kafka_partition"], r["kafka_offset"]): r for r in rows}
    assert {(r["id"], r["name"]) for r in rows if r["id"] is not None} == {(i, f"n{i}") for i in range(30)}
    assert by_position[(1, 10)]["_corrupt"] == b"{not json" and by_position[(1, 10)]["key"] == b"k"
    assert by_position[(2, 10)]["_corrupt"] is None and by_position[(2, 10)]["id"] is None  # a tombstone is not corrupt
    assert sum(r["_corrupt"] is not None for r in rows) == 1
    assert {r["kafka_topic"] for r in rows} == {topic} and all(r["date"] is not None for r in rows)
    assert described_group(kafka_broker, group) == [(0, 10, 10, 0), (1, 11, 11, 0), (2, 11, 11, 0)]

    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.splitlines()[-1] == f"ingest: 0 rows: nothing new on subscribe={topic} since the last run"
    assert len(read_output(tmp_path / "out")) == 32


def test_dry_run_prints_the_plan_and_writes_nothing(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("dry-run"), partitions=2)
    group = kafka.unique_name("dry-run-group")
    kafka.produce_values(topic, 10, partitions=2)
    kafka.commit(group, {(topic, 0): 3})
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path)

    result = run_job("ingest", "--config", str(config), "--dry-run")

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        f"ingest plan for {config} (dry run: nothing read, nothing written)",
        f"  source:     subscribe={topic}; bootstrap.servers={kafka.bootstrap_servers}; group {group}, commitMode=sync",
        "  start:      committed (kafka.auto.offset.reset=earliest) (no checkpoint yet)",
        f"  sink:       Parquet at {tmp_path / 'out'}, partitioned by date; value decoded as raw",
        f"  checkpoint: {tmp_path / 'ck'}",
        "  trigger:    availableNow",
        f"{'PARTITION':{len(topic) + 2}}  COMMITTED  START  LOG-END  TO-READ",
        f"{topic}-0          3      3        5        2",
        f"{topic}-1          -      0        5        5",
    ]
    assert not (tmp_path / "out").exists() and not (tmp_path / "ck").exists()
    assert kafka.committed(group, topic, 2) == {0: 3}


def test_bad_config_under_spark_submit_is_one_line(tmp_path, monkeypatch):
    config = tmp_path / "ingest.toml"
    config.write_text('[kafka]\n"bootstrap.servers" = "127.0.0.1:9"\n"sasl.password" = "${env:KS_TEST_UNSET}"\n'
                      '[source]\nsubscribe = "t"\n[sink]\npath = "/tmp/x"\ncheckpoint = "/tmp/y"\n')
    monkeypatch.delenv("KS_TEST_UNSET", raising=False)

    result = run_job("ingest", "--config", str(config))

    assert result.returncode == 2
    assert result.stdout.strip().splitlines()[-1] == (
        f"ingest: configuration error: {config}: [kafka] sasl.password reads the environment variable KS_TEST_UNSET, "
        "which is not set; export KS_TEST_UNSET=... before starting the job")


def completed_batch_ends(checkpoint, topic: str) -> list[dict[int, int]]:
    """The end offsets of every batch the checkpoint's commit log marks completed, in batch order."""
    batches = sorted(int(path.name) for path in (checkpoint / "commits").iterdir() if path.name.isdigit())
    ends = []
    for batch in batches:  # an offset log entry: its version, its metadata, then the source's end offsets
        source_end = json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[2])
        ends.append({int(partition): offset for partition, offset in source_end[topic].items()})
    return ends


def assert_committed_at_a_last_batch_end(kafka, group: str, topic: str, tmp_path) -> None:
    """The group holds the end of the last completed batch, or of the one before: Spark hands the reader a batch's
    end only when it plans the next batch, so a stop between the two leaves the group one batch behind. Its commit
    is async and reaches the broker before the stop (the committer polls on every trigger), so the stop's flush
    cannot be told apart here: tests/integration/test_shutdown.py checks that flush with the runner itself."""
    ends = completed_batch_ends(tmp_path / "ck", topic)
    committed = kafka.committed(group, topic, 2)
    assert len(ends) >= 2 and committed in ends[-2:], f"group at {committed}; completed batches end at {ends}"
    durable = set(durable_positions(tmp_path / "out"))
    for partition, offset in committed.items():
        assert {(partition, o) for o in range(offset)} <= durable  # never ahead of what the sink wrote


def sigterm_mid_stream(kafka, tmp_path, hint: str, target) -> tuple[int, str, int, str]:
    """The ingest job under spark-submit (processing time, 40 records a batch, async commits) over 400 records:
    once two batches are durable, SIGTERM to the pid `target(app)` names. Returns (exit code, its log, how many
    batches had completed when the signal was sent, the topic), after checking that the group sits at the end of one
    of the last two completed batches, never ahead of the sink."""
    topic = kafka.create_topic(kafka.unique_name(hint), partitions=2)
    group = kafka.unique_name(f"{hint}-group")
    kafka.produce_values(topic, 400, partitions=2)
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          trigger="processingTime=500ms",
                          extra_source='maxOffsetsPerTrigger = 40\ncommitMode = "async"')
    log_path = tmp_path / "job.log"
    app = start_job("ingest", "--config", str(config), log_path=log_path)
    try:
        await_condition("two durable batches",
                        lambda: app.poll() is None and len(durable_positions(tmp_path / "out")) >= 80, timeout=300)
        completed_at_signal = len(durable_positions(tmp_path / "out")) // 40  # the sink logs a batch before Spark does
        os.kill(target(app), signal.SIGTERM)
        app.wait(180)
    finally:
        kill_group(app)

    output = log_path.read_text()
    assert_committed_at_a_last_batch_end(kafka, group, topic, tmp_path)
    return app.returncode, output, completed_at_signal, topic


def test_sigterm_stops_after_a_batch_and_commits_nothing_unwritten(kafka, tmp_path):
    # to spark-submit's JVM, as a scheduler or `kill` would
    returncode, output, _, _ = sigterm_mid_stream(kafka, tmp_path, "sigterm", lambda app: app.pid)

    # the JVM got the signal: it exits as signalled (143) once the job has stopped the query
    assert returncode == 143, output[-3000:]
    assert "the JVM is shutting down: stopping now; a running batch is left to the next run" in output
    assert "ingest: stopped on request; the next run resumes after the last completed batch" in output


def python_driver_of(app: subprocess.Popen) -> int:
    """The job's Python process: spark-submit's JVM starts it as its child."""
    found = subprocess.run(["pgrep", "-P", str(app.pid), "-f", "jobs/ingest.py"], capture_output=True, text=True)
    return int(found.stdout.split()[0])


def test_sigterm_to_the_python_driver_finishes_the_batch_and_exits_0(kafka, tmp_path):
    returncode, output, completed_at_signal, topic = sigterm_mid_stream(kafka, tmp_path, "sigterm-py", python_driver_of)

    assert returncode == 0, output[-3000:]
    # the batch running at the signal, and those Spark ended before the job's next look (once a second); not the
    # rest of the backlog (10 batches in all)
    ends = completed_batch_ends(tmp_path / "ck", topic)
    assert len(ends) - completed_at_signal <= 3, (completed_at_signal, ends)
    assert sum(ends[-1].values()) < 400, ends[-1]
    assert "SIGTERM received: stopping after the running batch" in output
    assert "ingest: stopped on request; the next run resumes after the last completed batch" in output
    assert "Py4JException" not in output  # no shutdown hook calling into the finished job


def test_replay_writes_the_range_and_never_commits(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("replay"), partitions=2)
    group = kafka.unique_name("replay-group")
    produce_orders(kafka, topic, 20, 2)
    config = write_config(tmp_path / "replay.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          value="json", schema=SCHEMA)

    result = run_job("replay", "--config", str(config), "--from", json.dumps({topic: {"0": 2, "1": -2}}),
                     "--to", json.dumps({topic: {"0": 5, "1": -1}}))

    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_output(tmp_path / "out")
    assert [(r["kafka_partition"], r["kafka_offset"], r["id"]) for r in rows] == (
        [(0, o, 2 * o) for o in range(2, 5)] + [(1, o, 2 * o + 1) for o in range(10)])
    assert result.stdout.strip().endswith(f"(13 records at most) written to {tmp_path / 'out'}")
    assert kafka.committed(group, topic, 2) == {}


def test_lag_job_prints_the_table_with_who_committed_and_exits_3_above_max(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("lag"), partitions=3)
    group = kafka.unique_name("lag-group")
    kafka.produce_values(topic, 15, partitions=3)
    ours = committer.metadata(committer.committer_environment("local-1795600000000", "orders-ingest"),
                              now_ms=1795600000000)
    kafka.commit(group, {(topic, 0): 4}, metadata=ours)
    kafka.commit(group, {(topic, 1): 5}, metadata="kafkasource")  # what older versions wrote
    config = write_config(tmp_path / "lag.toml", kafka.bootstrap_servers, topic, group, tmp_path)

    within = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "lag.py"), "--config", str(config),
                             "--max-lag", "6"], capture_output=True, text=True, timeout=120)
    above = run_job("lag", "--config", str(config), "--max-lag", "5")

    assert within.returncode == 0, within.stderr
    lines = within.stdout.splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "COMMITTED-AT",
                                "COMMITTED-BY"]
    assert [line.split(None, 7) for line in lines[1:4]] == [
        [group, topic, "0", "4", "5", "1", "2026-11-25T09:46:40Z",
         f"orders-ingest (local-1795600000000) on {socket.gethostname()} pid {os.getpid()}"],
        [group, topic, "1", "5", "5", "0", "-", "kafkasource"],
        [group, topic, "2", "-", "5", "5", "-", "-"],
    ]
    assert lines[4:] == ["total lag: 6 records over 3 partitions"]
    assert above.returncode == 3, above.stderr[-2000:]
    assert above.stdout.splitlines()[-1] == "lag 6 is above --max-lag 5"


def test_format_resolves_after_an_editable_install_outside_the_repository(kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("outside"), partitions=2)
    kafka.produce_values(topic, 7, partitions=2)
    script = tmp_path / "read.py"
    script.write_text(
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
        f"df = spark.read.format('kafkasource').option('kafka.bootstrap.servers', '{kafka.bootstrap_servers}')"
        f".option('subscribe', '{topic}').load()\n"
        "print(sorted((r.partition, r.offset) for r in df.collect()))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env={**env, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"})

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str([(0, o) for o in range(4)] + [(1, o) for o in range(3)])
