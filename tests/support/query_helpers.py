"""Building kafkasource reads and running queries to the point a test needs, on a classic or a Connect session.

Rows come back as plain tuples sorted by (topic, partition, offset), so a test compares every column of
every row with what the broker acknowledged.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pytest
from pyspark.errors import StreamingQueryException

from tests.support.kafka_helpers import KafkaHarness, Record, await_condition

QUERY_TIMEOUT_S = 120  # an AvailableNow query over a handful of records takes a few seconds
AWAIT_TIMEOUT_S = 60  # bounded wait for a processing-time query to show a condition in its sink
CREATE_TIME, LOG_APPEND_TIME = 0, 1  # Spark's timestampType values

Row = tuple  # (topic, partition, offset, key, value, timestamp_ms, timestampType[, headers])


# -- building reads -----------------------------------------------------------------------------------

def reader(session, options: Mapping[str, object], streaming: bool = True):
    """format("kafkasource") with every option (values as text), not loaded yet."""
    built = (session.readStream if streaming else session.read).format("kafkasource")
    for name, value in options.items():
        built = built.option(name, str(value))
    return built


def stream(session, options: Mapping[str, object]):
    """A streaming DataFrame of kafkasource."""
    return reader(session, options).load()


def batch(session, options: Mapping[str, object]):
    """A batch DataFrame of kafkasource."""
    return reader(session, options, streaming=False).load()


def base_options(kafka: KafkaHarness, **options: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": kafka.bootstrap_servers, **options}


# -- rows -----------------------------------------------------------------------------------------------

def expected(records: list[Record], headers: bool = False, timestamp_type: int = CREATE_TIME) -> list[Row]:
    """The rows the source must return for records the broker acknowledged, sorted like Collector.rows."""
    rows = []
    for r in records:
        row = (r.topic, r.partition, r.offset, r.key, r.value, r.timestamp_ms, timestamp_type)
        if headers:  # a record without headers has a null headers column, as in the built-in source
            row += (tuple(r.headers) if r.headers else None,)
        rows.append(row)
    return sorted(rows, key=lambda row: row[:3])


def _binary(value) -> bytes | None:
    return None if value is None else bytes(value)


def rows_of(df, headers: bool = False) -> list[Row]:
    """Every row of a DataFrame in the source's schema, as plain tuples sorted by (topic, partition, offset)."""
    columns = ["topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ts", "timestampType"]
    if headers:
        columns.append("headers")
    out = []
    for r in df.selectExpr(*columns).collect():
        row = (r["topic"], r["partition"], r["offset"], _binary(r["key"]), _binary(r["value"]), r["ts"],
               r["timestampType"])
        if headers:
            row += (None if r["headers"] is None else tuple((h["key"], _binary(h["value"])) for h in r["headers"]),)
        out.append(row)
    return sorted(out, key=lambda row: row[:3])


def positions(rows: list[Row]) -> list[tuple[int, int]]:
    """(partition, offset) of each row."""
    return [(row[1], row[2]) for row in rows]


class Collector:
    """A foreachBatch sink keeping the rows of every batch that brought any (runs in this process, on Spark's
    callback thread).

    With hold=True the first batch that brings rows blocks until `release()`: the query is then known to
    be between two triggers, so a test can change the cluster before the next one plans (no race).
    """

    def __init__(self, headers: bool = False, hold: bool = False):
        self.headers = headers
        self._lock = threading.Lock()
        self._batches: list[list[Row]] = []
        self._hold = hold
        self.holding = threading.Event()
        self._released = threading.Event()

    def __call__(self, batch_df, batch_id: int) -> None:
        rows = rows_of(batch_df, self.headers)
        if rows:
            with self._lock:
                self._batches.append(rows)
        if rows and self._hold:
            self._hold = False
            self.holding.set()
            self._released.wait(AWAIT_TIMEOUT_S)

    def release(self) -> None:
        self._released.set()

    @property
    def batches(self) -> list[list[Row]]:
        """The rows of each batch that brought rows, in the order the batches ran."""
        with self._lock:
            return list(self._batches)

    @property
    def rows(self) -> list[Row]:
        return sorted((row for batch_rows in self.batches for row in batch_rows), key=lambda row: row[:3])


# -- running queries --------------------------------------------------------------------------------------

def start_query(spark, checkpoint, options: Mapping[str, object], collector: Collector, interval: str | None = None):
    """Start a query into `collector`: Trigger.AvailableNow, or processing time every `interval`."""
    writer = (stream(spark, options).writeStream.foreachBatch(collector)
              .option("checkpointLocation", str(checkpoint)))
    writer = writer.trigger(processingTime=interval) if interval else writer.trigger(availableNow=True)
    return writer.start()


def run_to_end(spark, checkpoint, options: Mapping[str, object], timeout: float = QUERY_TIMEOUT_S):
    """Run one Trigger.AvailableNow query into a Collector to its end, failing the test if the query fails;
    returns (the ended query, the collector)."""
    collector = Collector(headers=options.get("includeHeaders") == "true")
    query = start_query(spark, checkpoint, options, collector)
    try:
        assert query.awaitTermination(timeout), f"AvailableNow query did not finish in {timeout} s"
        assert query.exception() is None
    finally:
        query.stop()
    return query, collector


def run_available_now(spark, checkpoint, options: Mapping[str, object],
                      timeout: float = QUERY_TIMEOUT_S) -> list[Row]:
    """Run one Trigger.AvailableNow query to its end; return every row it produced (sorted)."""
    return run_to_end(spark, checkpoint, options, timeout)[1].rows


def available_now_failure(spark, checkpoint, options: Mapping[str, object], timeout: float = QUERY_TIMEOUT_S) -> str:
    """Run an AvailableNow query that must fail; return the text of the error the user sees."""
    query = start_query(spark, checkpoint, options, Collector())
    try:
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(timeout)
        return str(raised.value)
    finally:
        query.stop()


@contextmanager
def running_stream(spark, checkpoint, options: Mapping[str, object], collector: Collector,
                   interval: str = "500 milliseconds") -> Iterator:
    """A processing-time query into `collector`, stopped on exit; yields the query."""
    query = start_query(spark, checkpoint, options, collector, interval)
    try:
        yield query
    finally:
        collector.release()  # never leave Spark's callback blocked
        query.stop()


def await_rows(collector: Collector, count: int, query) -> list[Row]:
    """Wait until the collector holds at least `count` rows; return them all."""
    return await_condition(f"{count} rows", lambda: len(collector.rows) >= count and collector.rows, query)


def source_offsets(query) -> list[tuple[dict, dict]]:
    """(startOffset, endOffset) of the source in every batch the query reported, oldest first."""
    out = []
    for progress in query.recentProgress:
        source = progress.sources[0]
        if source.endOffset:
            out.append((json.loads(source.startOffset) if source.startOffset else {}, json.loads(source.endOffset)))
    return out
