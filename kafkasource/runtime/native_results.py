"""The tuples kafkasource._native returns, named: the extension hands back plain tuples (cheap to build in Rust),
and these give their fields the names the callers unpack, in the order native/src declares them.

Each `of` turns the extension's tuple (nested ones too) into its named form; they are tuples still, so a field
read by name costs what one read by position does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from kafkasource import _native


class ErrorEvent(NamedTuple):
    """An error event librdkafka delivered among the records (Consumer.consume)."""

    row: int  # the appended row it came before
    topic: str | None
    partition: int
    code: int
    text: str


class Consumed(NamedTuple):
    """What one Consumer.consume call appended."""

    appended: int  # records appended to the columns
    last_offset: int  # the offset of the last one appended, -1 if none
    error_events: list[ErrorEvent]  # in the order they came among the records

    @classmethod
    def of(cls, raw: tuple[int, int, list[_native.ErrorEvent]]) -> Consumed:
        appended, last_offset, events = raw
        return cls(appended, last_offset, [ErrorEvent._make(event) for event in events])


class ClientError(NamedTuple):
    """An error librdkafka reported about the client rather than a partition (authentication, TLS, brokers down):
    the consumer's are (code, text), the producer's tell a fatal one too."""

    code: int
    text: str
    fatal: bool = False


class Refusal(NamedTuple):
    """A record Producer.produce_batch's produce call refused at once, which fails the write."""

    row: int  # of the task
    code: int
    text: str
    fatal: bool
    topic: str
    partition: int
    size: int  # key + value + header bytes


class Produced(NamedTuple):
    """How far one Producer.produce_batch call got."""

    resume_from: int  # the batch's next row, its length when every row was handed over
    skipped: int  # rows refused at once and skipped (strict=False)
    refusal: Refusal | None  # the refusal that stopped it

    @classmethod
    def of(cls, raw: tuple[int, int, _native.Refusal | None]) -> Produced:
        resume_from, skipped, refusal = raw
        return cls(resume_from, skipped, None if refusal is None else Refusal._make(refusal))


class FailedDelivery(NamedTuple):
    """The first record whose delivery failed, or that produce refused."""

    row: int  # of the task
    code: int
    name: str  # librdkafka's name of the error code
    text: str
    topic: str
    partition: int
    size: int  # key + value bytes


class DeliveryReports(NamedTuple):
    """What Producer.deliveries counted since the last reset."""

    delivered: int
    failed: int
    first_failure: FailedDelivery | None

    @classmethod
    def of(cls, raw: tuple[int, int, _native.Failure | None]) -> DeliveryReports:
        delivered, failed, first = raw
        return cls(delivered, failed, None if first is None else FailedDelivery._make(first))


class CallError(NamedTuple):
    """The args of KafkaCallError, a transactional call of the native producer that failed."""

    code: int
    name: str
    text: str
    fatal: bool
    retriable: bool
    txn_requires_abort: bool


class EncodedColumn(NamedTuple):
    """What encode_avro returns: the payloads as an Arrow binary column's buffers, and the rows that do not fit."""

    length: int
    payloads: _native.BinaryBuffers
    bad_rows: list[tuple[int, str | None]]  # (row, why; None where Python words it)
