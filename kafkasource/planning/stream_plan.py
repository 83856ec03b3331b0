"""A stream's plan, on the driver: where each micro-batch ends and where its partitions begin, with what that
takes to know (the partitions the query reads as the metadata last had them, the topic ids a recreated topic is
told by, the log ends seen last, the AvailableNow run's target) and what data loss it finds on the way.

The Spark-facing reader (kafkasource/stream.py) translates Spark's calls and read limits into these steps and
commits what completed batches reached; the plan asks the brokers only through the Cluster protocol, so the
tests drive it with a small fake of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kafkasource.errors import BrokerUnavailableError, DataLossError, KafkaSourceError
from kafkasource.planning.data_loss import report_data_loss, unread_records
from kafkasource.planning.held_back import HeldBackWatch
from kafkasource.planning.offsets import TOPIC_IDS_KEY, Cluster, from_json_dict, to_json_dict
from kafkasource.planning.partitions import Positions, TopicPartition, describe, partition_name
from kafkasource.planning.ranges import rate_limit
from kafkasource.planning.subscription import Subscription

log = logging.getLogger(__name__)


class PlanOptions(Protocol):
    """What of a query's options the plan follows (options.SourceOptions has it)."""

    @property
    def subscription(self) -> Subscription: ...
    @property
    def metadata_refresh_interval_ms(self) -> int: ...
    @property
    def read_committed(self) -> bool: ...
    @property
    def fail_on_data_loss(self) -> bool: ...
    @property
    def max_trigger_delay_ms(self) -> int: ...


@dataclass(frozen=True)
class Limit:
    """A trigger's read limit as the plan takes it: at most `max_rows` records, and with `min_rows` none until that
    many are there or maxTriggerDelay has passed since the last batch."""

    max_rows: int | None = None
    min_rows: int | None = None


