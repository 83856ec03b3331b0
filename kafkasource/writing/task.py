"""One Spark task of a write, on an executor: what Spark says about the task (its partition, and for a stream its
batch and query), and its rows written under the sink's delivery guarantee.

A task of a stream learns its batch and query from the local properties Spark sets on it
(streaming.sql.batchId, sql.streaming.queryId). Under Trigger.Continuous Spark hands a Python sink's task an input
that never ends, and a batch id nowhere: no task would ever flush, deliver or commit what it was given, so the sink
refuses to run there at all.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from typing import Iterable, Iterator

from pyspark.sql.datasource import WriterCommitMessage

from kafkasource.errors import KafkaSourceError
from kafkasource.writing.options import SinkOptions
from kafkasource.writing.producer import write_plain
from kafkasource.writing.rows import Columns, Message, messages
from kafkasource.writing.transactions import Outcome, StreamBatch, write_transaction

log = logging.getLogger(__name__)

BATCH_ID = "streaming.sql.batchId"
QUERY_ID = "sql.streaming.queryId"
CONTINUOUS_EPOCH_COORDINATOR = "__epoch_coordinator_id"  # set on the tasks of a continuous query only


class ContinuousTriggerError(KafkaSourceError):
    """The sink was started with Trigger.Continuous, under which no delivery guarantee can hold."""


CONTINUOUS_REFUSED = ("kafkasource's sink does not run under Trigger.Continuous: Spark hands a Python sink's task an "
                      "input that never ends and no batch, so no record could ever be flushed, confirmed or committed "
                      "under any deliveryGuarantee. Use a micro-batch trigger (processingTime, availableNow, once)")


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
    batch: StreamBatch | None  # a stream's task only


def task_info(streaming: bool) -> TaskInfo:
    """This task, as Spark's TaskContext tells it."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # not inside a Spark task: a direct call, as the tests make
        return TaskInfo(0, 0, None)
    if context.getLocalProperty(CONTINUOUS_EPOCH_COORDINATOR) is not None:
        raise ContinuousTriggerError(CONTINUOUS_REFUSED)
    batch = None
    if streaming:
        batch_id, query_id = context.getLocalProperty(BATCH_ID), context.getLocalProperty(QUERY_ID)
        if batch_id is None or query_id is None:
            raise ContinuousTriggerError(CONTINUOUS_REFUSED)
        batch = StreamBatch(query_id, int(batch_id))
    return TaskInfo(context.partitionId(), context.attemptNumber(), batch)


def write_task(options: SinkOptions, columns: Columns, batches: Iterable, task: TaskInfo) -> SinkCommitMessage:
    """Write one task's Arrow record batches; its commit message for the driver."""
    first, rest = _peek(batches)
    if first is None:  # no rows: no producer, no transaction (a replay of an empty task is empty again)
        return SinkCommitMessage(task.partition_id, 0)
    records: Iterator[Message] = (m for batch in rest for m in messages(batch, columns))
    if options.guarantee == "exactly-once":
        outcome = write_transaction(options, task.partition_id, records, task.batch)
    else:
        outcome = Outcome(write_plain(options, records))
    log.debug("partition %d (attempt %d)%s: %d records written%s", task.partition_id, task.attempt,
              f" of batch {task.batch.batch_id}" if task.batch else "", outcome.records,
              " (batch already written: replay skipped)" if outcome.replayed else "")
    return SinkCommitMessage(task.partition_id, outcome.records, outcome.replayed)


def _peek(batches: Iterable) -> tuple[object | None, Iterable]:
    """The first non-empty record batch and an iterable over it and the rest (None: the task has no rows)."""
    iterator = iter(batches)
    first = next((b for b in iterator if b.num_rows), None)
    return first, (iterator if first is None else itertools.chain([first], iterator))
