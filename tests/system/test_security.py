"""Security: secured brokers on loopback, real credentials, real ACLs, real certificates.

A SASL_PLAINTEXT (SCRAM-SHA-512) broker with Kafka's StandardAuthorizer, whose users are made by
Kafka's own storage tool; an SSL broker whose certificate a CA made in the test signed (openssl and
the JDK's keytool). Each user has exactly the permissions its test needs:

- alice: READ on the topics and groups (reads and commits), WRITE on the topic she writes with the sink,
- bob: DESCRIBE but no READ on topics (sees the partitions, may not fetch),
- carol: READ on topics but only DESCRIBE on groups (may read and fetch offsets, may not commit).
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from dev import secure_broker
from kafkasource.commit.committer import OffsetCommitter
from tests.support.job_helpers import durable_positions, run_job, write_config
from tests.support.kafka_helpers import await_condition
from tests.support.query_helpers import Collector, available_now_failure, run_to_end, start_query, stream
from tests.support.security_helpers import (
    PASSWORDS,
    WRONG_PASSWORD,
    committed,
    files_under,
    holding,
    rows,
    sasl_options,
    topic_with_records,
    written_by_the_sink,
)

pytestmark = pytest.mark.spark  # the ingest job under spark-submit, besides the spark fixture's session

QUERY_TIMEOUT_S = 300


def test_right_credentials_write_read_and_commit_and_the_password_shows_nowhere(spark, sasl, tmp_path, capsys):
    """alice's records are written by the sink and read back by the source, both with her SCRAM credentials."""
    topic, group = f"secure-{secrets.token_hex(4)}", f"secure-group-{secrets.token_hex(4)}"
    topic_with_records(sasl, topic, count=0)
    sasl.grant("alice", "TOPIC", topic, "WRITE", "READ")
    expected = written_by_the_sink(spark, sasl, topic, sasl_options(sasl, "alice", PASSWORDS["alice"]))
    sasl.grant("alice", "GROUP", group, "READ")
    options = sasl_options(sasl, "alice", PASSWORDS["alice"], subscribe=topic, commitMode="sync",
                           **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})

    query, collector = run_to_end(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)
    capsys.readouterr()
    stream(spark, options).explain(extended=True)  # the DataFrame's plan, with the source's options
    query.explain(extended=True)  # the running query's plan
    plan = capsys.readouterr().out

    assert rows(collector) == sorted(expected)
    assert committed(sasl, group, topic, 2) == {0: 10, 1: 10}
    assert plan.count("== Physical Plan ==") == 2 and "kafkasource" in plan, plan
    assert "kafka.sasl.username=alice" in plan  # the plan shows the source's options: the password's place
    progress = "\n".join(p.json for p in query.recentProgress)
    assert topic in progress
    for where, text in [("the query plan", plan), ("the query progress", progress)]:
        assert PASSWORDS["alice"] not in text, where
    checkpoint = files_under(tmp_path / "ck")
    assert tmp_path / "ck" / "offsets" / "0" in holding(topic, checkpoint)  # the search finds what is there
    assert holding(PASSWORDS["alice"], checkpoint) == set()


def test_without_a_group_id_every_record_is_read_although_the_executor_group_is_denied(spark, sasl, tmp_path):
    """Executor consumers without kafka.group.id look up a group of their own, which ACLs deny here: the error
    events that brings arrive among the records and must not cut any record out."""
    topic = f"no-group-id-{secrets.token_hex(4)}"
    expected = topic_with_records(sasl, topic, count=2000)
    sasl.grant("alice", "TOPIC", topic, "READ")
    options = sasl_options(sasl, "alice", PASSWORDS["alice"], subscribe=topic, startingOffsets="earliest")

    _query, collector = run_to_end(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)

    assert rows(collector) == sorted(expected)


