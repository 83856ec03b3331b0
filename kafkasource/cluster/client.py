"""The broker, driver side: the one place that asks Kafka for metadata, offsets and commits.

Every question about many partitions is batched (one metadata request, one OffsetFetch, ListOffsets
in calls of up to LIST_OFFSETS_CHUNK partitions, each a request per leader), never a round trip per
partition. Clients are created lazily and
are not picklable; readers drop them before Spark ships the reader to executors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    TopicCollection,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from kafkasource.cluster.refusal import is_refusal, refusal_error
from kafkasource.cluster.settings import NEVER_COMMITTING_GROUP_ID
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import BrokerUnavailableError, KafkaSourceError
from kafkasource.planning.partitions import Positions, TopicPartition, describe
from kafkasource.runtime.shutdown import close_within, signal_deferred

log = logging.getLogger(__name__)
T = TypeVar("T")

# _DESTROY_BROKER: a consumer's ListOffsets to a broker that stopped, whose handle the client dropped meanwhile
UNREACHABLE = {
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._RESOLVE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._DESTROY_BROKER,
}
LEADER_MOVING = {
    KafkaError.OFFSET_NOT_AVAILABLE,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError._NOENT,
}  # _NOENT: "no leaders found", from a client that has no metadata yet
# a consumer's own answer for a partition or topic its metadata does not hold (yet)
NOT_IN_CLIENT_METADATA = {KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
# the group coordinator moving, loading or not elected yet: worth asking again
COORDINATOR_RETRIABLE = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError._WAIT_COORD,
}
ANSWER_SLICE_S = 1.0  # how often a request waiting for an unreachable cluster checks for a refusal
# how long a trigger waits for topic ids: they are a check on top of the log ends, so a broker that just died
# (whose request would wait out its whole timeout) costs a trigger this much, and the next trigger asks again
TOPIC_IDS_TIMEOUT_S = 2.0
FIRST_ATTEMPT_S = 1.0  # the first ListOffsets attempt's timeout; each retry doubles it
# partitions per ListOffsets call: a librdkafka call's CPU grows with the square of its partitions past a few hundred
# (10,000 partitions on an idle machine: 422 ms of CPU in one call, 71 ms in calls of 1,000, 30 ms in calls of 500,
# 28 ms in calls of 100, whose round trips then cost more wall time; bench/PLANNING.md)
LIST_OFFSETS_CHUNK = 250
# clients asking those calls at once, each over connections of its own: a broker answers one connection's requests
# one at a time, so one lane's request is served while another lane's answer is read. The log ends of 10,000
# partitions on one broker, idle machine, medians of three rounds: one lane of calls of 500, 62-84 ms; 3 lanes of
# 500, 48-57 ms; 4 lanes of 250, 37-43 ms (28-31 ms of CPU); more lanes, no clear gain. One client's calls from
# several threads gain nothing: they share its connection.
LIST_OFFSETS_LANES = 4
# ListOffsets asks, per partition, for a timestamp's offset; these two stand for the log end and the log start
OFFSET_LATEST, OFFSET_EARLIEST = OFFSET_END, OFFSET_BEGINNING


class ClientOptions(Protocol):
    """What the driver's clients take from a query's options (options.SourceOptions has it): the cluster room
    stays below the options room, which parses into what the rooms below it define."""

    @property
    def bootstrap_servers(self) -> str: ...
    @property
    def group_id(self) -> str | None: ...
    @property
    def poll_timeout_ms(self) -> int: ...
    @property
    def read_committed(self) -> bool: ...
    def client_config(self, **overrides: Any) -> dict[str, Any]: ...


class KafkaClient:
    """Driver-side view of the cluster for one query; implements offsets.OffsetLookup."""

    def __init__(self, options: ClientOptions):
        self.options = options
        self._admin: AdminClient | None = None
        self._group_consumer: Consumer | None = None
        self._offsets_consumers: dict[tuple[bool, int], Consumer] = {}  # by read_committed and lane
        self._timeout_s = options.poll_timeout_ms / 1000
        # the latest authentication or TLS failure the clients reported: only their error_cb (served inside poll())
        # hears of it; the request itself just fails with a transport error or a timeout
        self._refusal: KafkaError | None = None
        self._undescribed: set[str] = set()  # topics whose id the brokers did not give

    # -- clients -------------------------------------------------------------------------------
    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(sign_in.ready(self.options.client_config(error_cb=self._on_client_error)))
        return self._admin

    def new_group_consumer(self, **extra: object) -> Consumer:
        """A consumer carrying the user's group.id, for OffsetFetch and OffsetCommit only: it never subscribes,
        so it never joins the group."""
        return Consumer(
            sign_in.ready(
                self.options.client_config(
                    **{
                        "group.id": self.options.group_id,
                        "enable.auto.commit": False,
                        "error_cb": self._on_client_error,
                    },
                    **extra,
                )
            )
        )

    @property
    def group_consumer(self) -> Consumer:
        if self._group_consumer is None:
            self._group_consumer = self.new_group_consumer()
        return self._group_consumer

    def close(self) -> None:
        if self._group_consumer is not None:
            close_within(self._group_consumer, f"offset client of group {self.options.group_id}")
        self._group_consumer = None
        self._drop_offsets_clients()
        self._admin = None

    # -- errors --------------------------------------------------------------------------------
    def _on_client_error(self, error: KafkaError) -> None:
        if is_refusal(error):
            self._refusal = error

    def _refused(self, what: str) -> KafkaSourceError | None:
        """An error naming why the brokers refused us, if a client reported an authentication or TLS failure."""
        if self._admin is not None:
            self._admin.poll(0)
        if self._group_consumer is not None:
            self._group_consumer.poll(0)
        for consumer in self._offsets_consumers.values():
            consumer.poll(0)
        if self._refusal is None:
            return None
        return refusal_error(what, self._refusal, self.options.client_config())

    def _fail(self, what: str, exc: KafkaException) -> KafkaSourceError:
        refused = self._refused(what)
        if refused is not None:
            return refused
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.code() in UNREACHABLE | LEADER_MOVING:
            return BrokerUnavailableError(
                f"could not {what}: Kafka at {self.options.bootstrap_servers} did not answer within "
                f"{self.options.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs): {error.str()}. Check "
                "kafka.bootstrap.servers and that the brokers are reachable from the Spark driver"
            )
        return KafkaSourceError(f"could not {what} from Kafka at {self.options.bootstrap_servers}: {exc}")

    def topics(self) -> dict[str, int]:
        """Every topic in the cluster and its partition count, from one metadata request."""
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                metadata = self.admin.list_topics(timeout=min(ANSWER_SLICE_S, max(0.1, deadline - time.monotonic())))
                break
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if (
                    error is None
                    or error.code() not in UNREACHABLE
                    or time.monotonic() >= deadline
                    or self._refused("list topics")
                ):
                    raise self._fail("list topics", exc) from None
        self._refusal = None  # the brokers let us in now
        return {name: len(topic.partitions) for name, topic in metadata.topics.items() if topic.error is None}

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        """Each topic's id, from one DescribeTopics request: a topic deleted and created again under the same name
        gets a new id, which is how a recreated topic refilled past the query's position is told from one that
        grew. Topics the brokers do not describe within TOPIC_IDS_TIMEOUT_S (gone meanwhile, no DESCRIBE
        permission, a broker that just died) are left out this time: the id is a check on top of the log-end one,
        never a reason to stop or hold up reading."""
        if not topics:
            return {}
        timeout_s = min(TOPIC_IDS_TIMEOUT_S, self._timeout_s)
        futures = self.admin.describe_topics(TopicCollection(sorted(topics)), request_timeout=timeout_s)
        ids = {}
        for name, future in futures.items():
            try:
                topic_id = future.result(timeout_s + 1).topic_id
            except (KafkaException, TimeoutError) as exc:
                if name not in self._undescribed:  # asked again every trigger: said once
                    self._undescribed.add(name)
                    reason = exc.args[0].str() if isinstance(exc, KafkaException) and exc.args else "no answer"
                    log.info(
                        "no topic id for %s (%s): until the brokers give one, a recreated topic is found by "
                        "its log end only",
                        name,
                        reason,
                    )
                continue
            if topic_id is not None and (topic_id.get_most_significant_bits() or topic_id.get_least_significant_bits()):
                ids[name] = str(topic_id)  # all zero: a broker that gives topics no id
        return ids

    def _list_offsets(
        self, request: Mapping[TopicPartition, int], what: str, read_committed: bool | None = None
    ) -> Positions:
        """The offsets ListOffsets gives for `request` (per partition a timestamp, or LATEST / EARLIEST), asked
        again until kafkaConsumer.pollTimeoutMs has passed.

        A request goes to each partition's leader as the client last knew it. When that leader has just died, the
        request waits out its whole timeout and may then come back without an error but with OFFSET_INVALID for
        that partition (OFFSET_INVALID, on a 3-node cluster). So each attempt has a short timeout that
        doubles (1, 2, 4 s ...) and every retry a fresh client, whose metadata names the new leader once the
        cluster has elected one (a few seconds after the old one stopped answering); a client that knew the old
        leader was also seen to keep its stale leader epoch. The query's kafka.isolation.level applies unless
        `read_committed` says otherwise."""
        if not request:
            return {}
        if read_committed is None:
            read_committed = self.options.read_committed
        deadline = time.monotonic() + self._timeout_s
        attempt_s = FIRST_ATTEMPT_S
        asked_afresh = False
        while True:
            attempt_s = max(1.0, min(attempt_s, deadline - time.monotonic()))
            failure: KafkaException | None = None
            try:
                found = self._ask_offsets(request, read_committed, time.monotonic() + attempt_s)
                unanswered = sorted(tp for tp, offset in found.items() if offset == OFFSET_INVALID)
                if not unanswered:
                    return found
                reason = f"no offset for {describe(unanswered)}"
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                if error is not None and error.code() in NOT_IN_CLIENT_METADATA and not asked_afresh:
                    # a partition or topic created after the client last fetched its metadata: a fresh client
                    # knows it. Still unknown to a fresh one, it is gone (topic deleted): an error, not a retry
                    asked_afresh = True
                    self._drop_offsets_clients()
                    continue
                # a leader moving to another broker also answers "not leader" or "high watermark not caught up"
                if error is None or error.code() not in LEADER_MOVING | UNREACHABLE:
                    raise self._fail(f"list {what} offsets", exc) from None
                failure, reason = exc, error.str()
            if time.monotonic() + 0.2 >= deadline or self._refused(f"list {what} offsets"):
                if failure is not None:
                    raise self._fail(f"list {what} offsets", failure) from None
                raise BrokerUnavailableError(
                    f"could not list {what} offsets: Kafka at {self.options.bootstrap_servers} did not answer within "
                    f"{self.options.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs)"
                ) from None
            log.info("listing %s offsets: %s; asking again with a fresh client", what, reason)
            self._drop_offsets_clients()
            time.sleep(0.2)
            attempt_s *= 2

    def _ask_offsets(self, request: Mapping[TopicPartition, int], read_committed: bool, until: float) -> Positions:
        """One attempt: ListOffsets in calls of LIST_OFFSETS_CHUNK partitions (each call a request per leader), the
        calls shared out among LIST_OFFSETS_LANES clients asking at once. A consumer's offsets_for_times answers a
        call as one list; the admin client's list_offsets makes a Python future per partition, which cost 30 µs
        each (bench/PLANNING.md)."""
        asked = [KafkaTopicPartition(t, p, timestamp) for (t, p), timestamp in request.items()]
        calls = [asked[i : i + LIST_OFFSETS_CHUNK] for i in range(0, len(asked), LIST_OFFSETS_CHUNK)]
        lanes = min(LIST_OFFSETS_LANES, len(calls))
        shares = [calls[len(calls) * k // lanes : len(calls) * (k + 1) // lanes] for k in range(lanes)]
        consumers = [self._offsets_consumer(read_committed, lane) for lane in range(lanes)]
        with signal_deferred():  # the exit a SIGTERM starts closes these clients: only once no lane is using them
            answers = in_parallel([partial(_answer, c, s, until) for c, s in zip(consumers, shares, strict=True)])
        found: Positions = {}
        for answered in answers:
            found.update(answered)
        return found

    def _offsets_consumer(self, read_committed: bool, lane: int) -> Consumer:
        """A consumer asking offsets only (it never subscribes, reads nor commits), per isolation level (under
        read_committed a log end is the last stable offset) and lane. Its group id is the query's, or the executors'
        stand-in: librdkafka looks the group's coordinator up for any consumer."""
        consumer = self._offsets_consumers.get((read_committed, lane))
        if consumer is None:
            consumer = Consumer(
                sign_in.ready(
                    self.options.client_config(
                        **{
                            "group.id": self.options.group_id or NEVER_COMMITTING_GROUP_ID,
                            "enable.auto.commit": False,
                            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                            "error_cb": self._on_client_error,
                        }
                    )
                )
            )
            self._offsets_consumers[(read_committed, lane)] = consumer
        return consumer

    def _drop_offsets_clients(self) -> None:
        for key, consumer in list(self._offsets_consumers.items()):
            del self._offsets_consumers[key]
            close_within(consumer, "offsets client")

    def beginning(self, partitions: list[TopicPartition]) -> Positions:
        return self._list_offsets({tp: OFFSET_EARLIEST for tp in partitions}, "earliest")

    def end(self, partitions: list[TopicPartition]) -> Positions:
        """Log end offsets; the last stable offsets under kafka.isolation.level=read_committed."""
        return self._list_offsets({tp: OFFSET_LATEST for tp in partitions}, "latest")

    def high_watermarks(self, partitions: list[TopicPartition]) -> Positions:
        """Log end offsets whatever the isolation level: under read_committed, where the records held back by open
        transactions end."""
        return self._list_offsets({tp: OFFSET_LATEST for tp in partitions}, "high watermark", read_committed=False)

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]:
        found = self._list_offsets(dict(timestamps), "timestamp")
        return {tp: (o if o >= 0 else None) for tp, o in found.items()}

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        """The group's committed offsets (OffsetFetch); None where the group has none."""
        return {tp: offset for tp, (offset, _) in self.committed_with_metadata(partitions).items()}

    def committed_with_metadata(self, partitions: list[TopicPartition]) -> dict[TopicPartition, tuple[int | None, str]]:
        """The group's committed offsets (None where it has none) with each commit's metadata.

        Asked by a consumer carrying the group id (it never joins the group), never by the admin client's
        list_consumer_group_offsets: librdkafka's admin OffsetFetch dereferences a missing consumer-group handle
        when the broker answers NOT_COORDINATOR (librdkafka issue #5040). It asks the client's group handle to look
        the coordinator up again, and an admin client has none, so the process dies by SIGSEGV on librdkafka's
        own thread, whatever thread made the call. A broker answers so while the group's coordinator is not up yet:
        a fresh broker, a __consumer_offsets just created by the first look-up of a group. A consumer has the
        handle: the coordinator is looked up again, the error reaches us and the call is asked again below. (The
        admin client's requests to a group coordinator also abort the process at times, on an assertion about a
        request freed too early, librdkafka issue #4605: one more reason to leave the admin client out of groups.)"""
        try:
            result = committed_when_coordinated(
                self.group_consumer,
                [KafkaTopicPartition(t, p) for t, p in partitions],
                time.monotonic() + self._timeout_s,
                "fetching committed offsets",
            )
        except KafkaException as exc:
            raise self._fail(f"fetch the committed offsets of group {self.options.group_id}", exc) from None
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None, tp.metadata or "") for tp in result}


