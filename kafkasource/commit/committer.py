"""Commit the group's offsets when a batch completes: synchronously or asynchronously.

The source commits from a client that is not a group member (generation -1); the coordinator
accepts such commits only while the group has no active members (a group with subscribed members
answers UNKNOWN_MEMBER_ID). Positions only move forward: an offset below one already sent is never
sent again.

Every commit carries metadata naming who made it (kafkasource.commit.metadata), and every outcome (a success,
a retry, a failure with Kafka's error name) goes to the metrics exporter when one listens
(kafkasource.commit.outcomes), by a datagram that never waits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource.cluster.client import COORDINATOR_RETRIABLE
from kafkasource.commit import metadata as committer
from kafkasource.commit.outcomes import CommitOutcome, OutcomeSender
from kafkasource.errors import CommitError
from kafkasource.planning.partitions import Positions, TopicPartition, describe, listing, partition_name
from kafkasource.runtime.shutdown import close_within, signal_deferred

log = logging.getLogger(__name__)

RETRIABLE = COORDINATOR_RETRIABLE | {
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError._TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError.REBALANCE_IN_PROGRESS,
}
GROUP_IN_USE = {
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.ILLEGAL_GENERATION,
    getattr(KafkaError, "FENCED_MEMBER_EPOCH", -999),
    getattr(KafkaError, "STALE_MEMBER_EPOCH", -999),
}
ASYNC_FLUSH_SECONDS = 10.0
SYNC_ANSWER_SLICE_S = 0.002
# The group coordinator writes one OffsetCommit request as one record batch to __consumer_offsets and refuses a batch
# larger than that topic's maximum message size (1 MiB by default): a Kafka 4.3 broker then failed the whole commit
# ("Unknown broker error") and shut itself down, seen with the first commit of 10,000 partitions. So a commit of many
# partitions goes as several requests of at most COMMIT_REQUEST_BYTES, estimated from what each offset record holds:
# the group and topic names, the metadata, and OFFSET_RECORD_BYTES of numbers and framing (an overestimate).
COMMIT_REQUEST_BYTES = 512 * 1024
OFFSET_RECORD_BYTES = 100


def explain(group_id: str, positions: Positions, error: KafkaError) -> str:
    base = f"committing offsets of group {group_id} for {describe(positions)} failed: {error.str()}"
    if error.code() in GROUP_IN_USE:
        return (
            f"{base}. The group has active members (another application consumes with subscribe() under this "
            "group.id), so the broker rejects commits from this source, which reads partitions itself and is "
            "not a group member. Give this query a kafka.group.id of its own"
        )
    if error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return (
            f"{base}. Committing needs the READ permission on group {group_id} (kafka-acls --add "
            f"--allow-principal User:<name> --operation Read --group {group_id})"
        )
    return base


_PENDING = object()  # a sync commit's answer that has not arrived yet


class Committer(Protocol):
    """Where the positions of completed batches go; OffsetCommitter commits them to the group."""

    def commit(self, positions: Positions) -> None: ...

    def restart(self, partitions: list[TopicPartition]) -> None: ...

    def commit_final(self, positions: Positions) -> None: ...

    def close(self) -> None: ...


class OffsetCommitter:
    """Commits positions for one query. `consumer_factory(on_commit)` makes the group's client, which hands every
    commit's answer to `on_commit` (confluent-kafka's on_commit setting)."""

    def __init__(
        self,
        group_id: str,
        mode: str,
        timeout_ms: int,
        consumer_factory: Callable[[Callable], Consumer],
        outcomes: OutcomeSender | None = None,
    ):
        self.group_id = group_id
        self.mode = mode
        self.timeout_s = timeout_ms / 1000
        self._factory = consumer_factory
        self._consumer: Consumer | None = None
        self._sent: Positions = {}  # newest positions handed to the broker, per partition
        self._in_flight: Positions | None = None  # async: the one commit awaiting its answer
        self._queued: Positions | None = None  # async: the newest positions waiting for that answer
        self._confirmed: Positions = {}  # newest positions the broker acknowledged, per partition
        self._sync_answer: object = None  # _PENDING while a sync commit waits for its answer
        self.failed_async_commits = 0
        self._outcomes = outcomes or OutcomeSender({})

    @property
    def consumer(self) -> Consumer:
        if self._consumer is None:
            self._consumer = self._factory(self._on_commit)
        return self._consumer

    def commit(self, positions: Positions) -> None:
        """Commit what moved forward since the last commit; no-op when nothing did."""
        if self.mode == "async":
            self.poll()
        sent = self._sent
        forward = {tp: o for tp, o in positions.items() if o > sent.get(tp, -1)}
        if not forward:
            return
        if self.mode == "sync":
            self._commit_sync(forward)
            self._sent.update(forward)
        else:
            with signal_deferred():  # marked sent and queued together, or neither
                self._sent.update(forward)
                self._queued = {**(self._queued or {}), **forward}
                self._send_next_async()

    def restart(self, partitions: list[TopicPartition]) -> None:
        """Forget what was sent for partitions whose log was replaced (topic recreated or truncated): positions
        in the new log may be lower than the old ones, and they are the ones to commit from now on."""
        with signal_deferred():
            for tp in partitions:
                self._sent.pop(tp, None)
                self._confirmed.pop(tp, None)
                for pending in (self._queued, self._in_flight):  # an answer for the old log confirms nothing now
                    if pending:
                        pending.pop(tp, None)

    def commit_final(self, positions: Positions) -> None:
        """The last commit of a run: nothing can overlap it, so wait for the broker's answer (commitTimeoutMs).

        sync: as every sync commit, raises CommitError when it cannot land. async: waits for the
        answers of what is in flight, then commits synchronously whatever the broker has not
        confirmed (a failed async commit, or one whose coordinator was not known yet); a failure
        is a warning, as for every async commit."""
        if self.mode == "sync":
            self.commit(positions)
            return
        deadline = time.monotonic() + self.timeout_s
        self.commit(positions)
        self._await_answers(deadline)
        if self._in_flight is not None or self._queued:
            # an unanswered older commit could still land after a newer one: never send over it
            log.warning(
                "the final async commit of group %s got no answer within commitTimeoutMs: %s",
                self.group_id,
                describe({**(self._in_flight or {}), **(self._queued or {})}),
            )
            return
        unconfirmed = {tp: o for tp, o in positions.items() if o > self._confirmed.get(tp, -1)}
        if not unconfirmed:
            return
        try:
            self._commit_sync(unconfirmed, deadline)
        except CommitError as error:
            log.warning("final async %s", error)

    def close(self) -> None:
        """Flush pending async commits (bounded wait), then close the client."""
        if self._consumer is None:
            return
        self._await_answers(time.monotonic() + min(self.timeout_s, ASYNC_FLUSH_SECONDS))
        if self._in_flight is not None or self._queued:
            log.warning(
                "stopped with async commits of group %s unanswered for %s",
                self.group_id,
                describe({**(self._in_flight or {}), **(self._queued or {})}),
            )
        close_within(self._consumer, f"commit client of group {self.group_id}")
        self._consumer = None

    # -- sync -------------------------------------------------------------------------------------
    def _commit_sync(self, positions: Positions, deadline: float | None = None) -> None:
        deadline = deadline or time.monotonic() + self.timeout_s
        metadata = committer.metadata()
        for request in commit_requests(positions, self.group_id, metadata):
            self._commit_request_sync(request, metadata, deadline)

    def _commit_request_sync(self, positions: Positions, metadata: str, deadline: float) -> None:
        backoff = 0.1
        while True:
            error = self._try_commit_sync(positions, metadata, deadline)
            if error is None:
                self._confirmed.update(positions)
                self._report("success", None, positions)
                log.info("committed group %s: %s", self.group_id, _show(positions))
                return
            retriable = error.code() in RETRIABLE or (error.retriable() and error.code() not in GROUP_IN_USE)
            if not retriable:
                self._report("failure", error, positions)
                raise CommitError(explain(self.group_id, positions, error))
            if time.monotonic() + backoff > deadline:
                self._report("failure", error, positions)
                raise CommitError(
                    explain(self.group_id, positions, error)
                    + f" (still failing after retrying for {self.timeout_s:.0f} s, commitTimeoutMs)"
                )
            self._report("retry", error, positions)
            log.warning("commit of group %s failed (%s); retrying in %.1f s", self.group_id, error.str(), backoff)
            time.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _try_commit_sync(self, positions: Positions, metadata: str, deadline: float) -> KafkaError | None:
        """One commit, its answer waited for until `deadline` at the most. The client's own blocking commit would
        wait for a coordinator it cannot reach far longer than commitTimeoutMs, so the commit is sent and its
        answer served here."""
        self._sync_answer = _PENDING
        try:
            self.consumer.commit(offsets=_to_kafka(positions, metadata), asynchronous=True)
            while self._sync_answer is _PENDING and time.monotonic() < deadline:
                # answers arrive only inside poll(), which returns at its timeout (it has no message to return):
                # short slices, so the wait ends within a few ms of the answer (100 ms slices cost 100 ms a trigger)
                self.consumer.poll(SYNC_ANSWER_SLICE_S)
        except KafkaException as exc:
            return exc.args[0]
        finally:
            answer, self._sync_answer = self._sync_answer, None
        if answer is _PENDING:
            return KafkaError(KafkaError._TIMED_OUT, "the group coordinator did not answer")
        return answer if isinstance(answer, KafkaError) else None

    # -- async ------------------------------------------------------------------------------------
    def _send_next_async(self) -> None:
        """One commit request in flight at a time, so an older commit can never land after a newer one; what does not
        fit in one request stays queued for the next."""
        if self._in_flight is not None or not self._queued:
            return
        with signal_deferred():  # in flight means handed to the client
            metadata = committer.metadata()
            first, *rest = commit_requests(self._queued, self.group_id, metadata)
            self._in_flight, self._queued = first, {tp: o for request in rest for tp, o in request.items()} or None
            try:
                self.consumer.commit(offsets=_to_kafka(self._in_flight, metadata), asynchronous=True)
            except KafkaException as exc:
                self._on_commit(exc.args[0], None)

    def _await_answers(self, deadline: float) -> None:
        while (self._in_flight is not None or self._queued) and time.monotonic() < deadline:
            self.poll(0.1)

    def poll(self, timeout: float = 0) -> None:
        """Serve async commit answers; the query does so on every trigger."""
        self.consumer.poll(timeout)  # on_commit results arrive only inside poll()
        self._send_next_async()

    def _on_commit(self, error: KafkaError | None, partitions) -> None:
        if error is None and partitions:
            error = next((tp.error for tp in partitions if tp.error is not None), None)
        if self._sync_answer is _PENDING:  # a sync commit waits for this answer; no async one is in flight then
            self._sync_answer = error
            return
        in_flight = self._in_flight
        if in_flight is None:
            return
        with signal_deferred():  # an answer is taken whole: a failed commit's positions become sendable again
            self._record_answer(in_flight, error)

    def _record_answer(self, positions: Positions, error: KafkaError | None) -> None:
        self._in_flight = None
        if error is None:
            self._confirmed.update(positions)
            self._report("success", None, positions)
            log.info("committed group %s (async): %s", self.group_id, _show(positions))
            return
        self.failed_async_commits += 1
        self._report("failure", error, positions)
        # allow the next commit to resend these positions: a failed commit is superseded, never replayed out of order
        for tp, offset in positions.items():
            if self._sent.get(tp) == offset:
                del self._sent[tp]
        log.warning("async %s (%d failed so far)", explain(self.group_id, positions, error), self.failed_async_commits)

    def _report(self, outcome: str, error: KafkaError | None, positions: Positions) -> None:
        """One outcome for the metrics exporter, labelled with the query's commitMode (an async query's final
        commit waits for its answer, and still counts as async)."""
        self._outcomes.send(
            CommitOutcome(self.group_id, outcome, error.name() if error is not None else "", len(positions), self.mode)
        )


def commit_requests(positions: Positions, group_id: str, metadata: str) -> list[Positions]:
    """`positions` split into OffsetCommit requests whose offset records fit COMMIT_REQUEST_BYTES (estimated), in
    partition order; one request for the usual commit of the partitions a trigger moved."""
    fixed = OFFSET_RECORD_BYTES + len(group_id.encode()) + len(metadata.encode())
    requests: list[Positions] = [{}]
    size = 0
    for (topic, partition), offset in sorted(positions.items()):
        record = fixed + len(topic.encode())
        if requests[-1] and size + record > COMMIT_REQUEST_BYTES:
            requests.append({})
            size = 0
        requests[-1][(topic, partition)] = offset
        size += record
    return requests if requests[-1] else []


def _to_kafka(positions: Positions, metadata: str) -> list[KafkaTopicPartition]:
    return [KafkaTopicPartition(t, p, o, metadata=metadata) for (t, p), o in sorted(positions.items())]


def _show(positions: Positions) -> str:
    return listing([f"{partition_name(t, p)}@{o}" for (t, p), o in sorted(positions.items())])
