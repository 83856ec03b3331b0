"""One Spark task of a write, on an executor: what Spark says about the task (its partition, and for a stream its
batch and query), and its rows written under the sink's delivery guarantee.

A task of a stream learns its batch and query from the local properties Spark sets on it
(streaming.sql.batchId, sql.streaming.queryId); a batch write's task, from the id the driver made for its save()
(writer.py), which the writer carries to every task.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql.datasource import WriterCommitMessage

from kafkasource.errors import KafkaSourceError
from kafkasource.formats.encoding import Encoding
from kafkasource.options.sink import SinkOptions
from kafkasource.writing.encoded import encode_batches
from kafkasource.writing.markers import MarkedBatch
from kafkasource.writing.producer import write_plain
from kafkasource.writing.rows import ArrowRecords, Columns
from kafkasource.writing.transactions import Outcome, Prepared, write_transaction

log = logging.getLogger(__name__)

BATCH_ID = "streaming.sql.batchId"
READ_AHEAD_BYTES = 64 * 1024 * 1024  # input an exactly-once task holds while its producer is made ready
QUERY_ID = "sql.streaming.queryId"
# The tests' fault: a directory where the first attempt of each task leaves a file named after its partition, then
# fails after its records were written (committed, under exactly-once), as an executor lost before the driver heard
# of the task's success would, so that Spark retries it. Nothing else reads it.
FAIL_AFTER_WRITE = "KAFKASOURCE_TEST_FAIL_AFTER_WRITE"


# Measured on pyspark 4.3: under Trigger.Continuous Spark never calls a Python sink's write(); it commits every
# epoch on the driver with no message from any task, so the rows of the epoch are dropped. Raising in that commit
# is all a Python sink can do, and Spark only logs it (its epoch coordinator ignores the error and the query runs
# on): the refusal is in the driver's log, and the topic receives nothing.
CONTINUOUS_REFUSED = (
    "kafkasource's sink does not run under Trigger.Continuous: Spark never hands a Python sink's "
    "tasks a row under it (it commits each epoch with no task's message), so every record would be "
    "lost. Stop the query and use a micro-batch trigger (processingTime, availableNow)"
)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What a task tells the driver: its partition, how many records it wrote, and whether it found its batch
    already written (a replay under exactly-once)."""

    partition: int
    records: int
    replayed: bool = False


@dataclass(frozen=True)
class TaskInfo:
    partition_id: int
    attempt: int
    batch: MarkedBatch | None  # a stream's task only: its batch and query


def task_info() -> TaskInfo:
    """This task, as Spark's TaskContext tells it."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # not inside a Spark task: a direct call, as the tests make
        return TaskInfo(0, 0, None)
    batch_id, query_id = context.getLocalProperty(BATCH_ID), context.getLocalProperty(QUERY_ID)
    batch = MarkedBatch(query_id, int(batch_id)) if batch_id is not None and query_id is not None else None
    return TaskInfo(context.partitionId(), context.attemptNumber(), batch)


def write_task(
    options: SinkOptions,
    columns: Columns,
    batches: Iterable,
    task: TaskInfo,
    streaming: bool,
    write_id: str | None = None,
) -> SinkCommitMessage:
    """Write one task's Arrow record batches; its commit message for the driver. `write_id`: a batch write's id,
    under which an exactly-once task marks what it wrote."""
    if streaming and options.guarantee == "exactly-once" and task.batch is None:
        raise KafkaSourceError(
            f"deliveryGuarantee=exactly-once: Spark did not tell stream task {task.partition_id} "
            f"its batch and query (the local properties {BATCH_ID} and {QUERY_ID}), without which "
            "it cannot mark what it wrote; this Spark is not one the sink supports"
        )
    first, rest = _peek(batches)
    if first is None:  # no rows: no producer, no transaction (a replay of an empty task is empty again)
        return SinkCommitMessage(task.partition_id, 0)
    prepared = batch = None
    if options.guarantee == "exactly-once":  # the producer is made ready while the rest of the input comes
        batch = task.batch if streaming else MarkedBatch(_batch_write_id(write_id), 0, stream=False)
        prepared = Prepared(options, task.partition_id)
        try:
            rest = _read_ahead(rest, prepared.done)
        except BaseException:
            prepared.cancel()
            raise
    # registry formats: an Arrow step before the producer, so it is handed binary key/value columns; Avro columns
    # are encoded natively on the native write path (writePath=python keeps every step in Python)
    encoded = encode_batches(iter(rest), options.encoding, options.topic, task.partition_id, options.native())
    columns = encoded_columns(columns, options.encoding)
    # the native producer reads the batches' columns itself; confluent-kafka's takes one record at a time
    records = ArrowRecords(encoded, columns)
    if batch is not None:
        outcome = write_transaction(options, task.partition_id, records, batch, prepared=prepared)
    else:
        outcome = Outcome(write_plain(options, records))
    _test_fault_after_write(task)
    log.debug(
        "partition %d (attempt %d)%s: %d records written%s",
        task.partition_id,
        task.attempt,
        f" of batch {task.batch.batch_id}" if task.batch else "",
        outcome.records,
        " (batch already written: replay skipped)" if outcome.replayed else "",
    )
    return SinkCommitMessage(task.partition_id, outcome.records, outcome.replayed)


def _batch_write_id(write_id: str | None) -> str:
    if write_id is None:
        raise KafkaSourceError("deliveryGuarantee=exactly-once: a batch write's task without the write's id")
    return write_id


def _test_fault_after_write(task: TaskInfo) -> None:
    """FAIL_AFTER_WRITE: see there."""
    folder = os.environ.get(FAIL_AFTER_WRITE)
    if folder and task.attempt == 0:
        Path(folder, str(task.partition_id)).touch()
        raise KafkaSourceError(f"{FAIL_AFTER_WRITE}: task {task.partition_id} fails after its write")


def encoded_columns(columns: Columns, encoding: Encoding | None) -> Columns:
    """The columns of the encoded batches: with a dead-letter topic each batch names every row's topic and carries
    headers (kafkasource.writing.dead_letters)."""
    if encoding is None or encoding.dead_letter_topic is None:
        return columns
    return Columns(topic=None, key=columns.key, headers=True, partition=columns.partition)


def _read_ahead(batches: Iterable, ready: Callable[[], bool]) -> Iterable:
    """The task's input, some of it taken from Spark already: as many batches as come while `ready()` is false (its
    producer is being made ready), up to READ_AHEAD_BYTES, so Spark goes on sending meanwhile."""
    iterator = iter(batches)
    taken: list = []
    size = 0
    while not ready() and size < READ_AHEAD_BYTES:
        batch = next(iterator, None)
        if batch is None:
            break
        taken.append(batch)
        size += batch.nbytes
    return itertools.chain(taken, iterator)


def _peek(batches: Iterable) -> tuple[object | None, Iterable]:
    """The first non-empty record batch and an iterable over it and the rest (None: the task has no rows)."""
    iterator = iter(batches)
    first = next((b for b in iterator if b.num_rows), None)
    return first, (iterator if first is None else itertools.chain([first], iterator))
