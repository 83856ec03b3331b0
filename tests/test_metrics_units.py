"""The exporter's pure parts: the text format, lag in seconds, query state from both progress shapes, commit
metadata within its size limit, and the commit outcome datagrams."""

from __future__ import annotations

import json
import socket
import time

import pytest

from kafkasource.commit import metadata as committer
from kafkasource.commit.outcomes import ENV_ADDRESS, CommitOutcome, OutcomeReceiver, OutcomeSender
from kafkasource.metrics import CommitCounts
from kafkasource.metrics.lag_seconds import LogEndHistory
from kafkasource.metrics.queries import Queries
from kafkasource.metrics.text import Family, parse, render
from kafkasource.metrics.progress import rows_per_second

QID = "5b1c0f3e-0000-4000-8000-000000000001"


def progress(batch: int, rows: int, start: dict, end: dict, latest: dict, duration_ms: int = 500,
             timestamp: str = "2026-11-25T12:00:00.000Z", classic: bool = True) -> dict:
    """A progress as Spark delivers it: classic (numInputRows, offsets as JSON text) or as a Connect client gets
    it (no numInputRows or processedRowsPerSecond at the top, offsets as objects)."""
    source = {"description": "kafkasource", "numInputRows": rows,
              "startOffset": json.dumps(start) if classic else start, "endOffset": json.dumps(end) if classic else end,
              "latestOffset": json.dumps(latest) if classic else latest}
    data = {"id": QID, "runId": "r1", "name": "orders", "timestamp": timestamp, "batchId": batch,
            "durationMs": {"triggerExecution": duration_ms}, "sources": [source]}
    if classic:
        data.update(numInputRows=rows, processedRowsPerSecond=rows / (duration_ms / 1000))
    return data


def samples(families: list[Family], name: str) -> dict[tuple, float]:
    family = next(f for f in families if f.name == name)
    return {tuple(sorted(labels.items())): value for labels, value in family.samples}


def test_text_format_escapes_labels_and_lists_empty_families():
    counter = Family("kafkasource_x_total", "counter", "X")
    counter.add(3, query='a"b\\c\nd', partition=0)
    gauge = Family("kafkasource_y", "gauge", "Y")
    assert render([counter, gauge]) == (
        '# HELP kafkasource_x_total X\n# TYPE kafkasource_x_total counter\n'
        'kafkasource_x_total{query="a\\"b\\\\c\\nd",partition="0"} 3\n'
        '# HELP kafkasource_y Y\n# TYPE kafkasource_y gauge\n')
    assert parse(render([counter])) == {"kafkasource_x_total": {(("partition", "0"), ("query", 'a"b\\c\nd')): 3.0}}


def test_lag_seconds_interpolates_the_log_end_growth():
    history = LogEndHistory()
    history.observe(100.0, 1000)
    history.observe(110.0, 2000)  # 100 records a second
    history.observe(115.0, 2000)  # standing still keeps the time the log end got there
    assert history.lag_seconds(2000, now=120.0) == 0.0  # at the log end
    assert history.lag_seconds(1499, now=120.0) == pytest.approx(15.0)  # record 1499 written at 105.0
    assert history.lag_seconds(499, now=120.0) == pytest.approx(25.0)  # before the history: extrapolated, at 95.0
    assert history.lag_seconds(1499, now=130.0) == pytest.approx(25.0)  # grows while the query stands still
    history.observe(140.0, 10)  # a log that went back starts a new history
    assert history.lag_seconds(5, now=150.0) == pytest.approx(10.0)


def test_both_progress_shapes_give_the_same_figures():
    for classic in (True, False):
        queries = Queries()
        first = progress(0, 30, {"t": {"0": 0}}, {"t": {"0": 30}}, {"t": {"0": 50}}, classic=classic)
        queries.progress(first)
        assert not queries.progress(first)  # the same batch again counts nothing
        queries.progress(progress(1, 20, {"t": {"0": 30}}, {"t": {"0": 50}}, {"t": {"0": 50}}, duration_ms=250,
                                  timestamp="2026-11-25T12:00:10.000Z", classic=classic))
        families = queries.families(now=0.0)
        q = (("query", "orders"), ("query_id", QID))
        assert samples(families, "kafkasource_query_input_rows_total") == {q: 50}
        assert samples(families, "kafkasource_query_batches_total") == {q: 2}
        assert samples(families, "kafkasource_query_rows_per_second") == {q: 80.0}
        assert samples(families, "kafkasource_query_batch_duration_seconds") == {q: 0.25}
        assert samples(families, "kafkasource_query_last_progress_timestamp_seconds") == {q: 1795608010.0}
        p = q + (("partition", "0"), ("topic", "t"))
        assert samples(families, "kafkasource_partition_offset") == {tuple(sorted(p)): 50}
        assert samples(families, "kafkasource_partition_lag_records") == {tuple(sorted(p)): 0}
    assert rows_per_second(first) == 60.0


def test_commit_metadata_names_the_committer_and_stays_within_its_limit():
    environ = committer.committer_environment("local-1795620802996", "orders-ingest")
    text = committer.metadata(environ, now_ms=1795620802996)
    found = committer.parse(text)
    assert (found.by, found.app, found.app_id, found.at_ms, found.pid) == (
        "kafkasource", "orders-ingest", "local-1795620802996", 1795620802996, __import__("os").getpid())
    assert found.describe().startswith("orders-ingest (local-1795620802996) on ")
    for name in ("x" * 5000, 'é"' * 3000, "\x01" * 3000, "y" * (committer.MAX_BYTES - 150)):
        text = committer.metadata(committer.committer_environment("local-1", name))
        app = committer.parse(text).app
        assert len(text.encode()) <= committer.MAX_BYTES
        assert app == name or (app.endswith("…") and name.startswith(app[:-1]) and len(app) > 100), (len(app), name[:9])
    assert committer.parse("kafkasource") == committer.CommitAuthor(by="kafkasource")  # what older versions wrote
    assert committer.parse("") is None
    assert committer.parse("someone else").describe() == "someone else"


def test_commit_outcomes_cross_by_datagram_and_never_wait():
    receiver = OutcomeReceiver()
    sender = OutcomeSender({ENV_ADDRESS: receiver.address})
    try:
        sender.send(CommitOutcome("g", "failure", "REQUEST_TIMED_OUT", 3, "sync"))
        assert receiver.receive(timeout=5) == CommitOutcome("g", "failure", "REQUEST_TIMED_OUT", 3, "sync")
        counts = CommitCounts()
        counts.add(CommitOutcome("g", "success", "", 3, "async"))
        counts.add(CommitOutcome("g", "retry", "_TRANSPORT", 3, "sync"))
        text = render(counts.families())
        assert 'kafkasource_commits_total{group="g",mode="async"} 1' in text
        assert 'kafkasource_commit_retries_total{group="g",reason="_TRANSPORT"} 1' in text
    finally:
        receiver.close()
    # nobody listens any more, and the receive buffer of a socket nobody reads fills: sends still return at once
    idle = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    idle.bind(("127.0.0.1", 0))
    flooded = OutcomeSender({ENV_ADDRESS: "%s:%d" % idle.getsockname()})
    gone = OutcomeSender({ENV_ADDRESS: receiver.address})
    started = time.monotonic()
    for _ in range(20000):
        flooded.send(CommitOutcome("g", "success", "", 3, "sync"))
        gone.send(CommitOutcome("g", "success", "", 3, "sync"))
    assert time.monotonic() - started < 10  # 40,000 sends, none waiting (a few µs each)
    idle.close()
    assert OutcomeSender({})._socket is None  # no exporter: nothing is sent at all