def committed_when_coordinated(
    consumer: Consumer, partitions: list[KafkaTopicPartition], deadline: float, what: str
) -> list[KafkaTopicPartition]:
    """consumer.committed(partitions), asked again until `deadline` while the group's coordinator is not ready: a
    broker answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for a while after it takes a group over (a fresh
    cluster, a broker restart), for the whole call or for a partition. Any other error of the call is raised as
    its KafkaException; a partition's other errors stay on its entry for the caller."""
    while True:
        try:
            found = consumer.committed(partitions, timeout=max(1.0, deadline - time.monotonic()))
            error = next((tp.error for tp in found if tp.error is not None), None)
            if error is None or error.code() not in COORDINATOR_RETRIABLE:
                return found
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() not in COORDINATOR_RETRIABLE:
                raise
        if time.monotonic() >= deadline:
            raise KafkaException(error)
        log.info("%s: %s; retrying", what, error.str())
        time.sleep(0.2)


def _answer(consumer: Consumer, calls: list[list[KafkaTopicPartition]], until: float) -> Positions:
    """The offsets one client gives for its share of the calls, asked one call after another."""
    found: Positions = {}
    for call in calls:
        for tp in consumer.offsets_for_times(call, timeout=max(0.1, until - time.monotonic())):
            if tp.error is not None:  # a partition's own error: as if the whole call had failed with it
                raise KafkaException(tp.error)
            found[(tp.topic, tp.partition)] = tp.offset
    return found


def in_parallel(calls: list[Callable[[], T]]) -> list[T]:
    """Each call's result, the first call run in this thread and the others each in a thread of its own; every call
    has ended when this returns or raises (the first failure, in call order). The threads are daemons, so the
    interpreter's exit never waits for one; the caller waits for all (each call is bounded by its own timeout)."""
    results: list = [None] * len(calls)
    errors: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except BaseException as exc:  # handed to the caller below
            errors[i] = exc

    threads = [
        threading.Thread(target=run, args=(i,), daemon=True, name="kafkasource-offsets") for i in range(1, len(calls))
    ]
    for thread in threads:
        thread.start()
    run(0)
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results
