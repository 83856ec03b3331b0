"""Offset arithmetic for planning: the ranges of a batch, splitting them, and sharing a rate limit.

Pure functions over positions, no broker: fast to test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise

from kafkasource.planning.partitions import Positions, TopicPartition


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, until) of one topic-partition; `until` is a position (next offset to read)."""

    topic: str
    partition: int
    start: int
    until: int

    @property
    def size(self) -> int:
        return self.until - self.start


def batch_ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """One range per partition that advances between `start` and `end` (partitions absent from `start`
    must have been given their first position by the caller)."""
    moved = sorted((tp, until) for tp, until in end.items() if until > start[tp])  # the few among thousands, sorted
    return [OffsetRange(t, p, start[(t, p)], until) for (t, p), until in moved]


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """With minPartitions above the number of ranges, cut large ranges into parts, in proportion to size
    (as Spark's KafkaOffsetRangeCalculator does), so that at least min_partitions tasks exist."""
    if not min_partitions or min_partitions <= len(ranges):
        return ranges
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, min(r.size, math.ceil(r.size / total * min_partitions)))
        step = r.size / parts
        bounds = [r.start + round(i * step) for i in range(parts)] + [r.until]
        out.extend(OffsetRange(r.topic, r.partition, a, b) for a, b in pairwise(bounds) if b > a)
    return out


def pack_ranges(ranges: list[OffsetRange], records_per_task: int | None) -> list[tuple[OffsetRange, ...]]:
    """The ranges grouped into Spark tasks. Without a budget, a task per range. With one, ranges smaller than
    the budget share tasks of at most `records_per_task` records; a range as large keeps a task of its own.
    A task costs Spark tens of milliseconds whatever it reads, which dominates a batch of many tiny ranges."""
    if not records_per_task:
        return [(r,) for r in ranges]
    tasks: list[tuple[OffsetRange, ...]] = []
    packed: list[OffsetRange] = []
    for r in ranges:
        if r.size >= records_per_task:
            tasks.append((r,))
            continue
        if packed and sum(p.size for p in packed) + r.size > records_per_task:
            tasks.append(tuple(packed))
            packed = []
        packed.append(r)
    if packed:
        tasks.append(tuple(packed))
    return tasks


# A stream's batch packs its thin ranges by itself (packRecordsPerTask not given) once it has this many ranges under
# this many records: a task costs Spark tens of milliseconds and, with a Python sink, two Python workers, so a wide
# topic at a trickle planned a task per partition that moved and its triggers grew to seconds; packed, a trigger
# costs what one partition's does. Fewer thin ranges keep a task each, read by the native consumer where built.
STREAM_PACK_RECORDS = 1000
STREAM_PACK_MIN_RANGES = 8


def stream_packing(
    ranges: list[OffsetRange], requested: int | None, read_path: str, min_partitions: int | None
) -> int | None:
    """The packRecordsPerTask a stream's batch of `ranges` is planned with: the user's where given; none where
    readPath=native asks for the native consumer, which reads one range a task, or minPartitions asks for at least
    that many tasks; else STREAM_PACK_RECORDS once STREAM_PACK_MIN_RANGES ranges are thinner than that."""
    if requested is not None or read_path == "native" or min_partitions:
        return requested
    thin = sum(1 for r in ranges if r.size < STREAM_PACK_RECORDS)
    return STREAM_PACK_RECORDS if thin >= STREAM_PACK_MIN_RANGES else None


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_records: int
) -> Positions:
    """End positions holding at most `max_records` records in all, shared in proportion to each
    partition's backlog. So that a small backlog is not starved by large ones: when the limit allows
    one record per backlogged partition, each gets one first and the rest is shared in proportion;
    otherwise partitions whose share rounds to zero are served first from what rounding leaves over."""
    backlog = {tp: max(0, latest[tp] - start[tp]) for tp in latest}
    total = sum(backlog.values())
    if total <= max_records:
        return dict(latest)
    waiting = sum(1 for size in backlog.values() if size > 0)
    first = {tp: int(size > 0 and max_records >= waiting) for tp, size in backlog.items()}
    budget, rest = max_records - sum(first.values()), total - sum(first.values())  # rest > budget >= 0
    share = {tp: first[tp] + (size - first[tp]) * budget // rest for tp, size in backlog.items()}
    left = max_records - sum(share.values())
    # zero shares first, then by the fraction rounding dropped; ties by name for determinism
    order = sorted(
        (tp for tp, size in backlog.items() if size > share[tp]),
        key=lambda tp: (share[tp] > 0, -(((backlog[tp] - first[tp]) * budget) % rest), tp),
    )
    for tp in order[:left]:
        share[tp] += 1
    return {tp: start[tp] + share[tp] for tp in latest}
