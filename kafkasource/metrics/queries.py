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
from kafkasource.metrics.text import Family
from kafkasource.planning.partitions import Positions, TopicPartition
from kafkasource.metrics.progress import _as_dict, batch_duration_s, input_rows, positions_from_progress, rows_per_second


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
        return True

    def families(self, now: float) -> list[Family]:
        offset = Family("kafkasource_partition_offset", "gauge",
                        "Offset the query's last batch reached in the partition (the next one it reads)")
        log_end = Family("kafkasource_partition_log_end_offset", "gauge",
                         "Log end offset of the partition as the source last saw it")
        lag = Family("kafkasource_partition_lag_records", "gauge",
                     "Records between the query's offset and the log end it last saw")
        lag_s = Family("kafkasource_partition_lag_seconds", "gauge",
                       "Seconds since the log end passed the query's offset (interpolated log end growth)")
        rows = Family("kafkasource_query_input_rows_total", "counter", "Rows the query's batches read from Kafka")
        batches = Family("kafkasource_query_batches_total", "counter", "Micro-batches the query completed")
        rate = Family("kafkasource_query_rows_per_second", "gauge",
                      "Rows per second of the last batch (its input rows over its trigger's duration)")
        duration = Family("kafkasource_query_batch_duration_seconds", "gauge", "Duration of the last batch's trigger")
        last = Family("kafkasource_query_last_progress_timestamp_seconds", "gauge",
                      "Unix time of the query's last progress (its trigger's start)")
        active = Family("kafkasource_query_active", "gauge", "1 while the query runs, 0 once it has terminated")
        for state in sorted(self.by_id.values(), key=lambda s: s.query_id):
            q = {"query": state.label, "query_id": state.query_id}
            for (topic, partition), end in sorted(state.log_ends.items()):
                at = state.offsets.get((topic, partition), 0)
                labels = {**q, "topic": topic, "partition": partition}
                offset.add(at, **labels)
                log_end.add(end, **labels)
                lag.add(max(0, end - at), **labels)
                seconds = state.history[(topic, partition)].lag_seconds(at, now)
                if seconds is not None:
                    lag_s.add(seconds, **labels)
            rows.add(state.input_rows, **q)
            batches.add(state.batches, **q)
            rate.add(state.rows_per_second, **q)
            duration.add(state.batch_duration_s, **q)
            if state.last_progress_at is not None:
                last.add(state.last_progress_at, **q)
            active.add(1 if state.active else 0, **q)
        return [offset, log_end, lag, lag_s, rows, batches, rate, duration, last, active]
