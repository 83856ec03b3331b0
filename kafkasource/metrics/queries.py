"""What the exporter knows of each streaming query, built from its progress and lifecycle events.

Progress arrives in both of its shapes (classic objects, or the JSON a Spark Connect client
gets); everything is read through kafkasource.metrics.progress, which handles both. A progress is
taken once per batch id, so feeding the same progress again (from a listener and from
`query.recentProgress`) counts nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kafkasource.metrics.lag_seconds import LogEndHistory
from kafkasource.metrics.progress import (
    _as_dict,
    batch_duration_s,
    input_rows,
    positions_from_progress,
    rows_per_second,
)
from kafkasource.metrics.writes import writes_from_progress
from kafkasource.planning.partitions import Positions, TopicPartition


@dataclass
class QueryState:
    query_id: str
    name: str | None = None
    active: bool = True
    last_batch: int = -1
    batches: int = 0
    input_rows: int = 0
    rows_per_second: float = 0.0
    batch_duration_s: float = 0.0
    writes_observed: bool = False  # the query counts its writes (kafkasource.metrics.writes)
    records_written: int = 0
    bytes_written: int = 0
    last_progress_at: float | None = None
    offsets: Positions = field(default_factory=dict)
    log_ends: Positions = field(default_factory=dict)
    history: dict[TopicPartition, LogEndHistory] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The `query` label: the query's name, or its id when it has none."""
        return self.name or self.query_id


def progress_time(progress: dict) -> float | None:
    """The progress's timestamp (the trigger's start) as Unix seconds."""
    text = progress.get("timestamp")
    if not text:
        return None
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


class Queries:
    """Every query seen, by id. Not thread-safe: the exporter holds its lock around each call."""

    def __init__(self):
        self.by_id: dict[str, QueryState] = {}

    def _state(self, query_id: str, name: str | None) -> QueryState:
        state = self.by_id.setdefault(query_id, QueryState(query_id))
        if name:
            state.name = name
        return state

    def started(self, query_id: str, name: str | None) -> None:
        self._state(query_id, name).active = True

    def terminated(self, query_id: str) -> None:
        if query_id in self.by_id:
            self.by_id[query_id].active = False

    def progress(self, progress: Any) -> bool:
        """Take one progress; False when its batch was taken before."""
        data = _as_dict(progress)
        state = self._state(str(data["id"]), data.get("name"))
        batch = int(data["batchId"])
        at = progress_time(data)
        positions = positions_from_progress(data)
        if positions is not None:  # an idle trigger's progress still has the newest log ends
            state.offsets, state.log_ends = positions
            for tp, log_end in state.log_ends.items():
                state.history.setdefault(tp, LogEndHistory()).observe(at if at is not None else 0.0, log_end)
        if at is not None and (state.last_progress_at is None or at > state.last_progress_at):
            state.last_progress_at = at
        if batch <= state.last_batch:
            return False
        rows = input_rows(data)
        state.last_batch = batch
        state.batches += 1
        state.input_rows += rows
        state.rows_per_second = rows_per_second(data)
        state.batch_duration_s = batch_duration_s(data)
        written = writes_from_progress(data)
        if written is not None:
            state.writes_observed = True
            state.records_written += written[0]
            state.bytes_written += written[1]
        return True
