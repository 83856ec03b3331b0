"""The exporter's pure parts: the exposition (prometheus_client's text format and OpenMetrics, the textfile, every
metric as docs/monitoring.md lists it), lag in seconds, query state from both progress shapes, commit metadata
within its size limit, the commit outcome datagrams, and the package without prometheus_client."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from dev.process import REPO_ROOT
from kafkasource.commit import metadata as committer
from kafkasource.commit.metadata import CommitAuthor
from kafkasource.commit.outcomes import ENV_ADDRESS, CommitOutcome, OutcomeReceiver, OutcomeSender
from kafkasource.metrics import CommitCounts, collector
from kafkasource.metrics.group_offsets import GroupView
from kafkasource.metrics.lag_seconds import LogEndHistory
from kafkasource.metrics.progress import rows_per_second
from kafkasource.metrics.queries import Queries
from tests.support.metrics_helpers import parse

QID = "5b1c0f3e-0000-4000-8000-000000000001"

METRIC_NAMES = [  # what dashboards and alerts rely on: a change here breaks them, and docs/monitoring.md lists them
    "kafkasource_partition_offset",
    "kafkasource_partition_log_end_offset",
    "kafkasource_partition_lag_records",
    "kafkasource_partition_lag_seconds",
    "kafkasource_query_input_rows_total",
    "kafkasource_query_batches_total",
    "kafkasource_query_rows_per_second",
    "kafkasource_query_batch_duration_seconds",
    "kafkasource_query_last_progress_timestamp_seconds",
    "kafkasource_query_active",
    "kafkasource_query_records_written_total",
    "kafkasource_query_bytes_written_total",
    "kafkasource_group_committed_offset",
    "kafkasource_group_lag_records",
    "kafkasource_group_commit_timestamp_seconds",
    "kafkasource_group_offsets_read_timestamp_seconds",
    "kafkasource_group_offsets_read_errors_total",
    "kafkasource_commits_total",
    "kafkasource_commit_failures_total",
    "kafkasource_commit_retries_total",
]
DASHBOARD = REPO_ROOT / "conf" / "grafana-dashboard.json"


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


def samples(families: list, name: str) -> dict[tuple, float]:
    """The samples named `name` (a counter's end in _total) of prometheus_client families, by sorted labels."""
    return {tuple(sorted(s.labels.items())): s.value for family in families for s in family.samples if s.name == name}


def exposition(queries: Queries | None = None, views: tuple[GroupView, ...] = (), commits: CommitCounts | None = None,
               port: int | None = None, textfile: str | None = None) -> collector.Exposition:
    """What an Exporter serves, without Spark: its collector over these in a registry of its own."""
    return collector.Exposition(collector.ExporterCollector(threading.Lock(), queries or Queries(),
                                                            {v.group: v for v in views}, commits or CommitCounts()),
                                "127.0.0.1", port, textfile)


def every_metric() -> collector.Exposition:
    """An exposition in which every family has samples: a query, a group read with a commit's time, every outcome."""
    queries = Queries()
    written = progress(0, 30, {"t": {"0": 0}}, {"t": {"0": 30}}, {"t": {"0": 50}})
    queries.progress({**written, "observedMetrics": {"kafkasource_writes": {"records": 30, "bytes": 900}}})
    view = GroupView("g", committed={("t", 0): 30}, committers={("t", 0): CommitAuthor(by="kafkasource", at_ms=1)},
                     log_ends={("t", 0): 50}, read_at=2.0)
    commits = CommitCounts()
    for outcome in ("success", "failure", "retry"):
        commits.add(CommitOutcome("g", outcome, "" if outcome == "success" else "_TRANSPORT", 3, "sync"))
    return exposition(queries, (view,), commits)


def test_exposition_escapes_labels_and_lists_empty_families():
    queries = Queries()
    queries.started(QID, 'a"b\\c\nd')
    text = exposition(queries).text()
    # prometheus_client's text format: labels sorted by name, values as floats ("0.0", not "0")
    assert (f'kafkasource_query_batches_total{{query="a\\"b\\\\c\\nd",query_id="{QID}"}} 0.0\n') in text
    assert parse(text)["kafkasource_query_active"] == {(("query", 'a"b\\c\nd'), ("query_id", QID)): 1.0}
    assert text.startswith("# HELP kafkasource_partition_offset Offset the query's last batch reached in the "
                           "partition (the next one it reads)\n# TYPE kafkasource_partition_offset gauge\n")
    assert ("# HELP kafkasource_commits_total Commits the brokers accepted, per group and mode\n"
            "# TYPE kafkasource_commits_total counter\n") in text  # listed before any commit, named as ever
    assert 'kafkasource_partition_offset{' not in text


def test_every_metric_is_exported_with_the_documented_name_type_and_labels():
    page = (REPO_ROOT / "docs" / "monitoring.md").read_text()
    documented = {name: (kind, set(labels.split(", "))) for name, kind, labels in
                  re.findall(r"^\| `(kafkasource_\w+)` \| (gauge|counter) \| ([\w, ]+) \|", page, re.MULTILINE)}
    text = every_metric().text()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    labels = {name: {label for key in found for label, _ in key} for name, found in parse(text).items()}
    assert {name: (kind, labels.get(name)) for name, kind in types.items()} == documented
    assert len(documented) == 20


def test_scrapes_get_prometheus_text_or_the_openmetrics_they_ask_for(tmp_path):
    commits = CommitCounts()
    commits.add(CommitOutcome("g", "success", "", 3, "async"))
    served = exposition(commits=commits, port=0, textfile=str(tmp_path / "kafkasource.prom"))
    url = "http://{}:{}/metrics".format(*served.address)
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            assert answer.read().decode() == served.text()
        # what Prometheus asks for: OpenMetrics first; the counter family loses its _total, its samples keep it
        accept = ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
                  "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=10) as answer:
            assert answer.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0;")
            openmetrics = answer.read().decode()
        assert "# TYPE kafkasource_commits counter\n" in openmetrics
        assert 'kafkasource_commits_total{group="g",mode="async"} 1.0\n' in openmetrics
        assert openmetrics.endswith("# EOF\n")
    finally:
        served.close()
    served.write_textfile()
    assert (tmp_path / "kafkasource.prom").read_text() == served.text()
    assert [p.name for p in tmp_path.iterdir()] == ["kafkasource.prom"]  # written whole, by a rename


def test_the_package_imports_without_prometheus_client_and_serve_names_the_extra():
    hidden = "import sys; sys.modules['prometheus_client'] = None; "
    done = subprocess.run([sys.executable, "-c", hidden + (
        "import kafkasource.metrics, kafkasource.jobs.running; from kafkasource.metrics import serve\n"
        "try:\n    serve(None, port=None)\nexcept ImportError as e:\n    print(e)")],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == 'kafkasource.metrics.serve needs prometheus_client: pip install "kafkasource[metrics]"\n'


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
        families = collector.query_families(queries, now=0.0)
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


def test_observed_writes_are_counted_once_per_batch_and_only_for_queries_that_observe_them():
    queries = Queries()
    first = progress(0, 30, {"t": {"0": 0}}, {"t": {"0": 30}}, {"t": {"0": 30}})
    observed = {**first, "observedMetrics": {"kafkasource_writes": {"records": 12, "bytes": 340}}}
    queries.progress(observed)
    assert not queries.progress(observed)  # the listener and recentProgress both hand it over
    queries.progress({**progress(1, 5, {"t": {"0": 30}}, {"t": {"0": 35}}, {"t": {"0": 35}}),
                      "observedMetrics": {"kafkasource_writes": {"records": 5, "bytes": 100}}})
    other = progress(0, 7, {"t": {"0": 0}}, {"t": {"0": 7}}, {"t": {"0": 7}})
    queries.progress({**other, "id": "another-query", "name": "no-writes", "observedMetrics": {"mine": {"n": 1}}})
    families = collector.query_families(queries, now=0.0)
    q = (("query", "orders"), ("query_id", QID))
    assert samples(families, "kafkasource_query_records_written_total") == {q: 17}
    assert samples(families, "kafkasource_query_bytes_written_total") == {q: 440}
    assert samples(families, "kafkasource_query_input_rows_total")[(("query", "no-writes"),
                                                                     ("query_id", "another-query"))] == 7


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
        text = exposition(commits=counts).text()
        assert 'kafkasource_commits_total{group="g",mode="async"} 1.0\n' in text
        assert 'kafkasource_commit_retries_total{group="g",reason="_TRANSPORT"} 1.0\n' in text
    finally:
        receiver.close()
    # nobody listens any more, and the receive buffer of a socket nobody reads fills: sends still return at once
    idle = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    idle.bind(("127.0.0.1", 0))
    flooded = OutcomeSender({ENV_ADDRESS: "{}:{}".format(*idle.getsockname())})
    gone = OutcomeSender({ENV_ADDRESS: receiver.address})
    started = time.monotonic()
    for _ in range(20000):
        flooded.send(CommitOutcome("g", "success", "", 3, "sync"))
        gone.send(CommitOutcome("g", "success", "", 3, "sync"))
    assert time.monotonic() - started < 10  # 40,000 sends, none waiting (a few µs each)
    idle.close()
    assert OutcomeSender({})._socket is None  # no exporter: nothing is sent at all


def test_metric_names_are_stable_and_documented():
    exposition = collector.Exposition(collector.ExporterCollector(threading.Lock(), Queries(), {}, CommitCounts()),
                                      "127.0.0.1", None, None)
    exported = re.findall(r"^# TYPE (\S+) ", exposition.text(), re.MULTILINE)  # the names as scrapes show them
    assert exported == METRIC_NAMES
    page = (REPO_ROOT / "docs" / "monitoring.md").read_text()
    assert [name for name in METRIC_NAMES if f"`{name}`" not in page] == []
    assert "`kafkasource_partition_offset`" in page  # the search above finds what is there


def test_every_dashboard_query_uses_only_exported_metric_names():
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(expressions) >= 5
    expressions += [variable["query"] for variable in dashboard["templating"]["list"] if variable["type"] == "query"]
    used = {name for expr in expressions for name in re.findall(r"\b(kafkasource_\w+)", expr)}
    # range functions and label names are not metric names; every kafkasource_ word must be one
    assert sorted(used - set(METRIC_NAMES)) == []
    assert {"kafkasource_partition_lag_records", "kafkasource_partition_lag_seconds",
            "kafkasource_query_rows_per_second", "kafkasource_query_batch_duration_seconds",
            "kafkasource_commit_failures_total"} <= used
