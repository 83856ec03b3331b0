"""The streaming reader: plans micro-batches on the driver, reads ranges on executors, commits.

When a batch has completed, Spark calls latestOffset(start) with `start` = the end of that batch (on
every trigger, idle or not, and once more at the end of an AvailableNow run), while commit(end)
arrives one batch late, and not at all for the last batch of an AvailableNow run. Both signals
commit; the committer only moves forward. That final latestOffset of an AvailableNow run is the
last chance to commit: Spark ends the run right after it, so that commit waits for its answer.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows,
                                              SupportsTriggerAvailableNow)

from kafkasource.client import KafkaClient
from kafkasource.commit import OffsetCommitter
from kafkasource.dataloss import report_data_loss
from kafkasource.fetch import FetchConfig
from kafkasource.offsets import from_json_dict, to_json_dict
from kafkasource.partitions import Positions, TopicPartition, describe, partition_name
from kafkasource.options import SourceOptions
from kafkasource.packed import read_ranges
from kafkasource.ranges import OffsetRange, batch_ranges, pack_ranges, rate_limit, split_ranges
from kafkasource import shutdown

log = logging.getLogger(__name__)


class KafkaInputPartition(InputPartition):
    """One Spark task: one offset range of one topic-partition, or several small ones (packRecordsPerTask)."""

    def __init__(self, ranges: tuple[OffsetRange, ...]):
        super().__init__(ranges)
        self.ranges = ranges


def fetch_config(options: SourceOptions) -> FetchConfig:
    return FetchConfig(options.client_config(), options.include_headers, options.fail_on_data_loss,
                       options.poll_timeout_ms, options.group_id, options.read_path)


def plan_partitions(ranges: list[OffsetRange], options: SourceOptions) -> list[KafkaInputPartition]:
    split = split_ranges(ranges, options.min_partitions)
    return [KafkaInputPartition(task) for task in pack_ranges(split, options.pack_records_per_task)]


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions):
        self.options = options
        self.fetch_config = fetch_config(options)
        self._client: KafkaClient | None = None
        self._committer: OffsetCommitter | None = None
        self._initial: Positions | None = None  # what initialOffset() returned in this run: not yet read
        self._target: Positions | None = None  # Trigger.AvailableNow: the log ends when the run started
        self._latest_seen: Positions | None = None
        self._known: set[TopicPartition] = set()
        self._last_batch_at = time.monotonic()
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
    def client(self) -> KafkaClient:
        if self._client is None:
            self._client = KafkaClient(self.options)
        return self._client

    @property
    def committer(self) -> OffsetCommitter | None:
        if self._committer is None and self.options.commit_mode != "none":
            asynchronous = self.options.commit_mode == "async"
            self._committer = OffsetCommitter(
                self.options.group_id, self.options.commit_mode, self.options.commit_timeout_ms,
                lambda on_commit: self.client.new_group_consumer(**({"on_commit": on_commit} if asynchronous else {})))
        return self._committer

    def _current_partitions(self) -> list[TopicPartition]:
        partitions = self.options.subscription.partitions(self.client.topics())
        self._known = set(partitions)
        return partitions

    # -- the DataSourceStreamReader protocol --------------------------------------------------------
    def initialOffset(self) -> dict:
        partitions = self._current_partitions()
        positions = self.options.starting.resolve(partitions, self.client)
        self._initial = positions
        log.info("new query over %s starts at %s (%s)", self.options.subscription.describe(),
                 to_json_dict(positions), self.options.starting)
        return to_json_dict(positions)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.client.end(self._current_partitions())
        log.info("Trigger.AvailableNow: reading up to %s", to_json_dict(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        start_positions = from_json_dict(start)
        self._commit_completed(start_positions, final=self._run_complete(start_positions))
        current = self._current_partitions()
        seen_before = self._latest_seen or {}
        vanished = [tp for tp in start_positions if tp not in self._known]
        if vanished:
            one = len(vanished) == 1
            self._data_loss(f"{describe(vanished)} no longer exist{'s' if one else ''} in the cluster (topic deleted?)"
                            f"{_unread(vanished, start_positions, seen_before)}",
                            then=f"the query stops reading {'it' if one else 'them'}")
        new = [tp for tp in current if tp not in start_positions]
        base = {tp: start_positions[tp] for tp in current if tp in start_positions}
        if new:  # new partitions join at their earliest offset, as in the built-in source
            base.update(self.client.beginning(new))
            log.info("new partitions join the query: %s", describe(new))
        latest = self.client.end(current)
        self._latest_seen = latest
        went_back = [tp for tp in current if latest[tp] < base[tp]]
        if went_back:  # recreated or truncated: with failOnDataLoss=false, read the new log from its start
            restart = self.client.beginning(went_back)
            for tp in went_back:
                self._data_loss(f"the log of {partition_name(*tp)} now ends at {latest[tp]}, below the query's position "
                                f"{base[tp]} (topic recreated or truncated){_unread([tp], base, seen_before)}",
                                then=f"reading it again from its log start {restart[tp]}")
                base[tp] = restart[tp]
        if self._target is not None:  # AvailableNow: nothing beyond the ends fixed at the start of the run
            latest = {tp: min(latest[tp], max(base[tp], self._target.get(tp, base[tp]))) for tp in current}
        end = self._apply_limit(base, latest, limit)
        if end == start_positions:
            return start
        if any(end[tp] > base[tp] for tp in end):
            self._last_batch_at = time.monotonic()
        return to_json_dict(end)

    def _apply_limit(self, base: Positions, latest: Positions, limit: ReadLimit) -> Positions:
        if isinstance(limit, ReadAllAvailable):
            return latest
        if isinstance(limit, ReadMinRows) and self._target is None:
            available = sum(latest[tp] - base[tp] for tp in latest)
            waited_ms = (time.monotonic() - self._last_batch_at) * 1000
            if available < limit.min_rows and waited_ms < self.options.max_trigger_delay_ms:
                return base  # wait for more records or for maxTriggerDelay
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else self.options.max_offsets_per_trigger
        return rate_limit(base, latest, max_rows) if max_rows else latest

    def reportLatestOffset(self) -> dict | None:
        return to_json_dict(self._latest_seen) if self._latest_seen is not None else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        start_positions, end_positions = from_json_dict(start), from_json_dict(end)
        # partitions that joined, and partitions read again from their start after their log went back
        new = [tp for tp in end_positions if start_positions.get(tp, end_positions[tp] + 1) > end_positions[tp]]
        if new:
            first = self.client.beginning(new)
            start_positions.update({tp: min(first[tp], end_positions[tp]) for tp in new})
        return plan_partitions(batch_ranges(start_positions, end_positions), self.options)

    def read(self, partition: KafkaInputPartition):
        return read_ranges(partition.ranges, self.fetch_config)

    def commit(self, end: dict) -> None:
        self._commit_completed(from_json_dict(end))

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

    # -- helpers -----------------------------------------------------------------------------------
    def _run_complete(self, start: Positions) -> bool:
        """Under AvailableNow: has the run read up to the ends it fixed at its start?"""
        return self._target is not None and all(start.get(tp, -1) >= end for tp, end in self._target.items()
                                                if tp in self._known)

    def _commit_completed(self, positions: Positions, final: bool = False) -> None:
        """Commit positions that a completed batch reached (the first start of a new query is not one)."""
        if self.committer is None or not positions or positions == self._initial:
            return
        if self._known:  # leave alone partitions that no longer exist: the broker would refuse them
            positions = {tp: o for tp, o in positions.items() if tp in self._known}
        if final:
            self.committer.commit_final(positions)
        else:
            self.committer.commit(positions)

    def _data_loss(self, what: str, then: str) -> None:
        report_data_loss(what, self.options.fail_on_data_loss, then)


def _unread(partitions: list[TopicPartition], positions: Positions, seen: Positions) -> str:
    """Records of `partitions` that the query had seen in the log (at its previous look) but not read."""
    lost = {tp: seen[tp] - positions[tp] for tp in partitions if seen.get(tp, -1) > positions[tp]}
    if not lost:
        return "; it held no record the query had seen and not read"
    ranges = ", ".join(f"{partition_name(t, p)} {positions[(t, p)]}..{positions[(t, p)] + n - 1}" for (t, p), n in sorted(lost.items()))
    total = sum(lost.values())
    return f"; at least {total} record{'' if total == 1 else 's'} the query had not read are lost ({ranges})"
