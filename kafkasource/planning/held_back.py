"""Under read_committed: noticing a transaction that stays open and holds a partition back."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkasource.planning.partitions import Positions, TopicPartition, partition_name

log = logging.getLogger(__name__)

# Under read_committed, a partition whose last stable offset has not moved for this long while records wait above
# it is reported, and again at most this often while it stays so. A minute: Kafka's default transaction.timeout.ms,
# so a transaction open longer is unusual, and a warning a minute says why the query reads nothing there without
# flooding the log
HELD_BACK_WARN_AFTER_S = 60.0
HELD_BACK_WARN_EVERY_S = 60.0


class HeldBackWatch:
    """Under read_committed, partitions an open transaction holds back: their last stable offset stays put below
    the high watermark, and the query reads nothing from there on until the transaction ends. Once a partition has
    been held at the same offset for HELD_BACK_WARN_AFTER_S, a warning names it, the offset, the log end and how
    long, and again at most every HELD_BACK_WARN_EVERY_S while it stays; a stable offset that moves starts the
    count again (a busy transactional producer holds partitions back briefly, and never for long at one offset)."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._held: dict[TopicPartition, tuple[int, float, float | None]] = {}  # stable offset, since, last warned

    def observe(self, stable: Positions, high: Positions) -> None:
        now = self._clock()
        held = {}
        for tp, offset in sorted(stable.items()):
            end = high.get(tp, offset)
            if offset >= end:
                continue
            at, since, warned = self._held.get(tp, (offset, now, None))
            if at != offset:
                since, warned = now, None
            if now - since >= HELD_BACK_WARN_AFTER_S and (warned is None or now - warned >= HELD_BACK_WARN_EVERY_S):
                log.warning(
                    "an open transaction holds back %s: its last stable offset has stayed at %d for %.0f s "
                    "while the log ends at %d; under kafka.isolation.level=read_committed the query reads "
                    "nothing from offset %d on until the transaction commits or aborts (the brokers abort it "
                    "once its producer's transaction.timeout.ms has passed; kafka-transactions.sh "
                    "find-hanging lists transactions that never end)",
                    partition_name(*tp),
                    offset,
                    now - since,
                    end,
                    offset,
                )
                warned = now
            held[tp] = (offset, since, warned)
        self._held = held
