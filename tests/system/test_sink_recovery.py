"""Exactly-once through what users do to a query and what Spark does to tasks, on the real broker and a real Spark:
a crash replay decided by the markers in Kafka alone (a fresh process), a checkpoint restored from a backup, a new
checkpoint that takes a sink over, two queries taking turns under one prefix, and a batch write whose tasks fail
after their commit and are retried. Each is checked record by record with a read_committed consumer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkasource.writing.task import FAIL_AFTER_WRITE
from tests.support.job_helpers import REPO_ROOT
from tests.support.kafka_helpers import Record
from tests.support.query_helpers import QUERY_TIMEOUT_S, base_options
from tests.support.sink_fresh_process import OUTCOME
from tests.support.sink_helpers import (
    DIGEST,
    PARTITIONS,
    batch_markers,
    copy_query,
    finish_available_now,
    read_topic,
    write_batch,
)

pytestmark = pytest.mark.spark  # a Spark application of its own, besides the spark fixture's session
PROCESS_TIMEOUT_S = 300


def failed_query(query) -> str:
    """The error an AvailableNow query ended with (it must end with one)."""
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not end"
    except Exception as exc:  # awaitTermination raises what the query failed with
        return str(exc)
    finally:
        query.stop()
    raise AssertionError("the query ended without an error")


def fresh_process(kafka, spec: dict, tmp_path: Path, env: dict | None = None) -> dict:
    """tests/support/sink_fresh_process.py run to its end; the outcome it printed."""
    spec_path = tmp_path / f"spec-{len(list(tmp_path.glob('spec-*')))}.json"
    spec_path.write_text(json.dumps({"bootstrap": kafka.bootstrap_servers, **spec}))
    done = subprocess.run([sys.executable, "-m", "tests.support.sink_fresh_process", str(spec_path)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S, env={**os.environ, **(env or {})})
    lines = [line for line in done.stdout.splitlines() if line.startswith(OUTCOME)]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1][len(OUTCOME):])


def rewind(checkpoint: Path, batches: range, logs: tuple[str, ...] = ("offsets", "commits")) -> None:
    """Remove the offsets and commits of `batches` from the checkpoint, as restoring an older backup does (the
    commits alone: as a driver that died after the batch's tasks committed leaves it)."""
    for log in logs:
        for batch in batches:
            (checkpoint / log / str(batch)).unlink()
            (checkpoint / log / f".{batch}.crc").unlink(missing_ok=True)


def values(kafka, topic: str) -> list[bytes]:
    """The values a read_committed consumer sees, partition by partition in offset order."""
    return [r[3] for r in read_topic(kafka, topic, PARTITIONS, read_committed=True)]


def source_values(start: int, end: int) -> list[bytes]:
    """Values v<start>..v<end-1> as produce_values spreads them (i % PARTITIONS), in read_topic's order."""
    return [v for p in range(PARTITIONS) for v in partition_values(p, start, end)]


def partition_values(partition: int, start: int, end: int) -> list[bytes]:
    return [f"v{i}".encode() for i in range(start, end) if i % PARTITIONS == partition]


def test_a_restored_checkpoint_fails_before_writing_and_the_newest_one_resumes(spark, kafka, tmp_path):
    source = kafka.create_topic(kafka.unique_name("restored-in"), PARTITIONS)
    target = kafka.create_topic(kafka.unique_name("restored-out"), PARTITIONS)
    group, prefix = kafka.unique_name("restored-group"), kafka.unique_name("restored-sink")
    kafka.produce_values(source, 30, PARTITIONS)
    reading = {"subscribe": source, "kafka.group.id": group, "kafka.auto.offset.reset": "earliest"}
    writing = {"topic": target, "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": prefix}
    checkpoint = tmp_path / "checkpoint"
    first = finish_available_now(copy_query(spark, kafka, {**reading, "maxOffsetsPerTrigger": "10"}, writing,
                                            checkpoint))
    assert sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()) == [0, 1, 2]
    assert values(kafka, target) == source_values(0, 30)
    markers = batch_markers(kafka, prefix, target, PARTITIONS)
    assert markers == [(3, {"kind": "kafkasource-sink-marker", "queryId": str(first.id), "batchId": 2,
                            "partition": p, "records": markers[p][1]["records"], "digest": DIGEST})
                       for p in range(PARTITIONS)]

    # a crash between the tasks' commits and Spark's: batch 2 runs again in a fresh process, whose tasks keep no
    # producer from before, so the markers in Kafka alone make them skip it
    rewind(checkpoint, range(2, 3), logs=("commits",))
    spec = {"mode": "copy", "master": "local[2]", "checkpoint": str(checkpoint), "sink": writing,
            "source": {**reading, "maxOffsetsPerTrigger": "10"}}
    assert fresh_process(kafka, spec, tmp_path) == {"outcome": "ok"}
    assert values(kafka, target) == source_values(0, 30)
    assert batch_markers(kafka, prefix, target, PARTITIONS) == markers
    newest = tmp_path / "newest"
    shutil.copytree(checkpoint, newest)

    # a checkpoint restored from an older backup: Spark plans batch 1 again, over offsets 10..59
    kafka.produce(source, [Record(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode()) for i in range(30, 60)])
    rewind(checkpoint, range(1, 3))
    restored = failed_query(copy_query(spark, kafka, {**reading, "maxOffsetsPerTrigger": "50"}, writing, checkpoint))
    assert (f"the checkpoint is behind what this sink already wrote: Spark runs batch 1 of query {first.id}, but "
            f"the marker of transactionalIdPrefix {prefix} for partition ") in restored
    assert " says batch 2 of that query is written. The checkpoint was rewound" in restored
    # the same without a rate limit
    unlimited = failed_query(copy_query(spark, kafka, reading, writing, checkpoint))
    assert f"Spark runs batch 1 of query {first.id}, but the marker of transactionalIdPrefix {prefix}" in unlimited
    assert values(kafka, target) == source_values(0, 30)  # nothing of the replanned batch was committed

    # Spark committed the restored checkpoint's position to the group as it restarted (the end of batch 0)
    assert kafka.committed(group, source, PARTITIONS) == {0: 4, 1: 3, 2: 3}

    # the recovery the docs give first: the newest checkpoint, restored, resumes after batch 2 and writes the rest once
    resumed = finish_available_now(copy_query(spark, kafka, reading, writing, newest))
    assert resumed.id == first.id
    assert values(kafka, target) == [v for p in range(PARTITIONS)
                                     for v in partition_values(p, 0, 30) + partition_values(p, 30, 60)]
    assert [m["batchId"] for _, m in batch_markers(kafka, prefix, target, PARTITIONS)] == [3] * PARTITIONS
    assert kafka.committed(group, source, PARTITIONS) == {0: 20, 1: 20, 2: 20}


