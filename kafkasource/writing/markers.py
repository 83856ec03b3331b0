"""The batch marker of an exactly-once task, and the rule for what a task does with the marker it finds.

The marker is an offset the task's transaction commits for a consumer group no consumer ever joins, group
`<prefix>-<partition>`, on partition 0 of the marker topic (the topic option, or markerTopic), at offset N + 1. Its
metadata names the write (a stream's query id, or the id the driver gives a batch write's `save()`), the batch N
(0 for a batch write), how many records the task wrote and their digest (writing/digest.py), and the writes that
held this transactional id before. Kafka makes it visible together with the task's records, or neither, so it says
"batch N of write q is written for partition p, and these were its records" (writing/transactions.py).

It is read through a consumer's committed() under read_committed (which asks for stable offsets), not the admin
client's group offsets. confluent-kafka stores the metadata with a trailing NUL and reads it back as a C string;
the native producer stores it alike, so a marker either path wrote reads the same.

The rule (`judge`), for the task of partition p in batch N of write q, finding marker M:

- no marker, or M of q at a batch below N: write. Batch numbers only grow with the input, so rows of batch N were
  never written by an earlier batch of q.
- M of q at batch N: an earlier attempt wrote and committed this batch (the driver died before Spark recorded it,
  or a batch write's task was retried after its commit). The task skips only when its input has M's count and
  digest: the same records. Over other records it fails, before anything is committed: skipping would lose rows
  that were never written.
- M of q at a batch above N: Spark runs a batch this sink has already gone past, which happens only when the
  checkpoint was rewound (restored from a backup, its last files removed). Its batch N may cover other offsets
  than the N that was written, so no task can tell what was written: it fails.
- M of another write r, where q held this id before r (q is among M's earlier writes): two sinks take turns under
  one transactionalIdPrefix (or q's checkpoint is older than r's, which took over since). It fails, naming r.
- M of another write r that q never followed: q takes the prefix over from r (a new checkpoint, a new batch write).
  It writes, and says so in the log.
"""

from __future__ import annotations

import enum
import json
import logging
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafkasource.cluster.client import committed_when_coordinated
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import ExactlyOnceError
from kafkasource.options.sink import SinkOptions
from kafkasource.writing.native_producer import NativeProducer

log = logging.getLogger(__name__)

MARKER_KIND = "kafkasource-sink-marker"
MARKER_PARTITION = 0  # every topic has one
# the writes a marker remembers as having held its transactional id before (36-character ids: about 600 bytes of the
# broker's offset.metadata.max.bytes, 4096 by default)
EARLIER_KEPT = 15


def partition_name(prefix: str, partition_id: int) -> str:
    """`<prefix>-<partition>`: the name of what the task of Spark partition `partition_id` holds under
    transactionalIdPrefix `prefix`, its transactional.id (writing/transactions.py) and its marker's group, so that one
    PREFIXED ACL on the prefix covers each kind (writing/failures.py tells which to grant)."""
    return f"{prefix}-{partition_id}"


def marker_group(prefix: str, partition_id: int) -> str:
    """The group whose committed offset marks what Spark partition `partition_id` of the sink has written."""
    return partition_name(prefix, partition_id)


@dataclass(frozen=True)
class MarkedBatch:
    """What a task's marker names: a stream's batch (its query's id, its batch id), or a batch write (the id the
    driver made for one save(), batch 0)."""

    query_id: str
    batch_id: int
    stream: bool = True

    def __str__(self) -> str:
        if self.stream:
            return f"batch {self.batch_id} of query {self.query_id}"
        return f"batch write {self.query_id}"


@dataclass(frozen=True)
class Marker:
    query_id: str
    batch_id: int
    records: int | None = None  # how many records the batch's task wrote (None: a marker of an older kafkasource)
    digest: str | None = None  # their digest (writing/digest.py)
    earlier: tuple[str, ...] = ()  # the writes that held this transactional id before query_id, oldest first
    at_ms: int | None = None  # when the task wrote it, by the executor's clock (jobs/takeover.py compares it)

    def followed(self, query_id: str) -> tuple[str, ...]:
        """The `earlier` of a marker `query_id` writes after this one."""
        if query_id == self.query_id:
            return self.earlier
        return (*[q for q in self.earlier if q != query_id], self.query_id)[-EARLIER_KEPT:]


