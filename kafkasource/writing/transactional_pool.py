"""The transactional producers a Python worker keeps between exactly-once tasks (writing/transactions.py writes with
them), one per transactional.id, each with the consumer that reads its marker.

A producer's init_transactions() and its connections to the brokers and the transaction coordinator cost more than
a small batch's whole transaction (0.3 to 0.7 s on one local broker), so a stream's task takes the producer an
earlier task of the same Spark partition left in this worker. Spark gives a partition's next task to whichever
worker is free, though: when another worker (or another attempt) initialised the same transactional.id meanwhile,
the kept producer is fenced. write_transaction finds that out when it sends the batch's marker, before it takes a
record, and replaces it (replace_producer).

Spark moves a stream's sink between Python workers at every batch, so a worker whose producer of an id was fenced
once keeps a spare one for it, made when a task ends. The spare asks for the brokers at once, on a thread of its
own: librdkafka drops its bootstrap connection once it has the brokers' metadata and opens the broker's own only
when a request needs it, so an idle new producer asked later waits for that connection again (50 to 80 ms on a
local broker). A replacement is then init_transactions() and a marker read on open connections.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException

from kafkasource.options.sink import SinkOptions
from kafkasource.runtime.pooling import ClientPool
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.markers import Marker, marker_consumer
from kafkasource.writing.native_producer import NativeProducer
from kafkasource.writing.producer import SinkProducer, close, make_producer, producer_kind

LEARN_BROKERS_S = 1.0  # a new transactional producer's first metadata request waits this long at most
# kept producers per worker: one per partition its tasks wrote, of every sink; the least recently used goes first
MAX_IDLE_TRANSACTIONAL = 64


@dataclass
class Transactional:
    """A transactional producer a worker keeps between tasks, with the consumer that reads its marker and names the
    marker's group to the transaction."""

    producer: SinkProducer
    deliveries: Deliveries
    consumer: Consumer
    group: str  # the marker's group, which the consumer joins in name only
    key: tuple
    last_marker: Marker | None = None  # what this producer's group holds: read at init, then what it committed
    closed: bool = False
    moves: bool = False  # this worker found the producer of this id fenced once: Spark moves its tasks between workers
    spare: SinkProducer | None = None  # not initialised: the next replacement, made where the tasks move
    spare_learning: threading.Thread | None = None  # the spare's first metadata request, under way
    stuck: bool = False  # a call of the producer's did not return in time: closed by that call's thread, if ever

    def take_spare(self) -> SinkProducer | None:
        """The spare, out of this entry, once its first metadata request is answered (or has given up)."""
        if self.spare_learning is not None:
            self.spare_learning.join()
            self.spare_learning = None
        spare, self.spare = self.spare, None
        return spare


def learn_brokers(producer: SinkProducer) -> None:
    """Let a new producer learn the brokers before init_transactions(). librdkafka sends its first FindCoordinator
    on the bootstrap connection, which it drops as soon as the first metadata names the brokers; when that answer
    comes in between, the request is lost and the coordinator is asked again only by a 500 ms timer
    (bench/TRANSACTIONS.md). Not answered in time, init_transactions() goes on and reports what is wrong."""
    try:
        if isinstance(producer, NativeProducer):
            producer.learn_brokers(LEARN_BROKERS_S)
        else:
            producer.list_topics(timeout=LEARN_BROKERS_S)
    except KafkaException:
        pass


class TransactionalPool(ClientPool[tuple, Transactional]):
    """This worker's idle transactional producers, one per configuration and transactional.id (this module's
    docstring says why)."""

    def __init__(self) -> None:
        super().__init__(close=discard, per_key=1, most_idle=MAX_IDLE_TRANSACTIONAL)
        self.created, self.spares = 0, 0  # producers made while a task waited, and spares (the tests read them)

    def take_kept(self, options: SinkOptions, tid: str, group: str) -> Transactional | None:
        """The producer an earlier task left for `tid`, if any: taking it is quick, so the task's own thread does."""
        kept = self.take(pool_key(options, tid, group))
        if kept is not None:
            kept.deliveries.reset()
        return kept

    def make(self, options: SinkOptions, tid: str, group: str) -> Transactional:
        """A new producer for `tid`, not yet initialised, and its marker's consumer."""
        deliveries = Deliveries()
        producer = make_producer(options, deliveries, **{"transactional.id": tid})
        consumer = marker_consumer(options, group)
        self.created += 1
        return Transactional(producer, deliveries, consumer, group, pool_key(options, tid, group))

    def replace_producer(self, kept: Transactional, options: SinkOptions, tid: str) -> None:
        """The fenced producer closed and its spare, or a new one, in its place (not initialised); the marker's
        consumer stays. From now on this id keeps a spare in this worker."""
        close(kept.producer)
        kept.deliveries.reset()
        spare = kept.take_spare()
        if spare is not None:
            kept.producer = spare
        else:
            kept.producer = make_producer(options, kept.deliveries, **{"transactional.id": tid})
            self.created += 1
        kept.last_marker = None
        kept.moves = True

    def release(self, kept: Transactional, healthy: bool, options: SinkOptions, tid: str) -> None:
        """Back into the pool after a task whose transaction ended (committed, or none begun), with a spare producer
        where this id's tasks move between workers; closed otherwise. Making the spare costs the task about a
        millisecond: it learns the brokers on its own thread."""
        try:
            if healthy and kept.moves and kept.spare is None:
                spare = make_producer(options, kept.deliveries, **{"transactional.id": tid})
                learning = threading.Thread(
                    target=learn_brokers, args=(spare,), name=f"kafkasource-spare-{tid}", daemon=True
                )
                kept.spare = spare  # before the thread starts: a start that fails still leaves the spare to close
                learning.start()
                kept.spare_learning = learning
                self.spares += 1
        finally:  # kept, or closed: never left out of the pool open
            self.give_back(kept.key, kept, healthy)


def pool_key(options: SinkOptions, tid: str, group: str) -> tuple:
    """Which kept producer a task may take: of its transactional.id and marker group, and of its kind."""
    return (tid, group, producer_kind(options))


def discard(kept: Transactional) -> None:
    """Close a producer that leaves the pool (and its consumer); a second call does nothing, nor does a call while
    one of the producer's calls is stuck (closing it then is not safe: discard_stuck closes it later)."""
    if not kept.stuck:
        _close(kept)


def discard_stuck(kept: Transactional) -> None:
    """Close a producer given up while a call of its was stuck, once that call returned (on the call's thread, the
    only one that closes it from then on)."""
    _close(kept)


def _close(kept: Transactional) -> None:
    if kept.closed:
        return
    kept.closed = True
    kept.consumer.close()
    close(kept.producer)
    spare = kept.take_spare()
    if spare is not None:
        close(spare)


POOL = TransactionalPool()
