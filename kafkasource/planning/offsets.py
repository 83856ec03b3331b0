"""Positions and how start/end specifications resolve to them.

A position is the next offset to read (committing N means records below N are done). Each
specification is a small object that resolves against an `OffsetLookup`, a four-method view of
the broker (after Flink's OffsetsInitializer), so the logic is testable without Kafka.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Literal, Protocol

from kafkasource.errors import NoCommittedOffsetError, OptionError
from kafkasource.planning.partitions import Positions, TopicPartition, describe, partition_name

if TYPE_CHECKING:
    from confluent_kafka import Consumer

EARLIEST = -2  # Spark's JSON markers in startingOffsets / endingOffsets
LATEST = -1

# kafka.auto.offset.reset: where a start goes when the group has no committed offset, or it lies outside the log
AutoOffsetReset = Literal["earliest", "latest", "none"]


class OutsideLog(Enum):
    """Where an explicit offset outside [log start, log end] goes."""

    FOLLOW_RESET = "follow kafka.auto.offset.reset"  # a start, as Kafka places a consumer
    NEAREST_BOUND = "the nearest end of the log"  # an end: a batch read never reaches past what exists


# The key under which a stream's offsets carry each topic's id, beside the built-in's topic -> partition -> offset
# map. Kafka topic names hold only [a-zA-Z0-9._-], so no topic can be called this; tools that read the map skip it.
TOPIC_IDS_KEY = "@topicIds"


def to_json_dict(
    positions: Mapping[TopicPartition, int], topic_ids: Mapping[str, str] | None = None
) -> dict[str, dict[str, int] | dict[str, str]]:
    """Positions in the built-in source's checkpoint shape: {"topic": {"0": 42}}; with `topic_ids`, those of the
    topics in `positions` are kept beside the map: {"topic": {"0": 42}, "@topicIds": {"topic": "<id>"}}."""
    out: dict = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    ids = {t: topic_ids[t] for t in sorted(out) if topic_ids and t in topic_ids}
    if ids:
        out[TOPIC_IDS_KEY] = ids
    return out


def from_json_dict(data: Mapping[str, Mapping[str, int]]) -> Positions:
    """The positions of an offsets JSON (the topic ids beside them left out)."""
    return {
        (topic, int(p)): int(o) for topic, parts in data.items() if topic != TOPIC_IDS_KEY for p, o in parts.items()
    }


def topic_ids_of(data: Mapping[str, Mapping]) -> dict[str, str]:
    """The topic ids an offsets JSON carries; none in offsets written before they were kept, or by the built-in."""
    return dict(data.get(TOPIC_IDS_KEY) or {})


class OffsetLookup(Protocol):
    """What resolution needs from the broker; client.KafkaClient implements it with batched requests."""

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]: ...

    def beginning(self, partitions: list[TopicPartition]) -> Positions: ...

    def end(self, partitions: list[TopicPartition]) -> Positions: ...

    def for_times(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int | None]: ...


def within_log(
    wanted: Mapping[TopicPartition, int], lookup: OffsetLookup, reset: AutoOffsetReset, what: str
) -> Positions:
    """Keep each wanted offset inside [log start, log end]; outside it, follow `reset` as Kafka does."""
    begin, end = _log_bounds(wanted, lookup)
    out: Positions = {}
    outside = []
    for tp, offset in wanted.items():
        if begin[tp] <= offset <= end[tp]:
            out[tp] = offset
        elif reset == "earliest":
            out[tp] = begin[tp]
        elif reset == "latest":
            out[tp] = end[tp]
        else:
            outside.append(f"{partition_name(*tp)} at {offset} (log holds {begin[tp]}..{end[tp]})")
    if outside:
        raise NoCommittedOffsetError(
            f"{what} outside the log for {', '.join(outside)} and kafka.auto.offset.reset=none; "
            "set kafka.auto.offset.reset to earliest or latest, or give startingOffsets explicitly"
        )
    return out


def nearest_in_log(wanted: Mapping[TopicPartition, int], lookup: OffsetLookup) -> Positions:
    """Each wanted offset, moved to the nearest end of the log if it lies outside it."""
    begin, end = _log_bounds(wanted, lookup)
    return {tp: min(max(offset, begin[tp]), end[tp]) for tp, offset in wanted.items()}


def _log_bounds(wanted: Mapping[TopicPartition, int], lookup: OffsetLookup) -> tuple[Positions, Positions]:
    if not wanted:
        return {}, {}
    partitions = list(wanted)
    return lookup.beginning(partitions), lookup.end(partitions)


@dataclass(frozen=True)
class Earliest:
    def resolve(self, partitions: list[TopicPartition], lookup: OffsetLookup) -> Positions:
        return lookup.beginning(partitions) if partitions else {}

    def __str__(self) -> str:
        return "earliest"


@dataclass(frozen=True)
class Latest:
    def resolve(self, partitions: list[TopicPartition], lookup: OffsetLookup) -> Positions:
        return lookup.end(partitions) if partitions else {}

    def __str__(self) -> str:
        return "latest"


@dataclass(frozen=True)
class Committed:
    """The group's committed offsets; `reset` (kafka.auto.offset.reset) where there is none or it is out of range."""

    reset: AutoOffsetReset = "latest"

    def resolve(self, partitions: list[TopicPartition], lookup: OffsetLookup) -> Positions:
        if not partitions:
            return {}
        committed = lookup.committed(partitions)
        missing = sorted(tp for tp in partitions if committed.get(tp) is None)
        if missing and self.reset == "none":
            raise NoCommittedOffsetError(
                f"the consumer group has no committed offset for {describe(missing)} and "
                "kafka.auto.offset.reset=none; commit offsets for them first, or set "
                "kafka.auto.offset.reset to earliest or latest"
            )
        fallback: Earliest | Latest = Earliest() if self.reset == "earliest" else Latest()
        out = fallback.resolve(missing, lookup)
        found = {tp: offset for tp in partitions if (offset := committed.get(tp)) is not None}
        out.update(within_log(found, lookup, self.reset, "committed offset"))
        return out

    def __str__(self) -> str:
        return f"committed (kafka.auto.offset.reset={self.reset})"


