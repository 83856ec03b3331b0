"""The ingest job with [decode] value = "avro" and a dead-letter topic, under spark-submit against the real
broker and schema registry: records that do not decode reach the dead-letter topic as they were, with headers
naming where they came from and why, at least once across a SIGKILL of the whole job mid-stream; the good
ones reach the Parquet sink exactly once."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.job_helpers import durable_positions, kill_group, run_job, start_job
from tests.support.kafka_helpers import Record, await_condition
from tests.support.registry_helpers import avro_serializer, encode

pytestmark = pytest.mark.spark  # runs spark-submit

ORDER = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
UNKNOWN_ID = 987_001


def write_avro_config(path, bootstrap, registry_url, topic, group, dead_letter_topic, out_dir):
    path.write_text("\n".join([
        "[kafka]", f'"bootstrap.servers" = "{bootstrap}"', '"auto.offset.reset" = "earliest"',
        f'"group.id" = "{group}"',
        "[source]", f'subscribe = "{topic}"', "maxOffsetsPerTrigger = 40",
        "[schema_registry]", 'url = "${env:TEST_REGISTRY_URL}"',
        "[decode]", 'value = "avro"', f'dead_letter_topic = "{dead_letter_topic}"',
        "[sink]", f'path = "{out_dir / "out"}"', f'checkpoint = "{out_dir / "ck"}"',
        "[job]", 'trigger = "processingTime=500ms"']) + "\n")
    return path


def read_topic(bootstrap: str, topic: str) -> list:
    """Every record of a one-partition topic, from its start to its end now."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlt-reader", "enable.auto.commit": False})
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        found = []
        while len(found) < end:
            message = consumer.poll(10)
            assert message is not None, f"{len(found)} of {end} records read from {topic}"
            assert message.error() is None, message.error()
            found.append(message)
        return found
    finally:
        consumer.close()


def test_dead_letter_topic_gets_exactly_the_bad_records_at_least_once_across_a_sigkill(
        kafka, schema_registry, tmp_path, monkeypatch):
    topic = kafka.create_topic(kafka.unique_name("avro-ingest"), partitions=2)
    dead_letters = kafka.create_topic(kafka.unique_name("avro-dlt"), partitions=1)
    group = kafka.unique_name("avro-ingest-group")
    serializer = avro_serializer(schema_registry, ORDER)
    records, bad = [], {}
    for i in range(300):
        good = encode(serializer, topic, {"id": i, "name": f"n{i}"})
        if i % 10 == 3:
            records.append(Record(i % 2, f"k{i}".encode(), b"not avro %d" % i, headers=(("trace", b"t%d" % i),)))
        elif i % 10 == 7:
            records.append(Record(i % 2, None, b"\x00" + UNKNOWN_ID.to_bytes(4, "big") + good[5:]))
        else:
            records.append(Record(i % 2, f"k{i}".encode(), good))
    produced = kafka.produce(topic, records)
    for record in produced:
        if record.value[:1] != b"\x00":
            bad[(record.partition, record.offset)] = (record, "no schema-registry wire-format prefix")
        elif int.from_bytes(record.value[1:5], "big") == UNKNOWN_ID:
            bad[(record.partition, record.offset)] = (record, f"unknown schema id {UNKNOWN_ID}")
    good_positions = sorted((r.partition, r.offset) for r in produced if (r.partition, r.offset) not in bad)
    assert len(bad) == 60 and len(good_positions) == 240
    monkeypatch.setenv("TEST_REGISTRY_URL", schema_registry)
    config = write_avro_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, schema_registry, topic, group,
                               dead_letters, tmp_path)

    app = start_job("ingest", "--config", str(config), log_path=tmp_path / "job.log")
    try:  # SIGKILL the whole job once some bad records are in the dead-letter topic, while it still reads
        await_condition("dead letters while the job runs", lambda: app.poll() is None and kafka.latest(
            dead_letters, 1)[0] >= 6, timeout=300)
    finally:
        kill_group(app)
    assert len(durable_positions(tmp_path / "out")) < 240, "the job finished before it was killed"
    # the rerun replays the batch the kill left unfinished as it was planned, then reads the rest in one batch
    config.write_text(config.read_text().replace("maxOffsetsPerTrigger = 40", "maxOffsetsPerTrigger = 1000"))
    rerun = run_job("ingest", "--config", str(config), "--trigger", "availableNow")
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]

    letters = read_topic(kafka.bootstrap_servers, dead_letters)
    by_position = {}
    for message in letters:
        headers = dict(message.headers())
        position = (int(headers["kafkasource.source.partition"]), int(headers["kafkasource.source.offset"]))
        original, reason = bad[position]  # a KeyError: a record that decoded went to the dead-letter topic
        assert headers["kafkasource.source.topic"] == topic.encode()
        assert headers["kafkasource.error"] == reason.encode()
        assert (message.key(), message.value()) == (original.key, original.value)
        assert message.headers()[:len(original.headers)] == list(original.headers)
        by_position[position] = message
    assert sorted(by_position) == sorted(bad)  # every bad record at least once; duplicates only from the replay
    assert len(letters) >= len(bad)

    durable = durable_positions(tmp_path / "out")
    assert sorted(durable) == good_positions  # the good ones exactly once, the bad ones not in the sink
    assert kafka.committed(group, topic, 2) == kafka.latest(topic, 2)
