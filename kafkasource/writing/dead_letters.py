"""Dead letters: records kafkasource could not write or read as asked, produced to a dead-letter topic of the
user's instead, with headers saying why. The header names are defined here alone.

The sink (deadLetterTopic, with valueFormat/keyFormat): a row whose key or value does not fit its writer schema goes
to the dead-letter topic in the same batch as the rows that fit (so through the same producer, and under
exactly-once in the same transaction): its formatted columns as JSON text, close to Spark's to_json, its headers
gaining kafkasource.column and kafkasource.error for each column that does not fit and kafkasource.topic (the topic
it was bound for), its partition left to the partitioner.

The ingest job ([decode] dead_letter_topic): records whose value does not decode are produced there, as they were,
instead of into the sink's `_corrupt` column. Each keeps its key, value and headers, and gains headers naming where
it came from and why it was refused: kafkasource.source.topic, kafkasource.source.partition,
kafkasource.source.offset and kafkasource.error. The routing is a step of the query itself (mapInArrow on the
executors): a task produces its batch's bad records and waits until the brokers acknowledged every one before it
hands the good rows on, so they are in the dead-letter topic before the batch completes, and so before the source
commits its offsets. A crash before that completion replays the batch: at least once into the dead-letter topic,
never lost.
"""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from kafkasource.cluster import settings as kafka_settings
from kafkasource.cluster.known_settings import CONSUMER_ONLY
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.records.schema import HEADERS_ARROW_TYPE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# why a record is a dead letter: on both paths
ERROR = "kafkasource.error"
# the sink's: which column did not fit its writer schema, and the topic the row was bound for
COLUMN, TOPIC = "kafkasource.column", "kafkasource.topic"
# the ingest job's: where the record that did not decode was read from
SOURCE_TOPIC, SOURCE_PARTITION, SOURCE_OFFSET = (
    "kafkasource.source.topic",
    "kafkasource.source.partition",
    "kafkasource.source.offset",
)

# ---- the ingest job's dead letters, produced by a producer of their own ---------------------------------------

FLUSH_TIMEOUT_S = 120


class DeadLetterError(RuntimeError):
    """Records bound for the dead-letter topic were not acknowledged: the batch fails and is retried."""


def producer_options(source_options: Mapping[str, str]) -> dict[str, str]:
    """The source's options a producer of the job takes: its kafka.* settings but those only a consumer has (librdkafka
    would warn of each), and its token provider's (oauthProvider and its arguments). Secrets included: never print."""
    return {
        name: value
        for name, value in source_options.items()
        if (name.startswith("kafka.") and name[len("kafka.") :] not in CONSUMER_ONLY)
        or name.lower() == sign_in.OPTION.lower()
        or name.lower().startswith(sign_in.PREFIX)
    }


def producer_config(source_options: Mapping[str, str]) -> dict[str, object]:
    """`producer_options` as librdkafka's configuration, signed in as the source is (secrets included: never
    print)."""
    options = {name.lower(): value for name, value in producer_options(source_options).items()}
    bootstrap = options["kafka.bootstrap.servers"]
    signed = sign_in.callback_setting(sign_in.read_token_provider(options, bootstrap))
    return {**kafka_settings.kafka_config(options), "bootstrap.servers": bootstrap, **signed}


