"""Lag figures from a query's progress (Python sources cannot report custom metrics).

The progress of a kafkasource query carries `endOffset` (where the last batch ended) and
`latestOffset` (the log end the source saw, from reportLatestOffset). Their difference per
partition is the lag. pyspark 4.0 and 4.1 have no reportLatestOffset and put the planned end
there: no lag from their progress. (The `lag` job, kafkasource/jobs/lag.py, measures something else: a
consumer group's committed offsets against the log end, without a query.)

Progress reaches Python in two shapes: built from the JVM object (classic Spark) or from its JSON
(Spark Connect clients, and anything that stored `progress.json`). The JSON has no top-level
`numInputRows`, so over Connect `progress["numInputRows"]` is None; `input_rows` reads the
sources' counts instead. Offsets are JSON text in one shape and objects in the other; both work.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from kafkasource.planning.offsets import from_json_dict
from kafkasource.planning.partitions import Positions, TopicPartition
from kafkasource.runtime.spark_api import ADMISSION_CONTROL

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lag:
    per_partition: dict[TopicPartition, int]

    @property
    def total(self) -> int:
        return sum(self.per_partition.values())

    @property
    def max(self) -> int:
        return max(self.per_partition.values(), default=0)


def _as_dict(progress: Any) -> dict:
    """The progress as plain JSON data, whatever shape it arrived in."""
    if hasattr(progress, "json"):  # StreamingQueryProgress (a dict whose id is a UUID): use its own JSON
        progress = progress.json
    if isinstance(progress, str):
        progress = json.loads(progress)
    return progress


def _offsets(value: Any) -> dict | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values()):
        return dict(value)
    return None


def positions_from_progress(progress: Any) -> tuple[Positions, Positions] | None:
    """(where the last batch ended, the log ends the source saw) per partition of the query's Kafka sources, from
    a progress in any shape; None when no source has both (e.g. before the first batch)."""
    if progress is None:
        return None
    progress = _as_dict(progress)
    ends: Positions = {}
    log_ends: Positions = {}
    found = False
    for source in progress.get("sources", []):
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        if not ADMISSION_CONTROL:  # pyspark 4.0/4.1 put the planned end there (no reportLatestOffset): no log end
            latest = None
        if end is None or latest is None:
            continue
        found = True
        end_positions = from_json_dict(end)
        for tp, log_end in from_json_dict(latest).items():
            log_ends[tp] = log_end
            ends[tp] = end_positions.get(tp, 0)
    return (ends, log_ends) if found else None


def lag_from_progress(progress: Any) -> Lag | None:
    """Per-partition lag of the query's Kafka sources, from `query.lastProgress` (a StreamingQueryProgress,
    a dict, or JSON text).

    None when the progress holds no source with both an end and a latest offset (e.g. before the
    first batch)."""
    found = positions_from_progress(progress)
    if found is None:
        return None
    ends, log_ends = found
    return Lag({tp: max(0, log_end - ends[tp]) for tp, log_end in log_ends.items()})


def input_rows(progress: Any) -> int:
    """Rows the progress's batch read from all its sources (StreamingQueryProgress, dict or JSON text).

    Use this rather than `progress["numInputRows"]`, which is None when the progress came as JSON
    (every progress a Spark Connect client sees)."""
    progress = _as_dict(progress)
    total = progress.get("numInputRows")
    if total is not None:
        return int(total)
    return sum(int(source.get("numInputRows") or 0) for source in progress.get("sources", []))


def batch_duration_s(progress: Any) -> float:
    """How long the progress's trigger took, in seconds (durationMs.triggerExecution, in both shapes)."""
    duration = (_as_dict(progress).get("durationMs") or {}).get("triggerExecution")
    return int(duration) / 1000 if duration is not None else 0.0


def rows_per_second(progress: Any) -> float:
    """Rows the batch read per second of its trigger: input rows over durationMs.triggerExecution.

    Classic progress carries Spark's processedRowsPerSecond, computed the same way from the trigger's start and
    end; a Spark Connect client's progress lacks it, so it is computed here from what both shapes carry."""
    duration = batch_duration_s(progress)
    return input_rows(progress) / duration if duration > 0 else 0.0


class LagListener(StreamingQueryListener):
    """Keeps the latest lag of every query (by query id) and logs it; add with
    `spark.streams.addListener(LagListener())`."""

    def __init__(self) -> None:
        self.latest: dict[str, Lag] = {}

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        lag = lag_from_progress(event.progress)
        if lag is not None:
            self.latest[str(event.progress.id)] = lag
            log.info(
                "query %s: batch %s read %d rows; lag %d records in all, at most %d on one partition",
                event.progress.id,
                event.progress.batchId,
                input_rows(event.progress),
                lag.total,
                lag.max,
            )

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass
