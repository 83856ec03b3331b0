"""The consumer group's committed offsets as the brokers report them: what Burrow or kafka-consumer-groups see.

Read with the source's own driver client (OffsetFetch for the group through a consumer that never joins it,
ListOffsets for the log ends, read uncommitted as Kafka's own tools do) for the partitions the query's options
subscribe to, at most once per interval, on the exporter's own thread: never on a query's path.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkasource.cluster.client import KafkaClient
from kafkasource.commit.metadata import CommitAuthor, parse
from kafkasource.options import SourceOptions, parse_options
from kafkasource.planning.partitions import TopicPartition

log = logging.getLogger(__name__)


@dataclass
class GroupView:
    group: str
    committed: dict[TopicPartition, int] = field(default_factory=dict)  # partitions with a commit only
    committers: dict[TopicPartition, CommitAuthor | None] = field(default_factory=dict)
    log_ends: dict[TopicPartition, int] = field(default_factory=dict)
    read_at: float | None = None
    read_errors: int = 0


def group_options(source_options: Mapping[str, str] | SourceOptions) -> SourceOptions:
    """A query's source options (as given to the reader, or already parsed), checked as the source checks them;
    they must name a kafka.group.id."""
    options = (
        source_options if isinstance(source_options, SourceOptions) else parse_options(source_options, streaming=True)
    )
    if not options.group_id:
        from kafkasource.errors import OptionError

        raise OptionError(
            "the metrics exporter reads the committed offsets of a consumer group: the source options "
            "given to it need kafka.group.id"
        )
    return options


def group_id(options: SourceOptions) -> str:
    """The group of options group_options() has checked."""
    assert options.group_id is not None
    return options.group_id


def read_group(options: SourceOptions, client: KafkaClient) -> GroupView:
    """One look at the group: committed offsets with their metadata, and the log ends, per subscribed partition.
    The client lives as long as the exporter: a client closed with a request still pending is a risk not worth
    taking once a second."""
    partitions = sorted(options.subscription.partitions(client.topics()))
    view = GroupView(group_id(options))
    if not partitions:
        return view
    for tp, (offset, metadata) in client.committed_with_metadata(partitions).items():
        if offset is not None:
            view.committed[tp] = offset
            view.committers[tp] = parse(metadata)
    view.log_ends = client.high_watermarks(partitions)
    view.read_at = time.time()
    return view
