"""Before the route job starts a new checkpoint: whether the query that wrote under the sink's prefix before left a
batch its source group never committed, which this run reads again and writes again.

A new checkpoint is a new query id, whose tasks take the prefix over (writing/markers.py) and write whatever they
read. The route job's source starts from the group's committed offsets, which kafkasource commits only once a batch
completed: a batch whose tasks committed their transactions while its query crashed (or stopped before its next
trigger committed it) is in the target already, and comes back. Its tell: a marker written after the group's last
commit. Markers carry the executor's clock and commits the driver's; they are compared as they are, so a warning
may come from hosts whose clocks disagree by more than a batch takes.
"""

from __future__ import annotations

import datetime
import logging
import time

from confluent_kafka import TopicPartition

from kafkasource.cluster.client import committed_when_coordinated
from kafkasource.jobs.plan import positions
from kafkasource.options import SourceOptions
from kafkasource.options.sink import SinkOptions
from kafkasource.writing.markers import MARKER_PARTITION, Marker, marker_consumer, marker_group, parse_marker

log = logging.getLogger("kafkasource.jobs")

TIMEOUT_S = 30
MAX_GROUPS = 256  # marker groups read: one per Spark partition of the sink, as many as the source has partitions


def unfinished_batch(source: SourceOptions, sink: SinkOptions) -> str | None:
    """The warning to log when a marker under the sink's prefix is newer than the source group's last commit (or the
    group has none); None when every marker predates it, or there is no marker."""
    prefix, group = sink.transactional_id_prefix, source.group_id
    if prefix is None or sink.marker_topic is None or group is None:
        return None
    found = positions(source)  # the subscription's partitions, with the group's commits and who made them
    times = [p.committer.at_ms for p in found if p.committer is not None and p.committer.at_ms is not None]
    last_commit = max(times) if times else None
    later: list[tuple[int, Marker]] = []
    for partition in range(min(len(found), MAX_GROUPS)):
        marker = _marker(sink, marker_group(prefix, partition))
        if marker is not None and marker.at_ms is not None and (last_commit is None or marker.at_ms > last_commit):
            later.append((partition, marker))
    if not later:
        return None
    partition, marker = max(later, key=lambda each: each[1].at_ms or 0)
    committed = (
        f"after group {group}'s last commit at {_time(last_commit)}"
        if last_commit is not None
        else f"and group {group} has no committed offset"
    )
    return (
        f"this run starts a new checkpoint, and the sink's transactionalIdPrefix {prefix} holds batch "
        f"{marker.batch_id} of query {marker.query_id} for partition {partition} (and {len(later) - 1} more), "
        f"written at {_time(marker.at_ms)}, {committed}: that batch never reached the group's commit (its query "
        "crashed, or stopped before its next trigger committed it), so this run reads it again from the group's "
        f"committed offsets and writes it again. To write it once, stop this run and restart query "
        f"{marker.query_id} from its own checkpoint"
    )


def _marker(sink: SinkOptions, group: str) -> Marker | None:
    assert sink.marker_topic is not None
    consumer = marker_consumer(sink, group)
    try:
        asked = [TopicPartition(sink.marker_topic, MARKER_PARTITION)]
        found = committed_when_coordinated(consumer, asked, time.monotonic() + TIMEOUT_S, "reading a batch marker")[0]
    finally:
        consumer.close()
    return parse_marker(found.offset, found.metadata) if found.error is None else None


def _time(ms: int | None) -> str:
    return datetime.datetime.fromtimestamp((ms or 0) / 1000, datetime.UTC).isoformat(timespec="milliseconds")
