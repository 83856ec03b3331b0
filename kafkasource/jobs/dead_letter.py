"""The ingest job's dead-letter topic: records whose value does not decode are produced there, as they were,
instead of into the sink's `_corrupt` column.

Each keeps its key, value and headers, and gains headers naming where it came from and why it was refused:
kafkasource.source.topic, kafkasource.source.partition, kafkasource.source.offset and kafkasource.error. The
routing is a step of the query itself (mapInArrow on the executors): a task produces its batch's bad records
and waits until the brokers acknowledged every one before it hands the good rows on, so they are in the
dead-letter topic before the batch completes, and so before the source commits its offsets. A crash before
that completion replays the batch: at least once into the dead-letter topic, never lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from kafkasource.cluster import settings as kafka_settings
from kafkasource.cluster.sign_in import provider as sign_in

SOURCE_TOPIC, SOURCE_PARTITION, SOURCE_OFFSET, ERROR = (
    "kafkasource.source.topic",
    "kafkasource.source.partition",
    "kafkasource.source.offset",
    "kafkasource.error",
)
FLUSH_TIMEOUT_S = 120
# the source's consumer settings a producer has no use for (librdkafka would warn about each)
CONSUMER_ONLY = {
    "group.id",
    "auto.offset.reset",
    "isolation.level",
    "enable.auto.commit",
    "session.timeout.ms",
    "fetch.wait.max.ms",
    "max.partition.fetch.bytes",
    "fetch.min.bytes",
    "fetch.max.bytes",
}


class DeadLetterError(RuntimeError):
    """Records bound for the dead-letter topic were not acknowledged: the batch fails and is retried."""


def producer_options(source_options: Mapping[str, str]) -> dict[str, str]:
    """The source's options a producer of the job takes: its kafka.* settings but the consumer's, and its token
    provider's (oauthProvider and its arguments). Secrets included: never print."""
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