def ingest_config(sasl, tmp_path: Path, topic: str, group: str) -> Path:
    config = write_config(tmp_path / "ingest.toml", sasl.bootstrap_servers, topic, group, tmp_path)
    text = config.read_text().replace("[kafka]\n", "[kafka]\n" + "\n".join([
        '"security.protocol" = "SASL_PLAINTEXT"', f'"sasl.mechanism" = "{secure_broker.MECHANISM}"',
        '"sasl.username" = "alice"', '"sasl.password" = "${env:KAFKA_SASL_PASSWORD}"']) + "\n")
    config.write_text(text)
    return config


def test_wrong_password_fails_naming_the_mechanism_and_brokers_and_no_log_holds_a_password(sasl, tmp_path):
    """The ingest job under spark-submit, once with the right password and once with a wrong one, with Spark's
    event log on: the password is in neither run's driver and executor output, event log, checkpoint or sink,
    where the same search finds a marker conf, the topic and the broker address."""
    topic, group = f"secure-job-{secrets.token_hex(4)}", f"secure-job-group-{secrets.token_hex(4)}"
    topic_with_records(sasl, topic)
    sasl.grant("alice", "TOPIC", topic, "READ")
    sasl.grant("alice", "GROUP", group, "READ")
    config = ingest_config(sasl, tmp_path, topic, group)
    events = tmp_path / "events"
    events.mkdir()
    marker = f"marker-{secrets.token_hex(10)}"
    # plain JSON lines: Spark compresses event logs (zstd) by default, and no byte search finds a string in those
    event_log = ("--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir=file://{events}",
                 "--conf", "spark.eventLog.compress=false", "--conf", f"spark.kafkasource.marker={marker}")

    right = run_job("ingest", "--config", str(config), extra=event_log, env={"KAFKA_SASL_PASSWORD": PASSWORDS["alice"]})
    assert right.returncode == 0, right.stdout[-3000:] + right.stderr[-3000:]
    assert len(durable_positions(tmp_path / "out")) == 20
    assert committed(sasl, group, topic, 2) == {0: 10, 1: 10}

    wrong = run_job("ingest", "--config", str(config), extra=event_log, env={"KAFKA_SASL_PASSWORD": WRONG_PASSWORD})
    output = wrong.stdout + wrong.stderr
    assert wrong.returncode == 1, output[-3000:]
    assert (f"authentication with Kafka at {sasl.bootstrap_servers} failed (SASL mechanism SCRAM-SHA-512, "
            "security.protocol SASL_PLAINTEXT)") in output, output[-3000:]
    assert "Check kafka.sasl.username and kafka.sasl.password" in output

    logs = {"right run output": (right.stdout + right.stderr).encode(), "wrong run output": output.encode()}
    for directory in (events, tmp_path / "ck", tmp_path / "out"):
        logs.update(files_under(directory))
    event_logs = set(events.glob("eventlog_v2_*/events_*"))
    assert len(event_logs) == 2, "one event log per run"
    # the search finds what is known to be there, in every kind of place it searches
    assert event_logs <= holding(marker, logs)
    sink_files = set((tmp_path / "out").rglob("*.parquet"))
    assert len(sink_files) == 2 and {"right run output", tmp_path / "ck" / "offsets" / "0", *sink_files} <= holding(
        topic, logs)
    assert "wrong run output" in holding(sasl.bootstrap_servers, logs)
    for password in (PASSWORDS["alice"], WRONG_PASSWORD):
        assert holding(password, logs) == set()


def test_a_principal_without_read_on_the_topic_is_told_so(spark, sasl, tmp_path):
    topic, group = f"no-read-{secrets.token_hex(4)}", f"no-read-group-{secrets.token_hex(4)}"
    topic_with_records(sasl, topic)
    sasl.grant("bob", "TOPIC", topic, "DESCRIBE")
    sasl.grant("bob", "GROUP", group, "READ")
    options = sasl_options(sasl, "bob", PASSWORDS["bob"], subscribe=topic,
                           **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})

    message = available_now_failure(spark, tmp_path / "ck", options)

    assert f"not authorized to read topic {topic}" in message, message
    assert f"needs the READ permission on topic {topic}" in message
    assert committed(sasl, group, topic, 2) == {}


