"""Executor side: the consumers that read, their configuration and their pool.

Consumers are pooled per Python worker process (Spark reuses Python workers across micro-batches), keyed by
their configuration, closed when idle for a while or after any failure. They only assign() partitions: they
never join a group and never commit. A task of one range is read by the native consumer (native.py) where the
extension is built, else by confluent-kafka's, whose Message objects python_rows.MessageRows turns into Arrow
batches; a task of several packed ranges always by confluent-kafka's. task_reader.TaskReader drives either.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError

from kafkasource.cluster.settings import NEVER_COMMITTING_GROUP_ID
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import KafkaSourceError
from kafkasource.reading.native import NativeConsumer
from kafkasource.runtime import native_extension
from kafkasource.runtime.pooling import ClientPool

log = logging.getLogger(__name__)

# Executor consumers read ranges whose records exist, in bulk (what each default measured: bench/TUNING.md);
# users override any of them with kafka.*
FETCH_DEFAULTS = {
    "max.partition.fetch.bytes": 8 * 1024 * 1024,  # librdkafka's 1 MiB a fetch starves a bulk read
    "fetch.queue.backoff.ms": 10,  # a full local queue must not idle the fetcher for librdkafka's second
    "fetch.wait.max.ms": 10,  # the records exist: the broker's long poll would only delay the first fetch
    # a pooled consumer must not still be backing off from an outage (up to 10 s) when its next task starts
    "reconnect.backoff.max.ms": 1000,
    # a fetch error (a leader that moved, metadata not yet caught up with a topic) must not hold a task's range for
    # librdkafka's 500 ms: a query's first triggers, reading with consumers pooled by an earlier query, took a
    # second each (bench/LATENCY.md)
    "fetch.error.backoff.ms": 20,
}


@dataclass(frozen=True)
class FetchConfig:
    """What an executor needs to read, small and picklable (no clients)."""

    kafka_config: dict[str, object] = field(repr=False)  # may hold secrets: never print
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    # the query's kafka.group.id: the consumer looks its coordinator up (librdkafka does so for any group.id, even
    # for a consumer that only assigns), which under ACLs needs DESCRIBE on the group; it never joins nor commits
    group_id: str | None = None
    read_path: str = "auto"  # readPath: auto (native when built), native, python

    def wants_native(self) -> bool:
        if self.read_path == "native" and not native_extension.available():
            raise KafkaSourceError(
                f"readPath is native, but kafkasource's native extension "
                f"{native_extension.why_unavailable().replace(' here', ' on this executor')}: install "
                "kafkasource where a Rust toolchain is present (pip install builds it), or set "
                "readPath to auto or python"
            )
        return native_extension.runs_native(self.read_path, "readPath", "reading")

    def consumer_config(self) -> dict[str, object]:
        return {
            **FETCH_DEFAULTS,
            **self.kafka_config,
            "group.id": self.group_id or NEVER_COMMITTING_GROUP_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "error",
        }

    def pool_key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.consumer_config().items()))


class ReadConsumer(Consumer):
    """confluent-kafka's consumer, keeping the errors librdkafka reports about the client rather than a partition
    (authentication, the TLS handshake, brokers unreachable): it hands those only to error_cb, which consume()
    serves, never among the messages."""

    def __init__(self, config: dict[str, object]):
        _announce()
        self._client_errors: list[KafkaError] = []
        super().__init__(sign_in.ready({**config, "error_cb": self._client_errors.append}))

    def client_errors(self) -> list[KafkaError]:
        """The client-level errors reported since the last call, oldest first (as NativeConsumer.client_errors)."""
        errors = list(self._client_errors)
        self._client_errors.clear()
        return errors


_announced = False


def _announce() -> None:
    """One INFO line per process that reads with confluent-kafka: its version and where kafkasource was loaded
    from (an installed package, a --py-files zip, a packed environment), so a log shows what a node ran, as
    native.py's line does for the extension."""
    global _announced
    if not _announced:
        _announced = True
        import confluent_kafka

        # absolute: an executor's Python workers import a --py-files zip through a path relative to their
        # working directory ("./kafkasource.zip"), which a log read elsewhere would not place
        log.info(
            "reading with confluent-kafka %s (librdkafka %s); kafkasource loaded from %s",
            confluent_kafka.__version__,
            confluent_kafka.libversion()[0],
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )


