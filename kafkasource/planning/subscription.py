"""Which topic-partitions the query reads, given what the cluster holds now.

Three small subscribers, after Flink's TopicListSubscriber, TopicPatternSubscriber and
PartitionSetSubscriber. Each takes the cluster's topics (name -> partition count, one metadata
request made by the client) and returns the partitions to read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Protocol

from kafkasource.planning.partitions import TopicPartition, partition_name

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


class Subscription(Protocol):
    option: ClassVar[str]  # the option it comes from

    def partitions(self, topics: Mapping[str, int]) -> list[TopicPartition]: ...

    def named_topics(self) -> tuple[str, ...]:
        """The topics it names, each once, in order (a pattern names none)."""
        ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Subscribe:
    """subscribe=a,b: every partition of these topics (a topic that does not exist yet has none)."""

    topics: tuple[str, ...]
    option: ClassVar[str] = "subscribe"

    def partitions(self, topics: Mapping[str, int]) -> list[TopicPartition]:
        return [(t, p) for t in self.named_topics() if t in topics for p in range(topics[t])]

    def named_topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.topics))  # a topic named twice (subscribe=a,a) is read once

    def describe(self) -> str:
        return f"subscribe={','.join(self.topics)}"


@dataclass(frozen=True)
class SubscribePattern:
    """subscribePattern: topics whose name contains a match (find semantics, like Java's Matcher.find)."""

    pattern: str
    option: ClassVar[str] = "subscribePattern"

    def partitions(self, topics: Mapping[str, int]) -> list[TopicPartition]:
        regex = re.compile(self.pattern)
        return [
            (t, p) for t in sorted(topics) if t not in INTERNAL_TOPICS and regex.search(t) for p in range(topics[t])
        ]

    def named_topics(self) -> tuple[str, ...]:
        return ()

    def describe(self) -> str:
        return f"subscribePattern={self.pattern}"


@dataclass(frozen=True)
class Assign:
    """assign={"t": [0, 1]}: exactly these partitions, those that exist."""

    assigned: tuple[TopicPartition, ...]
    option: ClassVar[str] = "assign"

    def partitions(self, topics: Mapping[str, int]) -> list[TopicPartition]:
        return [(t, p) for t, p in self.assigned if p < topics.get(t, 0)]

    def named_topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for t, _ in self.assigned))

    def describe(self) -> str:
        return "assign=" + ",".join(partition_name(t, p) for t, p in self.assigned)