def test_two_queries_taking_turns_under_one_prefix_fail_naming_the_other(spark, kafka, tmp_path):
    """The second query takes the prefix over from the first (as a new checkpoint for the same sink would); when the
    first writes again, it fails, naming the second, and writes nothing."""
    sources = [kafka.create_topic(kafka.unique_name(f"turns-in-{i}"), PARTITIONS) for i in range(2)]
    target = kafka.create_topic(kafka.unique_name("turns-out"), PARTITIONS)
    prefix = kafka.unique_name("turns-sink")
    writing = {"topic": target, "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": prefix}
    for source in sources:
        kafka.produce_values(source, 6, PARTITIONS)

    def copy(source: str, checkpoint: str):
        return copy_query(spark, kafka, {"subscribe": source, "startingOffsets": "earliest"}, writing,
                          tmp_path / checkpoint)

    first = finish_available_now(copy(sources[0], "first"))
    second = finish_available_now(copy(sources[1], "second"))
    kafka.produce(sources[0], [Record(p, b"k", b"later") for p in range(PARTITIONS)])
    error = failed_query(copy(sources[0], "first"))

    assert (f"another sink writes under transactionalIdPrefix {prefix}: partition ") in error
    assert (f"'s marker names query {second.id} (its batch 0), which took the prefix over after this query "
            f"({first.id}) had written under it.") in error
    assert b"later" not in values(kafka, target)
    assert sorted(values(kafka, target)) == sorted(source_values(0, 6) * 2)


def test_a_batch_write_whose_tasks_fail_after_their_commit_writes_each_part_once(spark, kafka, tmp_path):
    """local[2,4] retries each task; every first attempt fails after its records were written (the test fault).
    Under exactly-once each retry finds its task's marker for this write and skips; under at-least-once the retries
    write their part again. A second save() is a new write, and writes again."""
    topics = {g: kafka.create_topic(kafka.unique_name(f"retried-{g}"), PARTITIONS)
              for g in ("exactly-once", "at-least-once")}
    prefix = kafka.unique_name("retried-sink")
    faults = tmp_path / "faults"
    faults.mkdir()
    spec = {"mode": "batch-write", "master": "local[2,4]", "rows": 30, "partitions": 3, "writes": [
        {"topic": topics["exactly-once"], "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": prefix},
        {"topic": topics["at-least-once"], "deliveryGuarantee": "at-least-once"}]}

    assert fresh_process(kafka, spec, tmp_path, env={FAIL_AFTER_WRITE: str(faults)}) == {"outcome": "ok"}

    assert sorted(p.name for p in faults.iterdir()) == ["0", "1", "2"]  # each task failed once after its write
    written = sorted(values(kafka, topics["exactly-once"]))
    assert written == sorted(f"v{i}".encode() for i in range(30))
    assert sorted(values(kafka, topics["at-least-once"])) == sorted(written * 2)  # what the fault does without marks
    markers = batch_markers(kafka, prefix, topics["exactly-once"], 3)
    assert [m["batchId"] for _, m in markers] == [0, 0, 0] and sum(m["records"] for _, m in markers) == 30
    assert len({m["queryId"] for _, m in markers}) == 1 and markers[0][1]["queryId"].startswith("write-")

    rows = spark.createDataFrame([(f"v{i}",) for i in range(30)], "value string")
    write_batch(rows, base_options(kafka, **spec["writes"][0]))
    assert sorted(values(kafka, topics["exactly-once"])) == sorted(written * 2)