def _close_quietly(consumer: Consumer | NativeConsumer) -> None:
    try:
        consumer.close()
    except Exception:  # a broken consumer may fail to close; it is dropped either way
        log.debug("closing a pooled consumer failed", exc_info=True)


MAX_IDLE_CONSUMERS = 16  # a worker's idle consumers, for the topics its tasks read last (see ConsumerPool)


class ConsumerPool(ClientPool[tuple, ReadConsumer | NativeConsumer]):
    """Idle consumers of this worker process, by configuration, kind (native or confluent-kafka) and the topic
    of the task they read. A consumer serves again only tasks of the same topic: at a trickle, consumers that
    had read another topic (an earlier query's, in the same session) held a query's triggers for up to a second
    each, where consumers of its own kept them at a few hundred milliseconds (bench/LATENCY.md). Tasks packed
    over several topics share consumers by configuration alone, since their topics change from batch to batch;
    so that a subscription of many topics does not keep a consumer per topic, MAX_IDLE_CONSUMERS is the most a
    worker keeps (the least recently used closed first)."""

    def __init__(self) -> None:
        super().__init__(close=_close_quietly, most_idle=MAX_IDLE_CONSUMERS)
        self._native_refused: set[tuple] = set()  # configurations the native consumer could not take

    def acquire(
        self, config: FetchConfig, native_ok: bool = True, topic: str | None = None
    ) -> ReadConsumer | NativeConsumer:
        """A consumer for `config` and a task of `topic` (None: of several topics): the native one when it is
        wanted and `native_ok` (its caller reads one range: the native consumer reads no more at once), else
        confluent-kafka's."""
        use_native = (
            native_ok
            and config.wants_native()
            and (config.read_path == "native" or config.pool_key() not in self._native_refused)
        )
        idle = self.take(self._key(config, use_native, topic))
        if idle is not None:
            return idle
        if use_native:
            try:
                return NativeConsumer(config.consumer_config())
            except ValueError as exc:
                # the extension's librdkafka is an older version than confluent-kafka's: read with
                # confluent-kafka's, unless the user asked for the native path
                if config.read_path == "native":
                    raise KafkaSourceError(
                        f"readPath is native, but the native consumer refused the configuration: "
                        f"{exc}. Set readPath to auto or python"
                    ) from None
                log.warning("the native consumer refused the configuration (%s); reading with confluent-kafka", exc)
                self._native_refused.add(config.pool_key())
        return ReadConsumer(config.consumer_config())

    @staticmethod
    def _key(config: FetchConfig, native: bool, topic: str | None) -> tuple:
        return (native, topic, *config.pool_key())

    def release(
        self,
        config: FetchConfig,
        consumer: ReadConsumer | NativeConsumer,
        healthy: bool,
        topic: str | None = None,
    ) -> None:
        if healthy:
            try:
                consumer.unassign()  # an idle consumer must not keep prefetching (and buffering) records
            except Exception:
                healthy = False
        self.give_back(self._key(config, isinstance(consumer, NativeConsumer), topic), consumer, healthy)


POOL = ConsumerPool()


def pooled(
    read: Callable[[ReadConsumer | NativeConsumer], Iterator],
    config: FetchConfig,
    pool: ConsumerPool,
    native_ok: bool = True,
    topic: str | None = None,
) -> Iterator:
    """Run `read` with a consumer from the pool; one that failed is closed rather than pooled."""
    consumer = pool.acquire(config, native_ok, topic)
    healthy = False
    try:
        yield from read(consumer)
        healthy = True
    finally:
        pool.release(config, consumer, healthy, topic)
