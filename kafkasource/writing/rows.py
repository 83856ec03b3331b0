"""Rows to Kafka records: the columns the sink reads, checked against the DataFrame's schema before any data moves
(Spark's built-in Kafka sink's rules, and its words where it has them), and each Arrow record batch turned into
the producer's arguments, one column at a time.

The built-in sink's rules: `value` is required; `key` is optional; both are string (written as UTF-8) or binary.
The `topic` option, when set, wins over a `topic` column (Spark's KafkaWriter makes the option a literal and never
looks at the column), else the column names each record's topic. `headers` is array<struct<key:string,
value:binary>> and `partition` int; a null partition (or none) lets the partitioner choose. Other columns are
ignored, as the built-in ignores them (Spark 4.2's sink has no `timestamp` column: a record's timestamp is the
time it is produced).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kafkasource.errors import ColumnError
from kafkasource.records.schema import HEADERS, HEADERS_ARROW_TYPE, HEADERS_DDL_TYPE, KEY, PARTITION, TOPIC, VALUE

UNASSIGNED = -1  # librdkafka's partition for "let the partitioner choose"
# the built-in sink's words for a null topic in the data (its error class KAFKA_NULL_TOPIC_IN_DATA)
NULL_TOPIC = (
    "The Kafka message data sent to the producer contains a null topic. Use the `topic` option for "
    "setting a default topic."
)

# topic, key, value, headers, partition: what Producer.produce takes for one record
Header = tuple[str, str | bytes | None]  # what Producer.produce takes; the sink gives bytes or None
Message = tuple[str, Any, Any, "list[Header] | None", int]


@dataclass(frozen=True)
class Columns:
    """Which of the sink's columns a write has, as checked on the driver; small and picklable."""

    topic: str | None  # the topic option: every record goes there, whatever a topic column says
    key: bool
    headers: bool
    partition: bool


def check_columns(schema, topic_option: str | None, formatted: tuple[str, ...] = ()) -> Columns:
    """The columns of `schema` (a pyspark StructType) the sink writes, or a ColumnError in the built-in's words.
    `formatted`: the key/value columns written in a registry format (valueFormat/keyFormat), whose type the writer
    schema decides (kafkasource.formats.encoding checks them)."""
    types = {f.name: f.dataType for f in schema.fields}  # exact names, as the built-in matches them
    if topic_option is None:
        if TOPIC not in types:
            raise ColumnError(
                "topic option required when no 'topic' attribute is present. Use the topic option for setting a topic."
            )
        _expect(TOPIC, types[TOPIC], ("string",), "CAST it to string")
    if VALUE not in types:
        raise ColumnError(
            f"Required attribute '{VALUE}' not found: the DataFrame needs a value column (string or "
            f"binary); its columns are {', '.join(types) or 'none'}"
        )
    if VALUE not in formatted:
        _expect(VALUE, types[VALUE], ("string", "binary"), "CAST it, or serialize it (to_json, to_avro)")
    if KEY in types and KEY not in formatted:
        _expect(KEY, types[KEY], ("string", "binary"), "CAST it, or serialize it (to_json, to_avro)")
    if HEADERS in types:
        _expect(
            HEADERS,
            types[HEADERS],
            (HEADERS_DDL_TYPE,),
            "build it as array(struct(name AS key, CAST(v AS binary) AS value), ...)",
        )
    if PARTITION in types:
        _expect(PARTITION, types[PARTITION], ("int",), "CAST it to int")
    return Columns(topic=topic_option, key=KEY in types, headers=HEADERS in types, partition=PARTITION in types)


def _expect(name: str, data_type, allowed: tuple[str, ...], how: str) -> None:
    # simpleString() is Spark's catalogString for these types; nullability never matters, as in the built-in
    shown = data_type.simpleString()
    if shown.lower() not in allowed:
        raise ColumnError(
            f"{name} attribute unsupported type {shown}. {name} must be a(n) {' or '.join(allowed)}: {how}"
        )


