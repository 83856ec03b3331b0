"""The streaming reader: plans micro-batches on the driver, reads ranges on executors, commits.

When a batch has completed, Spark calls latestOffset(start) with `start` = the end of that batch (on
every trigger, idle or not, and once more at the end of an AvailableNow run), while commit(end)
arrives one batch late, and not at all for the last batch of an AvailableNow run. Both signals
commit; the committer only moves forward. That final latestOffset of an AvailableNow run is the
last chance to commit: Spark ends the run right after it, so that commit waits for its answer.

latestOffset plans before it commits `start`: a partition whose log was replaced (topic recreated,
or truncated) must not get the old log's position committed into the new one. Such a partition is
restarted: the committer forgets what it sent for it, so the new log's lower positions are committed,
and positions of the old log that arrive afterwards (commit(end), one batch late) are left out.

What a trigger costs grows with what changed, not with the number of partitions: the topics, their
partitions and ids are asked again at most every metadataRefreshIntervalMs (or at once when the log
ends name a partition that no longer exists; the ids also at the first trigger of a run restarted
from its checkpoint, which compares them with those the checkpoint kept, and before the batch such a
run replays, if the run before planned one and stopped before it completed), the log ends once per
trigger (ListOffsets in calls of 250 partitions shared among 4 clients, each call a request per
leader broker), and the offsets JSON is built once per trigger and parsed once per shape Spark hands
back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafkasource.cluster.client import KafkaClient
from kafkasource.commit.committer import Committer, OffsetCommitter
from kafkasource.commit.outcomes import OutcomeSender
from kafkasource.errors import BrokerUnavailableError, DataLossError, KafkaSourceError
from kafkasource.formats.decoding import decode_batches
from kafkasource.options import SourceOptions
from kafkasource.planning.data_loss import report_data_loss, unread_records
from kafkasource.planning.held_back import HeldBackWatch
from kafkasource.planning.offsets import TOPIC_IDS_KEY, Cluster, from_json_dict, to_json_dict, topic_ids_of
from kafkasource.planning.partitions import Positions, TopicPartition, describe, partition_name
from kafkasource.planning.ranges import batch_ranges, rate_limit
from kafkasource.planning.tasks import KafkaInputPartition, fetch_config, plan_partitions
from kafkasource.reading.task_reader import read_ranges
from kafkasource.runtime import shutdown, spark_api
from kafkasource.runtime.spark_api import ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows

log = logging.getLogger(__name__)


class KafkaStreamReader(DataSourceStreamReader, spark_api.SupportsTriggerAvailableNow):
    """Without `client` and `committer`, the reader builds the real ones on the driver when first needed; neither
    travels to executors. `clock` (seconds) times maxTriggerDelay and how long open transactions hold partitions
    back."""

    def __init__(
        self,
        options: SourceOptions,
        client: Cluster | None = None,
        committer: Committer | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.options = options.for_stream()
        self.fetch_config = fetch_config(self.options)
        self._client = client
        self._committer = committer
        self._clock = clock
        self._initial: Positions | None = None  # what initialOffset() returned in this run: not yet read
        self._initial_json: dict | None = None
        self._place: dict | None = None  # pyspark 4.0/4.1: the last end planned or handed over (see latestOffset)
        self._target: Positions | None = None  # Trigger.AvailableNow: the log ends when the run started
        self._latest_seen: Positions | None = None
        self._known: set[TopicPartition] = set()
        self._current: list[TopicPartition] = []  # the partitions the query reads, as the last metadata had them
        self._metadata_at: float | None = None  # when (clock) the metadata was last asked
        self._parsed: list[tuple[dict, Positions]] = []  # offsets JSON the reader built or read lately, parsed
        # as the last look found them, or as the checkpoint kept them until then: a new id is a recreated topic
        self._topic_ids: dict[str, str] = {}
        # topics whose id in _topic_ids came from the checkpoint and was never compared with the cluster's: the next
        # plan compares them, whether or not the metadata is due (prepareForTriggerAvailableNow has just asked it)
        self._unchecked_ids: set[str] = set()
        self._reported_in_replay: set[str] = set()  # recreated topics a replayed batch already reported (partitions)
        self._superseded: Positions = {}  # positions in logs since replaced: never to be committed
        self._last_batch_at = clock()
        self._held_back = HeldBackWatch(clock)
        self._stopped = False
        if shutdown.in_stream_runner():  # Spark ends this process with SIGTERM instead of calling stop()
            shutdown.exit_on_sigterm()

    def __getstate__(self) -> dict:
        # Spark pickles the reader for read() on executors; driver clients hold sockets and cannot travel
        state = dict(self.__dict__)
        state["_client"] = None
        state["_committer"] = None
        return state

    @property
    def client(self) -> Cluster:
        if self._client is None:
            self._client = KafkaClient(self.options)
        return self._client

    @property
    def committer(self) -> Committer | None:
        if self._committer is None and self.options.commit_mode != "none":
            assert self.options.group_id is not None  # the options refuse a commitMode other than none without one
            self._committer = OffsetCommitter(
                self.options.group_id,
                self.options.commit_mode,
                self.options.commit_timeout_ms,
                lambda on_commit: self.client.new_group_consumer(on_commit=on_commit),
                OutcomeSender(),
            )
        return self._committer

    # -- the DataSourceStreamReader protocol --------------------------------------------------------
    def initialOffset(self) -> dict:
        if self._initial_json is not None:  # pyspark 4.0/4.1 ask it after latestOffset() planned from it
            return self._initial_json
        current = self._current_partitions(refresh=True)
        self._topic_ids.update(self.client.topic_ids(sorted({t for t, _ in current})))
        positions = self.options.start().resolve(current, self.client)
        self._initial = positions
        log.info(
            "new query over %s starts at %s (%s)",
            self.options.subscription.describe(),
            to_json_dict(positions),
            self.options.starting,
        )
        self._initial_json = self._offsets_json(positions)
        return self._initial_json

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.client.end(self._current_partitions(refresh=True))
        log.info("Trigger.AvailableNow: reading up to %s", to_json_dict(self._target))

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """The next batch's end, with the ids of its topics beside the positions: Spark keeps it in the checkpoint's
        offset log and hands it back as `start`, so a query restarted from its checkpoint compares the ids it
        sees first with those its last batch was read under.

        pyspark 4.0/4.1 pass neither (no admission control) and call this only once the batch before has completed,
        so the reader's own place is `start`: the end it planned last, the checkpoint's last end Spark hands over at
        a restart (partitions(end, end)), or a new query's initial offset, which Spark asks only after this call."""
        if start is None:
            start = self._place if self._place is not None else self.initialOffset()
        limit = limit if limit is not None else self.getDefaultReadLimit()
        start_positions = self._positions(start)
        for topic, topic_id in topic_ids_of(start).items():  # a restarted query: its first plan compares with these
            if topic not in self._topic_ids:
                self._topic_ids[topic] = topic_id
                self._unchecked_ids.add(topic)
        try:
            end = self._next_end(start_positions, limit)
        finally:  # the batch that ended at `start` is complete even when planning the next one fails
            self._commit_completed(start_positions, final=self._run_complete(start_positions))
        planned = self._offsets_json(end)
        # a changed id alone is a new end too: the checkpoint must keep the id the next batch is read under
        self._place = start if planned == start else planned
        return self._place

    def reportLatestOffset(self) -> dict | None:
        """The log ends the last trigger saw, as the bare map. Without a read limit they are the planned end itself,
        whose offsets JSON is already built."""
        if self._latest_seen is None:
            return None
        for data, positions in self._parsed:
            if positions is self._latest_seen:
                return {topic: parts for topic, parts in data.items() if topic != TOPIC_IDS_KEY}
        return to_json_dict(self._latest_seen)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        self._place = end  # at a restart Spark hands over its checkpoint's last end here, as partitions(end, end)
        end_positions = self._positions(end)
        start_positions = self._positions(start)
        planned_under = topic_ids_of(end)
        # a batch planned under ids this run does not hold (the usual batch was planned by latestOffset just before)
        if any(self._topic_ids.get(topic) != topic_id for topic, topic_id in planned_under.items()):
            start_positions = self._check_replayed_batch(planned_under, start_positions, end_positions)
        start_positions = self._batch_starts(start_positions, end_positions)
        return plan_partitions(batch_ranges(start_positions, end_positions), self.options)

    def read(self, partition: InputPartition):
        assert isinstance(partition, KafkaInputPartition)  # a micro-batch that plans no task runs none
        return decode_batches(read_ranges(partition.ranges, self.fetch_config), self.options.decoding)

    def commit(self, end: dict) -> None:
        self._commit_completed(self._positions(end))

    def stop(self) -> None:
        """Flush pending async commits (bounded) and close the driver's clients, once."""
        if self._stopped:
            return
        self._stopped = True
        shutdown.stopping()
        if self._committer is not None:
            self._committer.close()
        if self._client is not None:
            self._client.close()

    # -- planning the next batch, in the order latestOffset takes the steps ------------------------------
    def _next_end(self, start: Positions, limit: ReadLimit) -> Positions:
        """Where the next batch ends: from the query's place in each partition that exists now, up to its log
        end, within the AvailableNow run's target and the read limit."""
        refresh = self._metadata_due()
        try:
            return self._plan(start, limit, refresh)
        except (BrokerUnavailableError, DataLossError):
            # data loss found is final: planning again would not find it again (the new topic ids are known by then)
            raise
        except KafkaSourceError:
            if refresh:
                raise
            # the log ends named a partition the metadata no longer holds (topic deleted): ask it now. Planning
            # with the metadata as it was changed nothing before the log ends were asked.
            return self._plan(start, limit, refresh=True)

    def _plan(self, start: Positions, limit: ReadLimit, refresh: bool) -> Positions:
        seen_before = self._latest_seen or {}
        current = self._current_partitions(refresh)
        self._report_vanished(start, current, seen_before)
        base = self._join_new_partitions(start, current)
        if refresh or self._unchecked_ids:
            base = self._restart_recreated_topics(base, start, current, seen_before)
        latest = self._look_up_log_ends(current)
        base = self._restart_where_log_went_back(base, latest, seen_before)
        end = self._apply_limit(base, self._cap_at_target(base, latest), limit)
        if end != base:  # an end is never below its base: some partition moved
            self._last_batch_at = self._clock()
        return end

    def _metadata_due(self) -> bool:
        interval_s = self.options.metadata_refresh_interval_ms / 1000
        return self._metadata_at is None or self._clock() - self._metadata_at >= interval_s

    def _current_partitions(self, refresh: bool) -> list[TopicPartition]:
        """The partitions the query reads: asked of the brokers with `refresh`, else as they were last asked."""
        if refresh:
            self._current = self.options.subscription.partitions(self.client.topics())
            self._known = set(self._current)
            self._metadata_at = self._clock()
        return self._current

    def _report_vanished(self, start: Positions, current: list[TopicPartition], seen_before: Positions) -> None:
        """Partitions the query was reading that no longer exist (topic deleted?): data loss."""
        if start.keys() <= self._known:  # the usual trigger: no set built
            return
        vanished = sorted(start.keys() - self._known)
        one = len(vanished) == 1
        self._restarted(start, vanished)  # should the topic come back, its new log is read from its start
        self._data_loss(
            f"{describe(vanished)} no longer exist{'s' if one else ''} in the cluster (topic deleted?)"
            f"{unread_records(vanished, start, seen_before)}",
            then=f"the query stops reading {'it' if one else 'them'}",
        )

    def _join_new_partitions(self, start: Positions, current: list[TopicPartition]) -> Positions:
        """The query's place in each current partition; new ones join at their earliest offset, as in the built-in
        source."""
        if start.keys() == self._known:  # the usual trigger: no partition joined or left
            return start
        new = [tp for tp in current if tp not in start]
        first = self.client.beginning(new) if new else {}
        if new:
            log.info("new partitions join the query: %s", describe(new))
        return {tp: start[tp] if tp in start else first[tp] for tp in current}

    def _restart_recreated_topics(
        self, base: Positions, previous: Positions, current: list[TopicPartition], seen_before: Positions
    ) -> Positions:
        """A topic whose id changed since the last look was deleted and created again, even if its new log already
        reaches past the query's place: data loss; with failOnDataLoss=false, its partitions the query was reading
        (`previous`) are read again from their new log start. A restarted query compares with the ids its
        checkpoint kept (latestOffset), so a topic recreated while it was stopped is found too, at its first plan
        whatever the trigger."""
        ids = self.client.topic_ids(sorted({t for t, _ in current}))
        # compared once: an id the brokers did not give now (no DESCRIBE permission, ...) waits for the next refresh
        # rather than costing a request at every trigger
        self._unchecked_ids.clear()
        reported, self._reported_in_replay = self._reported_in_replay, set()
        recreated = {t: (self._topic_ids[t], i) for t, i in ids.items() if self._topic_ids.get(t, i) != i}
        self._topic_ids.update(ids)
        replaced = [tp for tp in previous if tp in base and tp[0] in recreated]
        if not replaced:
            return base
        self._restarted(base, replaced)
        restart = self.client.beginning(replaced)
        for topic, (old, new) in sorted(recreated.items()):
            if topic in reported:  # reported as the replayed batch skipped it: restarted without a second report
                continue
            parts = [tp for tp in replaced if tp[0] == topic]
            self._data_loss(
                f"topic {topic} was deleted and created again (its topic id changed from {old} to {new})"
                f"{unread_records(parts, base, seen_before)}",
                then="reading it again from its log start",
            )
        return {**base, **{tp: restart[tp] for tp in replaced}}

    def _check_replayed_batch(self, planned_under: dict[str, str], start: Positions, end: Positions) -> Positions:
        """A batch whose end carries ids this run does not hold was planned by the run before, which stopped before it
        completed: a run restarted from its checkpoint replays it first, with no latestOffset before. A topic
        recreated meanwhile would be read at positions of its old log, so the ids are compared here (one
        DescribeTopics request, once). Recreated: data loss; with failOnDataLoss=false the replayed batch skips its
        partitions, whose records went with the old log, and the next plan, comparing the same ids, reads them again
        from their new log start."""
        ids = self.client.topic_ids(sorted(planned_under))
        recreated = {t: (old, ids[t]) for t, old in planned_under.items() if ids.get(t, old) != old}
        self._topic_ids.update(planned_under)  # the ids the query's place is in, until a plan moves it to a new log
        self._unchecked_ids.update(recreated)  # compared again at the next plan, whether or not the metadata is due
        skipped = {}
        for topic, (old, new) in sorted(recreated.items()):
            parts = sorted(tp for tp in end if tp[0] == topic)
            self._data_loss(
                f"topic {topic} was deleted and created again (its topic id changed from {old} to {new}) "
                f"after the batch replayed from the checkpoint was planned"
                f"{unread_records([tp for tp in parts if tp in start], start, end)}",
                then="the replayed batch skips it; the next batch reads it again from its log start",
            )
            self._reported_in_replay.add(topic)
            skipped.update({tp: end[tp] for tp in parts})
        return {**start, **skipped}

    def _restarted(self, base: Positions, partitions: list[TopicPartition]) -> None:
        """The query reads these partitions from a new log: their old positions are never committed again."""
        self._superseded.update({tp: base[tp] for tp in partitions})
        if self.committer is not None:
            self.committer.restart(partitions)

    def _look_up_log_ends(self, current: list[TopicPartition]) -> Positions:
        """The log ends the query reads up to: the last stable offsets under read_committed, whose high watermarks
        are then asked too (a second ListOffsets, only then) to tell partitions an open transaction holds back."""
        self._latest_seen = self.client.end(current)  # for reportLatestOffset, and to name lost records later
        if self.options.read_committed:
            self._held_back.observe(self._latest_seen, self.client.high_watermarks(current))
        return self._latest_seen

    def _restart_where_log_went_back(self, base: Positions, latest: Positions, seen_before: Positions) -> Positions:
        """A log that now ends below the query's place was recreated or truncated: data loss; with
        failOnDataLoss=false, the new log is read from its start."""
        went_back = sorted(tp for tp, offset in latest.items() if offset < base[tp])
        if not went_back:
            return base
        self._restarted(base, went_back)
        restart = self.client.beginning(went_back)
        for tp in went_back:
            self._data_loss(
                f"the log of {partition_name(*tp)} now ends at {latest[tp]}, below the query's position "
                f"{base[tp]} (topic recreated or truncated){unread_records([tp], base, seen_before)}",
                then=f"reading it again from its log start {restart[tp]}",
            )
        return {**base, **{tp: restart[tp] for tp in went_back}}

    def _cap_at_target(self, base: Positions, latest: Positions) -> Positions:
        """Under AvailableNow, nothing beyond the log ends fixed at the start of the run."""
        if self._target is None:
            return latest
        return {tp: min(latest[tp], max(base[tp], self._target.get(tp, base[tp]))) for tp in base}

    def _apply_limit(self, base: Positions, latest: Positions, limit: ReadLimit) -> Positions:
        if isinstance(limit, ReadAllAvailable):
            return latest
        if isinstance(limit, ReadMinRows) and self._target is None:
            available = sum(latest[tp] - base[tp] for tp in latest)
            waited_ms = (self._clock() - self._last_batch_at) * 1000
            if available < limit.min_rows and waited_ms < self.options.max_trigger_delay_ms:
                return base  # wait for more records or for maxTriggerDelay
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_offsets_per_trigger
        return rate_limit(base, latest, max_rows) if max_rows else latest

    def _batch_starts(self, start: Positions, end: Positions) -> Positions:
        """Where each partition's batch begins: at `start`, or at its log start for a partition that joined the
        query (no start), whose log went back (a start beyond the end) or whose topic was recreated (`start` is
        a position in the old log), as latestOffset planned it."""
        from_log_start = sorted(
            {tp for tp, until in end.items() if start.get(tp, until + 1) > until}
            | {tp for tp, old in self._superseded.items() if tp in end and start.get(tp) == old}
        )
        if not from_log_start:
            return start
        for tp in from_log_start:  # Spark commits the old position before it plans this batch: no more to leave out
            self._superseded.pop(tp, None)
        first = self.client.beginning(from_log_start)
        return {**start, **{tp: min(first[tp], end[tp]) for tp in from_log_start}}

    # -- committing ----------------------------------------------------------------------------------
    def _run_complete(self, start: Positions) -> bool:
        """Under AvailableNow: has the run read up to the ends it fixed at its start?"""
        return self._target is not None and all(
            start.get(tp, -1) >= end for tp, end in self._target.items() if tp in self._known
        )

    def _commit_completed(self, positions: Positions, final: bool = False) -> None:
        """Commit positions that a completed batch reached (the first start of a new query is not one)."""
        if self.committer is None or not positions or positions == self._initial:
            return
        if self._known and not positions.keys() <= self._known:  # partitions that no longer exist: the broker
            positions = {tp: o for tp, o in positions.items() if tp in self._known}  # would refuse them
        positions = self._without_superseded(positions)
        if not positions:
            return
        if final:
            self.committer.commit_final(positions)
        else:
            self.committer.commit(positions)

    def _without_superseded(self, positions: Positions) -> Positions:
        """`positions` without those of logs since replaced: Spark hands the old position over once more (the end
        of the batch before, committed late) before it plans the first batch of the new log, which ends the watch."""
        if not self._superseded:
            return positions
        kept = {}
        for tp, offset in positions.items():
            if self._superseded.get(tp) == offset:
                continue
            self._superseded.pop(tp, None)
            kept[tp] = offset
        return kept

    # -- the offsets JSON Spark keeps and hands back ------------------------------------------------------
    def _offsets_json(self, positions: Positions) -> dict:
        """`positions` as the offsets JSON Spark keeps, with the ids of their topics; remembered parsed, as Spark
        hands it back to partitions() and commit() and as the next latestOffset's start."""
        data = to_json_dict(positions, self._topic_ids)
        self._remember(data, positions)
        return data

    def _positions(self, data: dict) -> Positions:
        """The positions of an offsets JSON; parsed once (comparing with one already parsed is far cheaper)."""
        for known, positions in self._parsed:
            if known == data:
                return positions
        positions = from_json_dict(data)
        self._remember(data, positions)
        return positions

    def _remember(self, data: dict, positions: Positions) -> None:
        # the last few: a batch's start and end, and the end being planned
        self._parsed = [(data, positions), *(p for p in self._parsed if p[0] is not data)][:3]

    def _data_loss(self, what: str, then: str) -> None:
        report_data_loss(what, self.options.fail_on_data_loss, then)
