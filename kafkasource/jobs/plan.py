"""What the jobs tell before or instead of reading: per-partition positions from the brokers, as tables.

These need no Spark: the driver-side client of the source answers them (metadata, ListOffsets,
OffsetFetch), so `--dry-run` and the lag job work before any session starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kafkasource.cluster.client import KafkaClient
from kafkasource.commit.metadata import CommitAuthor, parse
from kafkasource.options import SourceOptions
from kafkasource.planning.partitions import TopicPartition
from kafkasource.runtime.secrets import redact


@dataclass(frozen=True)
class PartitionPositions:
    partition: TopicPartition
    committed: int | None  # the group's committed offset; None without a group or a commit
    start: int | None  # where a new query would start reading (None: not asked)
    end: int | None  # where a batch read would stop (None: not asked, or a stream)
    log_start: int
    log_end: int
    committer: CommitAuthor | None = None  # who made the commit, as its metadata says

    def to_read(self) -> int:
        """Records from where a read starts to where it ends (the log end for a stream); the start was asked."""
        if self.start is None:
            raise ValueError(f"the start of {self.partition} was not asked")
        return max(0, (self.end if self.end is not None else self.log_end) - self.start)

    @property
    def lag(self) -> int:
        """Records the group has not consumed: from its commit, or the whole log without one."""
        return max(0, self.log_end - (self.committed if self.committed is not None else self.log_start))


def positions(options: SourceOptions, resolve: bool = False) -> list[PartitionPositions]:
    # librdkafka's informational lines (log level 6) would mix into the tables; warnings still show
    client = KafkaClient(replace(options, kafka_config={"log_level": "4", **options.kafka_config}))
    try:
        partitions = sorted(options.subscription.partitions(client.topics()))
        if not partitions:
            return []
        committed = client.committed_with_metadata(partitions) if options.group_id else {}
        starts = options.start().resolve(partitions, client) if resolve else {}
        ends = options.end().resolve(partitions, client) if resolve and options.ending else {}
        log_start, log_end = client.beginning(partitions), client.end(partitions)
    finally:
        client.close()
    return [
        PartitionPositions(
            tp,
            committed.get(tp, (None, ""))[0],
            starts.get(tp),
            ends.get(tp),
            log_start[tp],
            log_end[tp],
            parse(committed.get(tp, (None, ""))[1]),
        )
        for tp in partitions
    ]


def table(headers: list[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table, numbers right-aligned, like Kafka's own tools print."""
    cells = [headers] + [
        ["-" if v is None else (f"{v}" if not isinstance(v, int) else str(v)) for v in row] for row in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(isinstance(row[i], int) or row[i] is None for row in rows) for i in range(len(headers))]
    return "\n".join(
        "  ".join(
            c.rjust(w) if num and i else c.ljust(w)
            for i, (c, w, num) in enumerate(zip(row, widths, numeric, strict=True))
        ).rstrip()
        for row in cells
    )


def describe_source(options: SourceOptions) -> str:
    """One line naming what is read and how, secrets masked."""
    kafka = ", ".join(f"{k}={v}" for k, v in sorted(redact(options.kafka_config).items()))
    parts = [options.subscription.describe(), f"bootstrap.servers={options.bootstrap_servers}"]
    if options.group_id:
        parts.append(f"group {options.group_id}, commitMode={options.commit_mode}")
    if options.max_offsets_per_trigger:
        parts.append(f"maxOffsetsPerTrigger={options.max_offsets_per_trigger}")
    return "; ".join(parts) + (f"; kafka options: {kafka}" if kafka else "")
