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
from kafkasource.formats.decoding import decode_batches
from kafkasource.options import SourceOptions
from kafkasource.planning.offsets import Cluster, to_json_dict, topic_ids_of
from kafkasource.planning.partitions import Positions, TopicPartition
from kafkasource.planning.ranges import batch_ranges, stream_packing
from kafkasource.planning.stream_plan import Limit, StreamPlan
from kafkasource.reading.input_partition import KafkaInputPartition, input_partitions
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
        self.fetch_config = self.options.fetch_config()
        self._client = client
        self._committer = committer
        self._initial: Positions | None = None  # what initialOffset() returned in this run: not yet read
        self._initial_json: dict | None = None
        self._place: dict | None = None  # pyspark 4.0/4.1: the last end planned or handed over (see latestOffset)
        self.plan = StreamPlan(self.options, self._cluster, self._restart_commits, clock)
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

    def _cluster(self) -> Cluster:
        return self.client

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
        current = self.plan.current_partitions(refresh=True)
        self.plan.topic_ids.update(self.client.topic_ids(sorted({t for t, _ in current})))
        positions = self.options.start().resolve(current, self.client)
        self._initial = positions
        log.info(
            "new query over %s starts at %s (%s)",
            self.options.subscription.describe(),
            to_json_dict(positions),
            self.options.starting,
        )
        self._initial_json = self.plan.offsets_json(positions)
        return self._initial_json

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.plan.target = self.client.end(self.plan.current_partitions(refresh=True))
        log.info("Trigger.AvailableNow: reading up to %s", to_json_dict(self.plan.target))

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
        start_positions = self.plan.positions(start)
        self.plan.keep_checkpoint_ids(topic_ids_of(start))
        try:
            end = self.plan.next_end(start_positions, self._limit(limit))
        finally:  # the batch that ended at `start` is complete even when planning the next one fails
            self._commit_completed(start_positions, final=self.plan.run_complete(start_positions))
        planned = self.plan.offsets_json(end)
        # a changed id alone is a new end too: the checkpoint must keep the id the next batch is read under
        self._place = start if planned == start else planned
        return self._place

    def reportLatestOffset(self) -> dict | None:
        return self.plan.latest_json()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        self._place = end  # at a restart Spark hands over its checkpoint's last end here, as partitions(end, end)
        end_positions = self.plan.positions(end)
        start_positions = self.plan.positions(start)
        planned_under = topic_ids_of(end)
        # a batch planned under ids this run does not hold (the usual batch was planned by latestOffset just before)
        if any(self.plan.topic_ids.get(topic) != topic_id for topic, topic_id in planned_under.items()):
            start_positions = self.plan.check_replayed_batch(planned_under, start_positions, end_positions)
        start_positions = self.plan.batch_starts(start_positions, end_positions)
        ranges = batch_ranges(start_positions, end_positions)
        packing = stream_packing(
            ranges, self.options.pack_records_per_task, self.options.read_path, self.options.min_partitions
        )
        return input_partitions(ranges, self.options.min_partitions, packing)

    def read(self, partition: InputPartition):
        assert isinstance(partition, KafkaInputPartition)  # a micro-batch that plans no task runs none
        return decode_batches(read_ranges(partition.ranges, self.fetch_config), self.options.decoding)

    def commit(self, end: dict) -> None:
        self._commit_completed(self.plan.positions(end))

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

    def _limit(self, limit: ReadLimit) -> Limit | None:
        """Spark's read limit as the plan takes it; with minOffsetsPerTrigger, maxOffsetsPerTrigger still caps."""
        if isinstance(limit, ReadMinRows):
            return Limit(self.options.max_offsets_per_trigger, limit.min_rows)
        if isinstance(limit, ReadMaxRows):
            return Limit(limit.max_rows)
        return None

    # -- committing ----------------------------------------------------------------------------------
    def _restart_commits(self, partitions: list[TopicPartition]) -> None:
        if self.committer is not None:
            self.committer.restart(partitions)

    def _commit_completed(self, positions: Positions, final: bool = False) -> None:
        """Commit positions that a completed batch reached (the first start of a new query is not one)."""
        if self.committer is None or not positions or positions == self._initial:
            return
        known = self.plan.known
        if known and not positions.keys() <= known:  # partitions that no longer exist: the broker would refuse them
            positions = {tp: o for tp, o in positions.items() if tp in known}
        positions = self.plan.without_superseded(positions)
        if not positions:
            return
        if final:
            self.committer.commit_final(positions)
        else:
            self.committer.commit(positions)