def marker_metadata(
    batch: MarkedBatch,
    partition_id: int,
    earlier: tuple[str, ...],
    records: int | None,
    digest: str | None,
    at_ms: int | None = None,
) -> str:
    fields: dict[str, object] = {"kind": MARKER_KIND, "queryId": batch.query_id, "batchId": batch.batch_id}
    fields["partition"] = partition_id
    if records is not None:
        fields.update(records=records, digest=digest, at=int(time.time() * 1000) if at_ms is None else at_ms)
    if earlier:
        fields["earlier"] = list(earlier)
    return json.dumps(fields, separators=(",", ":"))


def parse_marker(offset: int, metadata: str | None) -> Marker | None:
    """The marker a committed offset holds; None for no commit, or a commit that is not the sink's marker."""
    if offset < 0 or not metadata:
        return None
    try:
        found = json.loads(metadata)
    except ValueError:
        return None
    if not isinstance(found, dict) or found.get("kind") != MARKER_KIND:
        return None
    query_id, batch_id = found.get("queryId"), found.get("batchId")
    if not isinstance(query_id, str) or type(batch_id) is not int or offset != batch_id + 1:
        return None
    records, digest, earlier = found.get("records"), found.get("digest"), found.get("earlier", [])
    if type(records) is not int or not isinstance(digest, str):
        records, digest = None, None
    if not isinstance(earlier, list) or not all(isinstance(q, str) for q in earlier):
        earlier = []
    at = found.get("at")
    return Marker(query_id, batch_id, records, digest, tuple(earlier), at if type(at) is int else None)


class Verdict(enum.Enum):
    WRITE = "write"  # nothing of this batch is written for the partition: write it
    COMPARE = "compare"  # the marker says this batch is written: skip it if the input is the one written


def judge(marker: Marker | None, batch: MarkedBatch, prefix: str, partition_id: int) -> Verdict:
    """What the task of `partition_id` in `batch` does, having found `marker` (the rule in this module's
    docstring); an ExactlyOnceError where writing or skipping could lose or duplicate records."""
    if marker is None or (marker.query_id == batch.query_id and marker.batch_id < batch.batch_id):
        return Verdict.WRITE
    if marker.query_id == batch.query_id:
        if marker.batch_id == batch.batch_id:
            return Verdict.COMPARE
        raise ExactlyOnceError(
            f"the checkpoint is behind what this sink already wrote: Spark runs {batch}, but the marker of "
            f"transactionalIdPrefix {prefix} for partition {partition_id} says batch {marker.batch_id} of that "
            "query is written. The checkpoint was rewound (restored from a backup, or its last offsets/commits "
            "files removed), so this batch may cover other input than the one written, and writing or skipping it "
            "could duplicate or lose records; nothing of it was committed. Restore the newest checkpoint, or start "
            "the query with a new checkpoint from where the written batches end (docs: Writing to Kafka, Recovery)"
        )
    if batch.query_id in marker.earlier:
        raise ExactlyOnceError(
            f"another sink writes under transactionalIdPrefix {prefix}: partition {partition_id}'s marker names "
            f"query {marker.query_id} (its batch {marker.batch_id}), which took the prefix over after this query "
            f"({batch.query_id}) had written under it. Either both run at once, or this query's checkpoint is "
            "older than that query's; nothing of this batch was committed. Give every query and job its own "
            "transactionalIdPrefix, and stop the other query first"
        )
    if not batch.stream:  # every save() is a new write: taking over from the one before is the ordinary case
        log.debug("%s takes transactionalIdPrefix %s partition %d over from %s", batch, prefix, partition_id, marker)
        return Verdict.WRITE
    log.info(
        "%s takes transactionalIdPrefix %s partition %d over from %s (its marker names batch %d of it): a new "
        "checkpoint or a new write for this sink. If %s did not stop cleanly, its last batch may be written again: "
        "restart a crashed query from its own checkpoint, not a new one",
        batch,
        prefix,
        partition_id,
        marker.query_id,
        marker.batch_id,
        marker.query_id,
    )
    return Verdict.WRITE