class StreamPlan:
    """`client` gives the cluster when first needed (the reader makes it lazily); `on_restart` hears of partitions
    read again from a new log, whose old positions must not be committed; `clock` (seconds) times
    maxTriggerDelay and how long open transactions hold partitions back."""

    def __init__(
        self,
        options: PlanOptions,
        client: Callable[[], Cluster],
        on_restart: Callable[[list[TopicPartition]], None],
        clock: Callable[[], float],
    ):
        self.options = options
        self._client = client
        self._on_restart = on_restart
        self._clock = clock
        self.target: Positions | None = None  # Trigger.AvailableNow: the log ends when the run started
        self.latest_seen: Positions | None = None
        self.known: set[TopicPartition] = set()
        self._current: list[TopicPartition] = []  # the partitions the query reads, as the last metadata had them
        self._metadata_at: float | None = None  # when (clock) the metadata was last asked
        # as the last look found them, or as the checkpoint kept them until then: a new id is a recreated topic
        self.topic_ids: dict[str, str] = {}
        # topics whose id in topic_ids came from the checkpoint and was never compared with the cluster's: the next
        # plan compares them, whether or not the metadata is due (prepareForTriggerAvailableNow has just asked it)
        self._unchecked_ids: set[str] = set()
        self._reported_in_replay: set[str] = set()  # recreated topics a replayed batch already reported (partitions)
        self._superseded: Positions = {}  # positions in logs since replaced: never to be committed
        self._last_batch_at = clock()
        self._held_back = HeldBackWatch(clock)
        self._parsed: list[tuple[dict, Positions]] = []  # offsets JSON built or read lately, parsed

    def keep_checkpoint_ids(self, ids: dict[str, str]) -> None:
        """The ids a batch's start carries for topics this run has not looked at yet (a query restarted from its
        checkpoint): its first plan compares them with the cluster's, so a topic recreated meanwhile is found."""
        for topic, topic_id in ids.items():
            if topic not in self.topic_ids:
                self.topic_ids[topic] = topic_id
                self._unchecked_ids.add(topic)

    def next_end(self, start: Positions, limit: Limit | None) -> Positions:
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

    def _plan(self, start: Positions, limit: Limit | None, refresh: bool) -> Positions:
        seen_before = self.latest_seen or {}
        current = self.current_partitions(refresh)
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

    def current_partitions(self, refresh: bool) -> list[TopicPartition]:
        """The partitions the query reads: asked of the brokers with `refresh`, else as they were last asked."""
        if refresh:
            self._current = self.options.subscription.partitions(self._client().topics())
            self.known = set(self._current)
            self._metadata_at = self._clock()
        return self._current

    def _report_vanished(self, start: Positions, current: list[TopicPartition], seen_before: Positions) -> None:
        """Partitions the query was reading that no longer exist (topic deleted?): data loss."""
        if start.keys() <= self.known:  # the usual trigger: no set built
            return
        vanished = sorted(start.keys() - self.known)
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
        if start.keys() == self.known:  # the usual trigger: no partition joined or left
            return start
        new = [tp for tp in current if tp not in start]
        first = self._client().beginning(new) if new else {}
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
        ids = self._client().topic_ids(sorted({t for t, _ in current}))
        # compared once: an id the brokers did not give now (no DESCRIBE permission, ...) waits for the next refresh
        # rather than costing a request at every trigger
        self._unchecked_ids.clear()
        reported, self._reported_in_replay = self._reported_in_replay, set()
        recreated = {t: (self.topic_ids[t], i) for t, i in ids.items() if self.topic_ids.get(t, i) != i}
        self.topic_ids.update(ids)
        replaced = [tp for tp in previous if tp in base and tp[0] in recreated]
        if not replaced:
            return base
        self._restarted(base, replaced)
        restart = self._client().beginning(replaced)
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

    def check_replayed_batch(self, planned_under: dict[str, str], start: Positions, end: Positions) -> Positions:
        """A batch whose end carries ids this run does not hold was planned by the run before, which stopped before it
        completed: a run restarted from its checkpoint replays it first, with no latestOffset before. A topic
        recreated meanwhile would be read at positions of its old log, so the ids are compared here (one
        DescribeTopics request, once). Recreated: data loss; with failOnDataLoss=false the replayed batch skips its
        partitions, whose records went with the old log, and the next plan, comparing the same ids, reads them again
        from their new log start."""
        ids = self._client().topic_ids(sorted(planned_under))
        recreated = {t: (old, ids[t]) for t, old in planned_under.items() if ids.get(t, old) != old}
        self.topic_ids.update(planned_under)  # the ids the query's place is in, until a plan moves it to a new log
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
        self._on_restart(partitions)

    def _look_up_log_ends(self, current: list[TopicPartition]) -> Positions:
        """The log ends the query reads up to: the last stable offsets under read_committed, whose high watermarks
        are then asked too (a second ListOffsets, only then) to tell partitions an open transaction holds back."""
        self.latest_seen = self._client().end(current)  # for reportLatestOffset, and to name lost records later
        if self.options.read_committed:
            self._held_back.observe(self.latest_seen, self._client().high_watermarks(current))
        return self.latest_seen

    def _restart_where_log_went_back(self, base: Positions, latest: Positions, seen_before: Positions) -> Positions:
        """A log that now ends below the query's place was recreated or truncated: data loss; with
        failOnDataLoss=false, the new log is read from its start."""
        went_back = sorted(tp for tp, offset in latest.items() if offset < base[tp])
        if not went_back:
            return base
        self._restarted(base, went_back)
        restart = self._client().beginning(went_back)
        for tp in went_back:
            self._data_loss(
                f"the log of {partition_name(*tp)} now ends at {latest[tp]}, below the query's position "
                f"{base[tp]} (topic recreated or truncated){unread_records([tp], base, seen_before)}",
                then=f"reading it again from its log start {restart[tp]}",
            )
        return {**base, **{tp: restart[tp] for tp in went_back}}

    def _cap_at_target(self, base: Positions, latest: Positions) -> Positions:
        """Under AvailableNow, nothing beyond the log ends fixed at the start of the run."""
        if self.target is None:
            return latest
        return {tp: min(latest[tp], max(base[tp], self.target.get(tp, base[tp]))) for tp in base}

    def _apply_limit(self, base: Positions, latest: Positions, limit: Limit | None) -> Positions:
        if limit is None:
            return latest
        if limit.min_rows is not None and self.target is None:
            available = sum(latest[tp] - base[tp] for tp in latest)
            waited_ms = (self._clock() - self._last_batch_at) * 1000
            if available < limit.min_rows and waited_ms < self.options.max_trigger_delay_ms:
                return base  # wait for more records or for maxTriggerDelay
        return rate_limit(base, latest, limit.max_rows) if limit.max_rows else latest

    def batch_starts(self, start: Positions, end: Positions) -> Positions:
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
        first = self._client().beginning(from_log_start)
        return {**start, **{tp: min(first[tp], end[tp]) for tp in from_log_start}}

    def run_complete(self, start: Positions) -> bool:
        """Under AvailableNow: has the run read up to the ends it fixed at its start?"""
        return self.target is not None and all(
            start.get(tp, -1) >= end for tp, end in self.target.items() if tp in self.known
        )

    def without_superseded(self, positions: Positions) -> Positions:
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

    def offsets_json(self, positions: Positions) -> dict:
        """`positions` as the offsets JSON Spark keeps, with the ids of their topics; remembered parsed, as Spark
        hands it back to partitions() and commit() and as the next latestOffset's start."""
        data = to_json_dict(positions, self.topic_ids)
        self._remember(data, positions)
        return data

    def positions(self, data: dict) -> Positions:
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

    def latest_json(self) -> dict | None:
        """The log ends the last trigger saw, as the bare map (no topic ids). Without a read limit they are the
        planned end itself, whose offsets JSON is already built."""
        if self.latest_seen is None:
            return None
        for data, positions in self._parsed:
            if positions is self.latest_seen:
                return {topic: parts for topic, parts in data.items() if topic != TOPIC_IDS_KEY}
        return to_json_dict(self.latest_seen)

    def _data_loss(self, what: str, then: str) -> None:
        report_data_loss(what, self.options.fail_on_data_loss, then)