def route_dead_letters(kafka_rows: DataFrame, topic: str, config: Mapping[str, object]) -> DataFrame:
    """`kafka_rows` (read with onDecodeError=keep and includeHeaders) without the records whose value did not
    decode; those are produced to `topic` first."""
    config = dict(config)

    def route(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        sender = None
        for batch in batches:
            bad = pc.is_valid(batch.column("value_error"))
            if pc.any(bad).as_py():
                sender = sender or _Sender(topic, config)
                sender.send(batch.filter(bad))
                yield batch.filter(pc.invert(bad))
            else:
                yield batch

    return kafka_rows.mapInArrow(route, kafka_rows.schema)


class _Sender:
    def __init__(self, topic: str, config: dict[str, object]):
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer(sign_in.ready({**config, "enable.idempotence": True}))
        self.failures: list[str] = []

    def send(self, bad: pa.RecordBatch) -> None:
        """Produce each bad record and wait for every acknowledgement; DeadLetterError if any failed."""
        for row in bad.to_pylist():
            headers = [(h["key"], h["value"]) for h in row.get("headers") or ()] + [
                (SOURCE_TOPIC, row["topic"].encode()),
                (SOURCE_PARTITION, str(row["partition"]).encode()),
                (SOURCE_OFFSET, str(row["offset"]).encode()),
                (ERROR, row["value_error"].encode()),
            ]
            self.producer.produce(
                self.topic, key=row["key"], value=row["value_raw"], headers=headers, on_delivery=self._delivered
            )
            self.producer.poll(0)
        left = self.producer.flush(FLUSH_TIMEOUT_S)
        if left or self.failures:
            raise DeadLetterError(
                f"the dead-letter topic {self.topic} did not take {left + len(self.failures)} "
                f"record(s) within {FLUSH_TIMEOUT_S} s: "
                f"{'; '.join(self.failures[:3]) or 'no acknowledgement'}"
            )

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.failures.append(str(error))


# ---- the sink's dead letters, rows of a batch ----------------------------------------------------------------


def dead_letter_rows(
    batch: pa.RecordBatch,
    arrays: dict[str, pa.Array],
    bad: Mapping[int, list[tuple[str, str]]],
    dead_letter_topic: str,
    formatted: tuple[str, ...],
    topic: str | None,
) -> None:
    """Rows that do not fit go to the dead-letter topic: in `arrays` (the batch's columns, `formatted` ones encoded),
    the topic column names it, their formatted columns hold JSON text, their headers gain the column and the
    reason, their partition is the partitioner's choice. `bad`: (column, reason) by row; `topic`: the topic option."""
    rows = batch.num_rows
    if not bad:  # one layout for every batch: a topic and a headers column
        if topic is not None or "topic" not in arrays:
            arrays["topic"] = pa.array([topic] * rows, pa.string())
        if "headers" not in arrays:
            arrays["headers"] = pa.nulls(rows, HEADERS_ARROW_TYPE)
        return
    topics = [topic] * rows if topic is not None else batch.column("topic").to_pylist()
    headers = batch.column("headers").to_pylist() if "headers" in batch.schema.names else [None] * rows
    for row, reasons in bad.items():
        added = [
            pair
            for column, reason in reasons
            for pair in ({"key": COLUMN, "value": column.encode()}, {"key": ERROR, "value": reason.encode()})
        ]
        headers[row] = [*(headers[row] or []), *added, {"key": TOPIC, "value": str(topics[row]).encode()}]
        topics[row] = dead_letter_topic
    for column in formatted:
        payloads = arrays[column].to_pylist()
        values = batch.column(column)
        for row in bad:
            value = values[row].as_py()
            payloads[row] = None if value is None else json_text(value).encode()
        arrays[column] = pa.array(payloads, pa.binary())
    if "partition" in arrays:
        partitions = arrays["partition"].to_pylist()
        for row in bad:
            partitions[row] = None
        arrays["partition"] = pa.array(partitions, pa.int32())
    arrays["topic"] = pa.array(topics, pa.string())
    arrays["headers"] = pa.array(headers, HEADERS_ARROW_TYPE)


# ---- the JSON text of a dead-lettered value, as to_json writes it ------------------------------------------


def json_text(value) -> str:
    """`value` (pyarrow's to_pylist form of a struct, array or scalar) as JSON text, close to Spark's to_json:
    null struct fields left out, maps as objects, binary as base64, dates and timestamps in ISO 8601, decimals
    as (double) numbers."""
    return json.dumps(_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map, as pyarrow gives it
            return {str(k): _jsonable(v) for k, v in value}
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value