def messages(batch, columns: Columns) -> Iterator[Message]:
    """The records of one Arrow record batch, in row order. A whole column is converted at once (no Python object
    per row until the producer's call), and the checks that concern a column as a whole run before any row of it
    is handed on."""
    rows = batch.num_rows
    if columns.topic is not None:
        topics: Any = itertools.repeat(columns.topic, rows)
    else:
        column = batch.column(TOPIC)
        if column.null_count:
            raise ColumnError(NULL_TOPIC)
        topics = column.to_pylist()
    keys: Any = batch.column(KEY).to_pylist() if columns.key else itertools.repeat(None, rows)
    values = batch.column(VALUE).to_pylist()
    headers: Any = _headers(batch.column(HEADERS)) if columns.headers else itertools.repeat(None, rows)
    partitions: Any = _partitions(batch.column(PARTITION)) if columns.partition else itertools.repeat(UNASSIGNED, rows)
    return zip(topics, keys, values, headers, partitions, strict=True)


def _partitions(column) -> list[int]:
    _check_partitions(column)
    return [UNASSIGNED if p is None else p for p in column.to_pylist()]


def _check_partitions(column) -> None:
    import pyarrow.compute as pc

    lowest = pc.min(column).as_py()
    if lowest is not None and lowest < 0:
        # librdkafka reads -1 as "let the partitioner choose": a negative number must never pass silently
        raise ColumnError(
            f"the partition column holds {lowest}: a partition is a number from 0, or null to let the "
            "partitioner choose"
        )


NULL_HEADER_KEY = (
    "the headers column holds a header with a null key (or a null header): every header needs a key; filter "
    "them out or give them one"
)


def _headers(column) -> list[list[Header] | None]:
    out: list[list[Header] | None] = []
    for row in column.to_pylist():
        if not row:  # null or empty: a record without headers
            out.append(None)
            continue
        pairs = []
        for header in row:
            if header is None or header["key"] is None:
                raise ColumnError(NULL_HEADER_KEY)
            pairs.append((header["key"], header["value"]))
        out.append(pairs)
    return out


@dataclass(frozen=True)
class ArrowRecords:
    """A task's records as the Arrow record batches Spark hands over, for the native producer, which reads their
    columns itself. Iterating gives the records one by one as `messages` does (the Python path's form)."""

    batches: Iterable
    columns: Columns

    def __iter__(self) -> Iterator[Message]:
        return (m for batch in self.batches for m in messages(batch, self.columns))


def native_batch(batch, columns: Columns):
    """The sink's columns of one Arrow record batch in the layouts the native producer reads, after the checks
    `messages` makes (a null topic, a negative partition, a header without a key), in the same words. The columns
    are cast to 32-bit offsets and plain lists (large_binary, large_string, string_view, large_list arrive that
    way from some Arrow producers): the native producer reads that one layout."""
    import pyarrow as pa

    arrays, names = [], []

    def add(name: str, column, kind) -> None:
        arrays.append(column if column.type == kind else column.cast(kind))
        names.append(name)

    if columns.topic is None:
        topic = batch.column(TOPIC)
        if topic.null_count:
            raise ColumnError(NULL_TOPIC)
        add(TOPIC, topic, pa.string())
    if columns.key:
        key = batch.column(KEY)
        add(KEY, key, _plain_bytes(key.type))
    value = batch.column(VALUE)
    add(VALUE, value, _plain_bytes(value.type))
    if columns.headers:
        headers = batch.column(HEADERS)
        entries = headers.flatten()  # the entries of the batch's rows (a sliced column's own), null lists left out
        if entries.null_count or entries.field("key").null_count:
            raise ColumnError(NULL_HEADER_KEY)
        add(HEADERS, headers, HEADERS_ARROW_TYPE)
    if columns.partition:
        partition = batch.column(PARTITION)
        _check_partitions(partition)
        add(PARTITION, partition, pa.int32())
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _plain_bytes(kind):
    """string for a string type (written as its UTF-8 bytes either way), else binary."""
    import pyarrow as pa

    text = pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    return pa.string() if text else pa.binary()


def size_of(message: Message) -> int:
    """About how many bytes a record takes: its key, value and headers (for messages about a record too large)."""
    _topic, key, value, headers, _partition = message
    total = sum(len(part.encode() if isinstance(part, str) else part) for part in (key, value) if part is not None)
    return total + sum(len(k.encode()) + len(v or b"") for k, v in headers or ())