@dataclass(frozen=True)
class SpecificOffsets:
    """Explicit offsets per partition, -2 = earliest, -1 = latest; partitions not named use `default`.

    An offset outside the log follows `reset` (FOLLOW_RESET), or moves to the nearest end of the log.
    """

    offsets: tuple[tuple[TopicPartition, int], ...]
    default: Earliest | Latest = Latest()
    reset: AutoOffsetReset = "latest"
    outside_log: OutsideLog = OutsideLog.FOLLOW_RESET

    def resolve(self, partitions: list[TopicPartition], lookup: OffsetLookup) -> Positions:
        given = dict(self.offsets)
        explicit = {tp: o for tp, o in given.items() if tp in partitions and o >= 0}
        earliest = [tp for tp in partitions if given.get(tp) == EARLIEST]
        latest = [tp for tp in partitions if given.get(tp) == LATEST]
        unnamed = [tp for tp in partitions if tp not in given]
        out = Earliest().resolve(earliest, lookup)
        out.update(Latest().resolve(latest, lookup))
        out.update(self.default.resolve(unnamed, lookup))
        if self.outside_log is OutsideLog.NEAREST_BOUND:
            out.update(nearest_in_log(explicit, lookup))
        else:
            out.update(within_log(explicit, lookup, self.reset, "offset"))
        return out

    def __str__(self) -> str:
        return json.dumps(to_json_dict(dict(self.offsets)))


@dataclass(frozen=True)
class Timestamps:
    """The first offset whose timestamp is >= the given one (per partition, or `everywhere` for all).

    Where no record is that new, the log end, as the built-in source does.
    """

    per_partition: tuple[tuple[TopicPartition, int], ...] = ()
    everywhere: int | None = None

    def resolve(self, partitions: list[TopicPartition], lookup: OffsetLookup) -> Positions:
        given = dict(self.per_partition)
        named = {tp: (self.everywhere if self.everywhere is not None else given.get(tp)) for tp in partitions}
        unnamed = [tp for tp, ts in named.items() if ts is None]
        if unnamed:
            raise OptionError(
                f"startingOffsetsByTimestamp/endingOffsetsByTimestamp names no timestamp for {describe(unnamed)}; "
                "give one for every partition the query reads"
            )
        wanted = {tp: ts for tp, ts in named.items() if ts is not None}
        found = lookup.for_times(wanted) if wanted else {}
        none_found = [tp for tp in partitions if found.get(tp) is None]
        out = Latest().resolve(none_found, lookup)
        out.update({tp: o for tp, o in found.items() if o is not None})
        return out

    def __str__(self) -> str:
        return f"timestamp {self.everywhere}" if self.everywhere is not None else "timestamps per partition"


# where a read starts or ends, as the options say; each resolves against an OffsetLookup
OffsetSpec = Earliest | Latest | Committed | SpecificOffsets | Timestamps


class Cluster(OffsetLookup, Protocol):
    """What a stream's planning asks the brokers; cluster.client.KafkaClient answers for real."""

    def topics(self) -> dict[str, int]: ...

    def topic_ids(self, topics: list[str]) -> dict[str, str]: ...

    def new_group_consumer(self, **extra: object) -> Consumer: ...

    def high_watermarks(self, partitions: list[TopicPartition]) -> Positions: ...

    def close(self) -> None: ...
