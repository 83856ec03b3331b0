"""Records and bytes a query wrote to Kafka, counted by Spark's observed metrics of the written DataFrame.

A Python sink cannot report metrics of its own into a query's progress, and its driver-side commit runs in a
Python worker of Spark's, not in the process that holds the exporter. `DataFrame.observe` is the channel that
exists: Spark computes the named aggregates over each batch's rows and puts them in that batch's progress, which
the exporter's listener receives. A batch's figures arrive with its progress, once the batch completed, so they
count what the sink committed; a failed batch reports nothing. Bytes are those of the keys and values (headers
not included), as the producer hands them to Kafka before compression. A struct key or value, which the sink writes
as plain JSON, counts the bytes of Spark's to_json of it in UTC, what the sink's encoder writes by default (a
double's digits aside, docs/plain-json.md#writing): the sink's own bytes are out of Spark's reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

OBSERVATION = "kafkasource_writes"


def observe_writes(rows: DataFrame) -> DataFrame:
    """`rows`, as they go to kafkasource's sink, counted per batch into its progress for the exporter."""
    payload = _length(rows, "value")
    if "key" in rows.columns:
        payload = payload + _length(rows, "key")
    return rows.observe(OBSERVATION, F.count(F.lit(1)).alias("records"), F.sum(payload).alias("bytes"))


def _length(rows: DataFrame, column: str):
    written = F.col(column)
    if isinstance(rows.schema[column].dataType, StructType):
        written = F.to_json(written, {"timeZone": "UTC"})
    return F.coalesce(F.octet_length(written), F.lit(0))


def writes_from_progress(progress: Mapping[str, Any]) -> tuple[int, int] | None:
    """(records, bytes) a batch wrote, from its progress as JSON data; None when the query did not observe them."""
    observed = (progress.get("observedMetrics") or {}).get(OBSERVATION)
    if not observed:
        return None
    return int(observed.get("records") or 0), int(observed.get("bytes") or 0)