def without_read_on_the_group(sasl, mode: str) -> tuple[str, str, list, dict[str, str]]:
    """A topic of 20 records, and carol's options to read it and commit to a group she may only DESCRIBE."""
    topic, group = f"no-group-{secrets.token_hex(4)}", f"no-group-{mode}-{secrets.token_hex(4)}"
    expected = topic_with_records(sasl, topic)
    sasl.grant("carol", "TOPIC", topic, "READ")
    sasl.grant("carol", "GROUP", group, "DESCRIBE")
    options = sasl_options(sasl, "carol", PASSWORDS["carol"], subscribe=topic, commitMode=mode,
                           commitTimeoutMs="5000", **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})
    return topic, group, expected, options


def test_without_read_on_the_group_a_sync_commit_fails_the_query_after_the_batch_was_written(spark, sasl, tmp_path):
    topic, group, expected, options = without_read_on_the_group(sasl, "sync")
    collector = Collector()
    query = start_query(spark, tmp_path / "ck", options, collector)
    try:
        with pytest.raises(Exception) as failure:
            query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()

    message = str(failure.value)
    assert f"committing offsets of group {group} for {topic}-0" in message, message
    assert "Group authorization failed" in message
    assert f"Committing needs the READ permission on group {group}" in message
    assert rows(collector) == sorted(expected)  # the batch was written before its commit was refused
    assert committed(sasl, group, topic, 2) == {}  # so a new query on this group reads it again: nothing lost


def test_without_read_on_the_group_async_commits_warn_and_the_query_reads_everything(spark, sasl, tmp_path, caplog):
    topic, group, expected, options = without_read_on_the_group(sasl, "async")

    _query, collector = run_to_end(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)
    assert rows(collector) == sorted(expected)
    assert committed(sasl, group, topic, 2) == {}

    # the warning itself, from the committer the query uses, in this process
    def factory(on_commit):
        return Consumer({**sasl.client_config("carol", PASSWORDS["carol"]), "group.id": group,
                         "enable.auto.commit": False, "on_commit": on_commit})
    committer = OffsetCommitter(group, "async", 5000, factory)
    try:
        with caplog.at_level(logging.WARNING, logger="kafkasource.commit.committer"):
            committer.commit({(topic, 0): 10})
            await_condition("the async commit's answer",
                            lambda: committer.poll(0.2) or committer.failed_async_commits == 1, timeout=60)
    finally:
        committer.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(f"async committing offsets of group {group} for {topic}-0" in w and "Group authorization failed" in w
               and f"Committing needs the READ permission on group {group}" in w for w in warnings), warnings


def test_ssl_with_the_right_ca_writes_and_reads(spark, ssl, certificates, tmp_path):
    """The sink writes the records over TLS and the source reads them back, both verifying the brokers by the CA."""
    topic = f"tls-{secrets.token_hex(4)}"
    topic_with_records(ssl, topic, count=0)
    tls = {"kafka.bootstrap.servers": ssl.bootstrap_servers, "kafka.security.protocol": "SSL",
           "kafka.ssl.ca.location": str(certificates.ca_pem)}
    expected = written_by_the_sink(spark, ssl, topic, tls)
    options = {**tls, "subscribe": topic, "startingOffsets": "earliest"}

    _query, collector = run_to_end(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)

    assert rows(collector) == sorted(expected)


def test_ssl_with_a_wrong_ca_fails_about_certificate_verification(spark, ssl, tmp_path):
    other_ca, _key = secure_broker.make_ca(tmp_path / "other", "other-ca")
    options = {"kafka.bootstrap.servers": ssl.bootstrap_servers, "kafka.security.protocol": "SSL",
               "kafka.ssl.ca.location": str(other_ca), "subscribe": "anything", "startingOffsets": "earliest"}

    message = available_now_failure(spark, tmp_path / "ck", options)

    assert f"the TLS handshake with Kafka at {ssl.bootstrap_servers} failed" in message, message
    assert "certificate verify failed" in message
    assert "set kafka.ssl.ca.location to the PEM file of the CA that signed it" in message
