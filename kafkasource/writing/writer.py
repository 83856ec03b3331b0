"""The writers Spark calls: a batch write's (df.write) and a stream's (df.writeStream), both fed Arrow record
batches. Spark builds them on the driver, where the options and the DataFrame's columns are checked before any
data moves, and ships them to every task.

Spark refuses a Python data source's batch write in its default save mode, ErrorIfExists (and in Ignore), before
any of this code runs: UNSUPPORTED_DATA_SOURCE_SAVE_MODE. Append is the mode that means what the built-in Kafka
sink does; Overwrite reaches the writer and is refused here, as the built-in refuses it: a topic is only ever
appended to. A stream in complete output mode asks to overwrite as well; like the built-in, the sink then writes
every row of each result.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from kafkasource.errors import ContinuousTriggerError, OptionError
from kafkasource.formats.encoding import Encoding
from kafkasource.options.formats import parse_encoding
from kafkasource.runtime.spark_api import DataSourceStreamArrowWriter  # pyspark 4.0 has none: a stand-in
from kafkasource.writing.options import SinkOptions, parse_sink_options
from kafkasource.writing.rows import Columns, check_columns
from kafkasource.writing.task import (
    CONTINUOUS_REFUSED,
    SinkCommitMessage,
    task_info,
    write_task,
)

log = logging.getLogger(__name__)

OVERWRITE_REFUSED = (
    "Save mode Overwrite not allowed for kafkasource: records are only ever appended to a Kafka "
    'topic. Use .mode("append"), which writes what the built-in Kafka sink writes in its default '
    "mode (Spark refuses ErrorIfExists, its default, for every Python data source)"
)


def batch_writer(raw_options: Mapping[str, str], schema, overwrite: bool) -> KafkaBatchWriter:
    if overwrite:
        raise OptionError(OVERWRITE_REFUSED)
    options = _signed_in(parse_sink_options(raw_options, streaming=False))
    return KafkaBatchWriter(options, *_columns(raw_options, schema, options))


def stream_writer(raw_options: Mapping[str, str], schema) -> KafkaStreamWriter:
    options = _signed_in(parse_sink_options(raw_options, streaming=True))
    return KafkaStreamWriter(options, *_columns(raw_options, schema, options))


def _signed_in(options: SinkOptions) -> SinkOptions:
    """`options`, once their token provider (oauthProvider) made a token here on the driver: a provider that fails
    fails the write before any task starts, with its own reason, rather than in every task."""
    if options.token_provider is not None:
        options.token_provider.token()
    return options


def _columns(raw_options: Mapping[str, str], schema, options: SinkOptions) -> tuple[Columns, Encoding | None]:
    """The columns the sink writes, and the registry formats' encoding (None without valueFormat/keyFormat), its
    writer schemas fetched and the columns checked against them."""
    encoding = parse_encoding(raw_options, schema, options.topic)
    columns = check_columns(schema, options.topic, encoding.formatted if encoding else ())
    return columns, encoding


def _summary(messages: list[WriterCommitMessage | None]) -> str:
    ours = [m for m in messages if isinstance(m, SinkCommitMessage)]
    replayed = sum(1 for m in ours if m.replayed)
    return f"{sum(m.records for m in ours):,} records from {len(ours)} tasks" + (
        f" ({replayed} found their part already written)" if replayed else ""
    )


class KafkaBatchWriter(DataSourceArrowWriter):
    """df.write.format("kafkasource"): each task writes its rows; nothing is left for the driver to commit.

    Spark makes the writer on the driver once per save() and ships it to every task, so the id made here names this
    one write in each task: an exactly-once task marks what it wrote under it, and a retried attempt of a task whose
    transaction committed finds its part written (a second save() is a new write, and writes again)."""

    def __init__(self, options: SinkOptions, columns: Columns, encoding: Encoding | None = None):
        self._options = options
        self._columns = columns
        self._encoding = encoding
        self._write_id = f"write-{uuid.uuid4()}"

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return write_task(
            self._options,
            self._columns,
            iterator,
            task_info(),
            streaming=False,
            encoding=self._encoding,
            write_id=self._write_id,
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("batch write: %s", _summary(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # every task ended its own write: what finished tasks wrote stays (committed, under exactly-once)
        log.warning("batch write failed; tasks that finished wrote %s, which stay in Kafka", _summary(messages))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """df.writeStream.format("kafkasource"): each task writes its part of a micro-batch."""

    def __init__(self, options: SinkOptions, columns: Columns, encoding: Encoding | None = None):
        self._options = options
        self._columns = columns
        self._encoding = encoding

    def write(self, iterator: Iterator) -> SinkCommitMessage:
        return write_task(self._options, self._columns, iterator, task_info(), streaming=True, encoding=self._encoding)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        # a micro-batch is committed only once every task returned its message: a commit without them is a
        # continuous query's epoch, whose rows Spark never handed to this sink (see task.CONTINUOUS_REFUSED)
        if any(not isinstance(m, SinkCommitMessage) for m in messages):
            log.error("epoch %d: %s", batchId, CONTINUOUS_REFUSED)
            raise ContinuousTriggerError(CONTINUOUS_REFUSED)
        log.info("batch %d: %s", batchId, _summary(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("batch %d failed; tasks that finished wrote %s, which stay in Kafka", batchId, _summary(messages))
