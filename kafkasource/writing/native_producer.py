"""The native write path: a producer in compiled code (kafkasource._native, Rust over librdkafka) that hands the
rows of each Arrow record batch to librdkafka straight from the batch's columns, so a task is written without one
Python object per record.

setup.py builds the extension when a Rust toolchain is present; without it, or with writePath=python, the
confluent-kafka path (producer.send, a produce() call per record) writes instead. Both share everything but the
hot loop: NativeProducer makes the calls producer.py and transactions.py make on a confluent-kafka Producer, with
the same errors (confluent-kafka's KafkaException and KafkaError, whose codes are librdkafka's in both), and its
delivery reports, which the extension counts, end up in the same Deliveries; producer.send_batches is its loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.records.schema import HEADERS_ARROW_TYPE
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_results import CallError, ClientError, DeliveryReports, Produced
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.rows import Columns, Message

if TYPE_CHECKING:
    from kafkasource import _native

log = logging.getLogger(__name__)

MESSAGE_BATCH_ROWS = 10_000  # records of a plain message iterable put in one Arrow batch (see message_batches)
MESSAGE_COLUMNS = Columns(topic=None, key=True, headers=True, partition=True)  # the batches message_batches makes

WITHOUT_EXTENSION = ": set writePath to auto or python"  # what to do where the extension is missing


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000), 0)


class NativeProducer:
    """The calls the sink makes on a confluent-kafka Producer, over the native producer. Serving the producer
    (poll, flush, the produce loop) fills `deliveries` as confluent-kafka's callbacks would: failed records, the
    first failure, a refusal by the brokers; a fatal error of the producer is raised once, from the call that
    served it, as confluent-kafka raises it."""

    def __init__(self, config: dict[str, object], deliveries: Deliveries):
        extension = native_extension.extension(WITHOUT_EXTENSION)
        native_extension.announce("writing", log)
        self.native: _native.Producer = extension.Producer(*native_extension.client_arguments(sign_in.ready(config)))
        self.deliveries = deliveries

    def produce_batch(self, batch, topic: str | None, start: int, first_row: int, strict: bool) -> Produced:
        """Rows `start..` of an Arrow record batch (native_batch's columns); see the extension's produce_batch."""
        return Produced.of(self.native.produce_batch(batch.__arrow_c_array__(), topic, start, first_row, strict))

    def poll(self, timeout: float = 0) -> int:
        served = self.native.poll(_ms(timeout))
        self._take_reports()
        return served

    def flush(self, timeout: float = -1) -> int:
        left = self.native.flush(_ms(timeout) if timeout >= 0 else -1)
        self._take_reports()
        return left

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        self.native.purge()  # queued and in flight, without blocking: all the sink ever purges

    def __len__(self) -> int:
        return len(self.native)

    def close(self) -> None:
        self.native.close()

    def learn_brokers(self, timeout: float) -> bool:
        """A metadata request for the brokers alone, answered within `timeout` (True) or not; see
        transactional_pool.learn_brokers."""
        return self.native.learn_brokers(_ms(timeout))

    def init_transactions(self, timeout: float) -> None:
        self._call(self.native.init_transactions, _ms(timeout))

    def begin_transaction(self) -> None:
        self._call(self.native.begin_transaction)

    def send_marker(
        self, topic: str, partition: int, offset: int, metadata: str | None, group_id: str, timeout: float
    ) -> None:
        """send_offsets_to_transaction for group `group_id`, which needs no consumer of the group."""
        self._call(self.native.send_offsets_to_transaction, topic, partition, offset, metadata, group_id, _ms(timeout))

    def commit_transaction(self, timeout: float) -> None:
        self._call(self.native.commit_transaction, _ms(timeout))

    def abort_transaction(self, timeout: float) -> None:
        self._call(self.native.abort_transaction, _ms(timeout))

    def _call(self, method: Callable[..., None], *args: object) -> None:
        """A transactional call, its failure raised as confluent-kafka raises it. A commit flushes, which serves
        the delivery reports: they are taken into `deliveries` whatever the call's outcome, so a failed commit
        is told by the record that failed (transactions._transaction_error), as on the Python path."""
        try:
            method(*args)
        except native_extension.extension().KafkaCallError as exc:
            failed = CallError._make(exc.args)
            error = KafkaError(
                failed.code,
                failed.text,
                fatal=failed.fatal,
                retriable=failed.retriable,
                txn_requires_abort=failed.txn_requires_abort,
            )
            raise KafkaException(error) from None
        finally:
            self._take_reports(raise_fatal=False)  # the call's own error tells a fatal one

    def _take_reports(self, raise_fatal: bool = True) -> None:
        """What the callbacks kept since the last call, into `deliveries`; a fatal error raised."""
        fatal = None
        for reported in (ClientError(*error) for error in self.native.client_errors()):
            error = KafkaError(reported.code, reported.text, fatal=reported.fatal)
            self.deliveries.on_error(error)
            if reported.fatal and fatal is None:
                fatal = error
        reports = DeliveryReports.of(self.native.deliveries(reset=True))
        self.deliveries.failed += reports.failed
        first = reports.first_failure
        if first is not None and self.deliveries.first is None:
            self.deliveries.first = (KafkaError(first.code, first.text), first.topic, first.partition, first.size)
            self.deliveries.position = first.row
        if fatal is not None and raise_fatal:
            raise KafkaException(fatal)


def message_batches(messages: Iterable[Message]) -> Iterator[tuple[object, Columns]]:
    """Records as producer.send takes them (topic, key, value, headers, partition), as Arrow batches of every
    sink column: for callers that hold records rather than Spark's batches."""
    import pyarrow as pa

    columns = MESSAGE_COLUMNS
    header = HEADERS_ARROW_TYPE
    chunk: list[Message] = []
    iterator = iter(messages)
    while True:
        chunk.clear()
        for message in iterator:
            chunk.append(message)
            if len(chunk) >= MESSAGE_BATCH_ROWS:
                break
        if not chunk:
            return
        topics, keys, values, headers, partitions = zip(*chunk, strict=True)
        yield (
            pa.RecordBatch.from_arrays(
                [
                    pa.array(topics, pa.string()),
                    pa.array([_bytes(k) for k in keys], pa.binary()),
                    pa.array([_bytes(v) for v in values], pa.binary()),
                    pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in headers], header),
                    pa.array([None if p is None or p < 0 else p for p in partitions], pa.int32()),
                ],
                names=["topic", "key", "value", "headers", "partition"],
            ),
            columns,
        )


def _bytes(part: str | bytes | None) -> bytes | None:
    return part.encode() if isinstance(part, str) else part