def check_replay(marker: Marker, batch: MarkedBatch, prefix: str, partition_id: int, records: int, digest: str) -> None:
    """Raise unless the replayed task's input (`records` of `digest`) is what `marker` says was written."""
    if marker.records == records and marker.digest == digest:
        return
    written = (
        f"{marker.records:,} records of digest {marker.digest}"
        if marker.records is not None
        else "records whose count and digest it does not keep (a marker of an older kafkasource)"
    )
    raise ExactlyOnceError(
        f"the checkpoint is behind what this sink already wrote: Spark runs {batch} again, whose part for "
        f"partition {partition_id} is written under transactionalIdPrefix {prefix} as {written}, but the task now "
        f"holds {records:,} records of digest {digest}. The checkpoint was rewound or the query changed since "
        "(other offsets, other partitions), so skipping would lose records and writing would duplicate some; "
        "nothing of it was committed. Restore the newest checkpoint, or start the query with a new checkpoint from "
        "where the written batches end (docs: Writing to Kafka, Recovery)"
    )


def marker_consumer(options: SinkOptions, group: str) -> Consumer:
    """The consumer that reads the marker of `group` (and names that group to a transaction): it never joins it, and
    reads committed whatever kafka.isolation.level says, since a marker still in a transaction is not written yet."""
    return Consumer(
        sign_in.ready(
            options.client_config(
                **{"group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed"}
            )
        )
    )


def read_marker(consumer: Consumer, options: SinkOptions, timeout: float) -> Marker | None:
    """The task's marker (its group's committed offset on the marker partition)."""
    found = committed_when_coordinated(
        consumer,
        [TopicPartition(marker_topic(options), MARKER_PARTITION)],
        time.monotonic() + timeout,
        "reading the batch marker",
    )[0]
    if found.error is not None:
        raise KafkaException(found.error)
    return parse_marker(found.offset, found.metadata)


# between two tries of a marker the coordinator refused for now: a few of librdkafka's own retry backoffs
MARKER_RETRY_BACKOFF_S = 0.25


def send_marker(producer, consumer: Consumer, offset: TopicPartition, group: str, timeout: float) -> None:
    """The marker's offset into the open transaction, tried again until `timeout` while the coordinator refuses it
    for now: right after a node went away, the coordinator still writing the task's previous commit into partitions
    whose leaders moved answers CONCURRENT_TRANSACTIONS for seconds, and librdkafka retries that only a few times
    (about 400 ms) before it hands the retriable error back to the caller. An error that needs the transaction
    aborted is never tried again."""
    deadline, left = time.monotonic() + timeout, timeout
    while True:
        try:
            _send_marker_once(producer, consumer, offset, group, left)
            return
        except KafkaException as exc:
            error = exc.args[0]
            if not error.retriable() or error.txn_requires_abort() or error.fatal():
                raise
            if time.monotonic() + MARKER_RETRY_BACKOFF_S >= deadline:
                raise
            log.info("the batch marker of group %s is tried again: %s", group, error.str())
        time.sleep(MARKER_RETRY_BACKOFF_S)
        left = max(deadline - time.monotonic(), 0.1)


def _send_marker_once(producer, consumer: Consumer, offset: TopicPartition, group: str, timeout: float) -> None:
    """The native producer names the group by its id alone, confluent-kafka's takes the marker consumer's group
    metadata."""
    if isinstance(producer, NativeProducer):
        producer.send_marker(offset.topic, offset.partition, offset.offset, offset.metadata, group, timeout)
    else:
        producer.send_offsets_to_transaction([offset], consumer.consumer_group_metadata(), timeout)


def marker_topic(options: SinkOptions) -> str:
    if options.marker_topic is None:  # parse_sink_options gives every exactly-once write one
        raise ValueError("exactly-once options without a marker topic")
    return options.marker_topic
