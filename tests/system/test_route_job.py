"""The route job end to end under spark-submit: a topic decoded, filtered and reshaped by SQL, written to another
topic exactly once, the source group committed, and the records and bytes it wrote in its metrics."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.job_helpers import kill_group, run_job, start_job
from tests.support.kafka_helpers import Record, await_condition
from tests.support.sink_helpers import read_topic

pytestmark = pytest.mark.spark  # runs spark-submit


def write_route_config(path, bootstrap: str, source: str, target: str, group: str, tmp_path, guarantee: str):
    path.write_text(f"""
[kafka]
"bootstrap.servers" = "{bootstrap}"
"group.id" = "{group}"
"auto.offset.reset" = "earliest"

[source]
subscribe = "{source}"
maxOffsetsPerTrigger = 10

[decode]
value = "json"
schema = "id BIGINT, amount DOUBLE"

[transform]
sql = '''SELECT CAST(id AS STRING) AS key, named_struct('id', id, 'double', amount * 2) AS value,
                kafka_partition AS partition
         FROM records WHERE _corrupt IS NULL AND amount >= 10'''

[sink]
topic = "{target}"
checkpoint = "{tmp_path / "checkpoint"}"
delivery_guarantee = "{guarantee}"
value_format = "json"

[job]
name = "{group}"

[metrics]
textfile = "{tmp_path / "route.prom"}"
""")
    return path


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{name}{{[^}}]*}} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} not in the textfile:\n{text}"
    return float(found.group(1))


def test_route_writes_the_selected_records_once_commits_the_group_and_counts_its_writes(kafka, tmp_path):
    source = kafka.create_topic(kafka.unique_name("route-in"), partitions=2)
    target = kafka.create_topic(kafka.unique_name("route-out"), partitions=2)
    group = kafka.unique_name("route")
    orders = [Record(i % 2, None, json.dumps({"id": i, "amount": float(i)}).encode()) for i in range(30)]
    kafka.produce(source, [*orders, Record(0, None, b"{not json")])
    config = write_route_config(tmp_path / "route.toml", kafka.bootstrap_servers, source, target, group, tmp_path,
                                "exactly-once")

    first = run_job("route", "--config", str(config))

    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert first.stdout.splitlines()[-1] == (
        f"route: 31 rows in 4 batches from subscribe={source} into the topic {target}")
    written = read_topic(kafka, target, 2, read_committed=True)
    expected = [(i % 2, str(i).encode(), json.dumps({"id": i, "double": 2.0 * i}, separators=(",", ":")).encode())
                for i in range(10, 30)]
    assert sorted((p, k, v) for p, _, k, v, _ in written) == sorted(expected)
    assert kafka.committed(group, source, 2) == {0: 16, 1: 15}  # every source record, the bad one included
    # each task's exactly-once marker: the last batch it wrote in, plus one. Batch 3 read only the bad record, which
    # the SQL drops, and a task with no rows commits no transaction, so both tasks' markers are batch 2's
    assert kafka.committed(f"{group}-0", target, 1) == {0: 3} and kafka.committed(f"{group}-1", target, 1) == {0: 3}
    metrics = (tmp_path / "route.prom").read_text()
    assert metric(metrics, "kafkasource_query_records_written_total") == 20
    assert metric(metrics, "kafkasource_query_bytes_written_total") == sum(len(k) + len(v) for _, k, v in expected)

    # the driver died after batch 2's tasks committed, before Spark recorded the batch (nor planned batch 3): the next
    # run replays batch 2, whose markers make its tasks skip it, and writes what came since once
    for log, batch in (("commits", 3), ("offsets", 3), ("commits", 2)):
        (tmp_path / "checkpoint" / log / str(batch)).unlink()
        (tmp_path / "checkpoint" / log / f".{batch}.crc").unlink(missing_ok=True)
    more = [Record(i % 2, None, json.dumps({"id": i, "amount": float(i)}).encode()) for i in range(30, 34)]
    kafka.produce(source, more)

    second = run_job("route", "--config", str(config))

    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    written = read_topic(kafka, target, 2, read_committed=True)
    expected += [(i % 2, str(i).encode(), json.dumps({"id": i, "double": 2.0 * i}, separators=(",", ":")).encode())
                 for i in range(30, 34)]
    assert sorted((p, k, v) for p, _, k, v, _ in written) == sorted(expected)
    assert kafka.committed(group, source, 2) == {0: 18, 1: 17}


def test_a_new_checkpoint_after_a_batch_the_group_never_committed_is_warned_of(kafka, tmp_path):
    """The route job killed after its first batch completed, before the next trigger committed it to the group (a
    processing-time trigger an hour long), then run again with a new checkpoint: it warns that it writes that
    batch again, and does (what restarting from the checkpoint instead avoids)."""
    source = kafka.create_topic(kafka.unique_name("rewrite-in"), partitions=2)
    target = kafka.create_topic(kafka.unique_name("rewrite-out"), partitions=2)
    group = kafka.unique_name("rewrite")
    kafka.produce(source, [Record(i % 2, None, json.dumps({"id": i, "amount": 10.0 + i}).encode()) for i in range(10)])
    config = write_route_config(tmp_path / "route.toml", kafka.bootstrap_servers, source, target, group, tmp_path,
                                "exactly-once")
    log_path = tmp_path / "first.log"
    first = start_job("route", "--config", str(config), "--trigger", "processingTime=1h", log_path=log_path)
    completed = tmp_path / "checkpoint" / "commits" / "0"
    try:
        await_condition("the first batch completed, or the job ended", lambda: completed.exists() or first.poll(),
                        timeout=240)
    finally:
        kill_group(first)
    assert completed.exists(), f"exit {first.returncode}: {log_path.read_text()[-3000:]}"
    assert len(read_topic(kafka, target, 2, read_committed=True)) == 10
    assert kafka.committed(group, source, 2) == {}  # the batch never reached the group's commit

    config.write_text(config.read_text().replace(str(tmp_path / "checkpoint"), str(tmp_path / "new-checkpoint")))
    second = run_job("route", "--config", str(config))

    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    output = second.stdout + second.stderr
    assert (f"this run starts a new checkpoint, and the sink's transactionalIdPrefix {group} holds batch 0 of query "
            ) in output
    assert (f"and group {group} has no committed offset: that batch never reached the group's commit (its query "
            "crashed, or stopped before its next trigger committed it), so this run reads it again") in output
    assert len(read_topic(kafka, target, 2, read_committed=True)) == 20  # written again, as the warning says
