"""Lag and row counts from both shapes progress reaches Python in (no Spark, no broker)."""

from __future__ import annotations

import json

from pyspark.sql.streaming.listener import QueryProgressEvent, StreamingQueryProgress

from kafkasource.metrics.progress import Lag, LagListener, input_rows, lag_from_progress

# A progress as a Spark Connect client receives it (pyspark 4.3): JSON without a top-level numInputRows,
# offsets as JSON text.
CONNECT_PROGRESS = {
    "id": "b3f3dfb4-827c-4d10-8d1b-bf4830b0f7ed", "runId": "877b05a1-0441-40b0-aded-0133b029f2a8",
    "name": None, "timestamp": "2026-11-22T19:39:02.270Z", "batchId": 0, "batchDuration": 365,
    "durationMs": {"triggerExecution": 365}, "eventTime": {}, "stateOperators": [],
    "sources": [{"description": "PythonMicroBatchStreamWithTriggerAvailableNow@66db8f91",
                 "startOffset": None,
                 "endOffset": "{\"orders\": {\"0\": 4, \"1\": 4, \"2\": 4}}",
                 "latestOffset": "{\"orders\": {\"0\": 10, \"1\": 10, \"2\": 9}}",
                 "numInputRows": 12, "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 32.9, "metrics": {}}],
    "sink": {"description": "MemorySink", "numOutputRows": 12, "metrics": {}}, "observedMetrics": {},
}


def test_connect_shaped_progress_has_no_top_level_rows_but_input_rows_counts_the_sources():
    progress = StreamingQueryProgress.fromJson(CONNECT_PROGRESS)

    assert progress["numInputRows"] is None  # what a reader of the dict sees over Connect
    assert input_rows(progress) == 12
    assert input_rows(progress.json) == 12
    assert input_rows(json.loads(progress.json)) == 12


def test_lag_from_connect_shaped_progress_in_every_form():
    expected = Lag({("orders", 0): 6, ("orders", 1): 6, ("orders", 2): 5})
    progress = StreamingQueryProgress.fromJson(CONNECT_PROGRESS)

    assert lag_from_progress(progress) == expected
    assert lag_from_progress(progress.json) == expected
    assert lag_from_progress(CONNECT_PROGRESS) == expected
    assert expected.total == 17 and expected.max == 6


def test_classic_shaped_progress_keeps_its_own_row_count_and_nested_offsets():
    classic = {**CONNECT_PROGRESS, "numInputRows": 12,
               "sources": [{**CONNECT_PROGRESS["sources"][0],
                            "endOffset": {"orders": {"0": 4, "1": 4, "2": 4}},
                            "latestOffset": {"orders": {"0": 4, "1": 5, "2": 4}}}]}

    assert input_rows(classic) == 12
    assert lag_from_progress(classic) == Lag({("orders", 0): 0, ("orders", 1): 1, ("orders", 2): 0})


def test_lag_skips_the_topic_ids_kept_beside_the_end_offsets():
    with_ids = {**CONNECT_PROGRESS, "sources": [{
        **CONNECT_PROGRESS["sources"][0],
        "endOffset": "{\"orders\": {\"0\": 4, \"1\": 4, \"2\": 4}, \"@topicIds\": {\"orders\": \"x1\"}}"}]}

    assert lag_from_progress(with_ids) == Lag({("orders", 0): 6, ("orders", 1): 6, ("orders", 2): 5})


def test_progress_before_any_offsets_has_no_lag_and_no_rows():
    empty = {**CONNECT_PROGRESS, "sources": [{**CONNECT_PROGRESS["sources"][0], "endOffset": None,
                                              "latestOffset": None, "numInputRows": 0}]}

    assert lag_from_progress(empty) is None
    assert input_rows(empty) == 0


def test_listener_keeps_lag_of_a_connect_shaped_event():
    listener = LagListener()
    listener.onQueryProgress(QueryProgressEvent.fromJson({"progress": CONNECT_PROGRESS}))

    assert listener.latest == {CONNECT_PROGRESS["id"]: Lag({("orders", 0): 6, ("orders", 1): 6, ("orders", 2): 5})}
