"""The delivery reports of the records one task handed to a producer, and the error they mean: shared by
confluent-kafka's producer (its callbacks fill them) and the native one (writing/native_producer.py copies what
the extension counted into them)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError

from kafkasource.cluster.refusal import is_refusal, refusal_error
from kafkasource.options.sink import SinkOptions
from kafkasource.writing.failures import ASK_REPLICAS, delivery_error, where
from kafkasource.writing.replicas import shortfall


@dataclass
class Deliveries:
    """The delivery reports of the records one task handed to a producer: how many failed, and the first failure
    (what its message tells); and a refusal by the brokers (authentication, TLS), which no record report carries."""

    failed: int = 0
    first: tuple[KafkaError, str | None, int | None, int | None] | None = None  # error, topic, partition, size
    refusal: KafkaError | None = None
    position: int | None = None  # the first failure's row in the task, where the producer tells it (native)

    def report(self, error: KafkaError | None, message) -> None:
        """librdkafka's delivery report callback, run by poll() and flush() in the thread that calls them."""
        if error is None:
            return
        self.failed += 1
        if self.first is None:
            size = len(message.value() or b"") + len(message.key() or b"")
            self.first = (error, message.topic(), message.partition(), size)

    def on_error(self, error: KafkaError) -> None:
        """librdkafka's error callback: client-wide errors. Only a refusal fails a write at once; brokers that are
        down are retried until the delivery timeout, whose reports then tell."""
        if is_refusal(error):
            self.refusal = error

    def reset(self) -> None:
        self.failed, self.first, self.refusal, self.position = 0, None, None, None

    def error(self, options: SinkOptions, transactional_id: str | None = None) -> Exception | None:
        """The error these reports mean, or None when none failed."""
        if self.refusal is not None:
            return refusal_error(f"write to {where(options.topic, None)}", self.refusal, options.producer_config())
        if self.first is None:
            return None
        error, topic, partition, size = self.first
        # librdkafka retries NOT_ENOUGH_REPLICAS until the delivery timeout, whose report no longer says why: the
        # cluster is asked once
        short = shortfall(options, topic, partition) if topic is not None and error.code() in ASK_REPLICAS else None
        return delivery_error(
            error,
            options,
            topic,
            partition,
            size=size,
            failed=self.failed,
            transactional_id=transactional_id,
            record=self.position,
            short=short,
        )
