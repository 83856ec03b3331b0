"""Prometheus metrics for kafkasource queries: `serve(spark, port=9108)`.

    exporter = kafkasource.metrics.serve(spark, port=9108, source_options=options)   # before starting queries
    ... queries run; Prometheus scrapes http://127.0.0.1:9108/metrics ...
    exporter.close()

Three sources feed it, each on its own thread, none on a query's path:
- a StreamingQueryListener: every query's progress (offsets, log ends, rows, durations) and its start and end;
- commit outcomes sent by the source's commits (kafkasource.commit_events), for queries started after serve();
- the brokers, read at most every `broker_interval_s`: the committed offsets of the groups named in
  `source_options` (kafkasource.metrics.broker).
With `textfile`, the same text is also written to that file (atomically) after each batch and on close(), for
node_exporter's textfile collector. The README's Monitoring section lists every metric.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, Sequence

from pyspark.sql.streaming import StreamingQueryListener

from kafkasource.client import KafkaClient
from kafkasource.commit_events import ENV_ADDRESS, CommitOutcome, OutcomeReceiver
from kafkasource.metrics import broker
from kafkasource.metrics.queries import Queries
from kafkasource.metrics.text import CONTENT_TYPE, Family, render
from kafkasource.options import SourceOptions

log = logging.getLogger(__name__)

DEFAULT_PORT = 9108


class CommitCounts:
    """Commit outcomes per group, as counters."""

    def __init__(self):
        self.successes: dict[tuple[str, str], int] = {}  # (group, mode)
        self.failures: dict[tuple[str, str, str], int] = {}  # (group, mode, reason)
        self.retries: dict[tuple[str, str], int] = {}  # (group, reason)

    def add(self, outcome: CommitOutcome) -> None:
        if outcome.outcome == "success":
            key = (outcome.group, outcome.mode)
            self.successes[key] = self.successes.get(key, 0) + 1
        elif outcome.outcome == "failure":
            key3 = (outcome.group, outcome.mode, outcome.reason)
            self.failures[key3] = self.failures.get(key3, 0) + 1
        else:
            key = (outcome.group, outcome.reason)
            self.retries[key] = self.retries.get(key, 0) + 1

    def families(self) -> list[Family]:
        successes = Family("kafkasource_commits_total", "counter", "Commits the brokers accepted, per group and mode")
        failures = Family("kafkasource_commit_failures_total", "counter",
                          "Commits that failed for good, per group, mode and Kafka error name")
        retries = Family("kafkasource_commit_retries_total", "counter",
                         "Commits retried after a retriable error, per group and Kafka error name")
        for (group, mode), n in sorted(self.successes.items()):
            successes.add(n, group=group, mode=mode)
        for (group, mode, reason), n in sorted(self.failures.items()):
            failures.add(n, group=group, mode=mode, reason=reason)
        for (group, reason), n in sorted(self.retries.items()):
            retries.add(n, group=group, reason=reason)
        return [successes, failures, retries]


class _Listener(StreamingQueryListener):
    def __init__(self, exporter: Exporter):
        self._exporter = exporter

    def onQueryStarted(self, event) -> None:
        self._exporter.started(str(event.id), event.name)

    def onQueryProgress(self, event) -> None:
        self._exporter.observe(event.progress)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        self._exporter.terminated(str(event.id))


class Exporter:
    """Holds the metrics and serves them; made by serve()."""

    def __init__(self, spark, port: int | None, host: str, textfile: str | None,
                 source_options: Sequence[Mapping[str, str] | SourceOptions], broker_interval_s: float):
        self._lock = threading.Lock()
        self._queries = Queries()
        self._commits = CommitCounts()
        self._groups = [broker.group_options(o) for o in source_options]  # checked before anything starts
        self._views = {o.group_id: broker.GroupView(o.group_id) for o in self._groups}
        self._clients = [KafkaClient(o) for o in self._groups]  # used by the groups' thread only
        self._textfile = textfile
        self._broker_interval_s = max(1.0, broker_interval_s)
        self._closing = threading.Event()
        self._spark = spark
        self._receiver = OutcomeReceiver(host="127.0.0.1")
        self._threads = [threading.Thread(target=self._receive_outcomes, name="kafkasource-metrics-commits",
                                          daemon=True)]
        # the groups are read on a thread of their own, so that a read waiting on a slow or unreachable broker (each of
        # its requests up to kafkaConsumer.pollTimeoutMs) holds up no query and no caller's loop, such as the ingest
        # job's, which watches for stop requests; that thread alone uses these clients. The crashes once blamed on
        # Kafka clients used from a second thread of the job's driver were librdkafka's admin OffsetFetch (librdkafka
        # issue #5040, see KafkaClient.committed_with_metadata), which crashes from a single thread too: threads were
        # never the cause, and that call is made nowhere now
        if self._groups:
            self._threads.append(threading.Thread(target=self._read_groups_every_interval,
                                                  name="kafkasource-metrics-groups", daemon=True))
        self._server: ThreadingHTTPServer | None = None
        if port is not None:
            self._server = ThreadingHTTPServer((host, port), _handler(self))
            self._threads.append(threading.Thread(target=self._server.serve_forever, name="kafkasource-metrics-http",
                                                  daemon=True))
        for thread in self._threads:
            thread.start()
        import kafkasource

        # the commits of queries started from now on report their outcomes to this exporter
        kafkasource.register(spark, {ENV_ADDRESS: self._receiver.address})
        self._listener = _Listener(self)
        spark.streams.addListener(self._listener)
        for query in spark.streams.active:
            self.started(str(query.id), query.name)

    @property
    def port(self) -> int | None:
        return self._server.server_address[1] if self._server is not None else None

    @property
    def url(self) -> str | None:
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    # -- what feeds it -------------------------------------------------------------------------------
    def started(self, query_id: str, name: str | None) -> None:
        with self._lock:
            self._queries.started(query_id, name)

    def terminated(self, query_id: str) -> None:
        with self._lock:
            self._queries.terminated(query_id)
        self.write_textfile()

    def observe(self, progress: Any) -> None:
        """Take a progress (the listener does; the jobs also hand over `query.recentProgress` at the end of a run,
        since the listener's last events may come after awaitTermination() returns). A batch is counted once."""
        with self._lock:
            new = self._queries.progress(progress)
        if new:
            self.write_textfile()

    def observe_query(self, query) -> None:
        """Take every progress a query still holds, and whether it is active."""
        for progress in query.recentProgress:
            self.observe(progress)
        if not query.isActive:
            with self._lock:
                self._queries.terminated(str(query.id))

    def _receive_outcomes(self) -> None:
        while not self._closing.is_set():
            outcome = self._receiver.receive(timeout=0.5)
            if outcome is not None:
                with self._lock:
                    self._commits.add(outcome)

    def _read_groups_every_interval(self) -> None:
        while not self._closing.is_set():
            self.read_groups()
            self._closing.wait(self._broker_interval_s)

    def read_groups(self) -> None:
        """Read the groups' committed offsets from the brokers now."""
        for options, client in zip(self._groups, self._clients):
            try:
                view = broker.read_group(options, client)
            except Exception as exc:  # the brokers may be away for a while: keep the last view, count the error
                log.warning("reading the offsets of group %s failed: %s", options.group_id, exc)
                with self._lock:
                    self._views[options.group_id].read_errors += 1
                continue
            with self._lock:
                view.read_errors = self._views[options.group_id].read_errors
                self._views[options.group_id] = view

    # -- what it gives ---------------------------------------------------------------------------------
    def families(self) -> list[Family]:
        with self._lock:
            return (self._queries.families(time.time()) + broker.families(list(self._views.values()))
                    + self._commits.families())

    def text(self) -> str:
        return render(self.families())

    def write_textfile(self) -> None:
        """Write the metrics to `textfile` (if given) as node_exporter wants it: whole, by a rename."""
        if self._textfile is None:
            return
        directory = os.path.dirname(os.path.abspath(self._textfile))
        fd, temporary = tempfile.mkstemp(prefix=".kafkasource-", suffix=".prom.tmp", dir=directory)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(self.text())
            os.replace(temporary, self._textfile)
        except BaseException:
            os.unlink(temporary)
            raise

    def close(self) -> None:
        """Stop listening and serving; take the commit outcomes already sent, read the groups once more (so an
        AvailableNow run's final commit shows) and write the textfile a last time."""
        if self._closing.is_set():
            return
        self._closing.set()
        try:
            self._spark.streams.removeListener(self._listener)
        except Exception as exc:  # the session may be stopping already
            log.debug("listener not removed: %s", exc)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=15)
        while (outcome := self._receiver.receive(timeout=0)) is not None:
            with self._lock:
                self._commits.add(outcome)
        self._receiver.close()
        if not any(t.is_alive() for t in self._threads):  # a read still running keeps its client: leave it be
            if self._groups:
                self.read_groups()
            for client in self._clients:
                client.close()
        self.write_textfile()


def _handler(exporter: Exporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] not in ("/metrics", "/"):
                self.send_error(404, "metrics are at /metrics")
                return
            body = exporter.text().encode()
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # scrapes are not worth a log line each
            log.debug("scrape: " + format, *args)

    return Handler


def serve(spark, port: int | None = DEFAULT_PORT, host: str = "127.0.0.1", textfile: str | None = None,
          source_options: Mapping[str, str] | SourceOptions | Sequence[Mapping[str, str] | SourceOptions] = (),
          broker_interval_s: float = 30.0) -> Exporter:
    """Export the metrics of this session's kafkasource queries in Prometheus' text format at
    http://host:port/metrics (port 0: any free one, see `exporter.port`; None: no HTTP, e.g. with `textfile` only).

    `source_options`: the options of the queries (one mapping, or several) whose consumer groups' committed
    offsets to read from the brokers, at most every `broker_interval_s` seconds. Call it before starting the
    queries: commit outcomes reach it from queries started afterwards (classic Spark; not over Spark Connect)."""
    if isinstance(source_options, (Mapping, SourceOptions)):
        source_options = [source_options]
    return Exporter(spark, port, host, textfile, list(source_options), broker_interval_s)
