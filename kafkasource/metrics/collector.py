"""The exporter's metrics through prometheus_client: their families, a Collector of them, and its registry served
over HTTP and written to the textfile.

Every family (name, type, help, labels) is built at each collect() from what the exporter holds, by a Collector in
a CollectorRegistry of the exporter's own (never the global one); prometheus_client's server answers the scrapes and
its write_to_textfile writes node_exporter's textfile.

This module needs prometheus_client (the `metrics` extra); exporter.py imports it only when an exporter starts, so
that kafkasource.metrics (and the lag figures of kafkasource.metrics.progress) import without it.

Counters are named here without `_total`: prometheus_client appends it to their samples (and, in Prometheus' text
format, to the family's HELP and TYPE), so that a scraper sees `kafkasource_commits_total`, the name docs/monitoring.md
lists. In OpenMetrics, which prometheus_client's server answers to a scraper that asks for it (Prometheus does),
the family is `kafkasource_commits` of type counter and its samples `kafkasource_commits_total`: the same series.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, generate_latest, start_http_server, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kafkasource.metrics.commit_counts import CommitCounts
from kafkasource.metrics.group_offsets import GroupView
from kafkasource.metrics.queries import Queries

QUERY = ["query", "query_id"]
QUERY_PARTITION = QUERY + ["topic", "partition"]
GROUP_PARTITION = ["group", "topic", "partition"]


def query_families(queries: Queries, now: float) -> list[Metric]:
    """The queries' positions, lag and batches, as their progress told them."""
    offset = GaugeMetricFamily(
        "kafkasource_partition_offset",
        "Offset the query's last batch reached in the partition (the next one it reads)",
        labels=QUERY_PARTITION,
    )
    log_end = GaugeMetricFamily(
        "kafkasource_partition_log_end_offset",
        "Log end offset of the partition as the source last saw it",
        labels=QUERY_PARTITION,
    )
    lag = GaugeMetricFamily(
        "kafkasource_partition_lag_records",
        "Records between the query's offset and the log end it last saw",
        labels=QUERY_PARTITION,
    )
    lag_s = GaugeMetricFamily(
        "kafkasource_partition_lag_seconds",
        "Seconds since the log end passed the query's offset (interpolated log end growth)",
        labels=QUERY_PARTITION,
    )
    rows = CounterMetricFamily("kafkasource_query_input_rows", "Rows the query's batches read from Kafka", labels=QUERY)
    batches = CounterMetricFamily("kafkasource_query_batches", "Micro-batches the query completed", labels=QUERY)
    rate = GaugeMetricFamily(
        "kafkasource_query_rows_per_second",
        "Rows per second of the last batch (its input rows over its trigger's duration)",
        labels=QUERY,
    )
    duration = GaugeMetricFamily(
        "kafkasource_query_batch_duration_seconds", "Duration of the last batch's trigger", labels=QUERY
    )
    last = GaugeMetricFamily(
        "kafkasource_query_last_progress_timestamp_seconds",
        "Unix time of the query's last progress (its trigger's start)",
        labels=QUERY,
    )
    active = GaugeMetricFamily(
        "kafkasource_query_active", "1 while the query runs, 0 once it has terminated", labels=QUERY
    )
    records_written = CounterMetricFamily(
        "kafkasource_query_records_written",
        "Records the query's completed batches wrote to Kafka (queries that observe their writes: the route job)",
        labels=QUERY,
    )
    bytes_written = CounterMetricFamily(
        "kafkasource_query_bytes_written",
        "Bytes of the keys and values the query's completed batches wrote to Kafka (before compression)",
        labels=QUERY,
    )
    for state in sorted(queries.by_id.values(), key=lambda s: s.query_id):
        q = [state.label, state.query_id]
        for (topic, partition), end in sorted(state.log_ends.items()):
            at = state.offsets.get((topic, partition), 0)
            labels = q + [topic, str(partition)]
            offset.add_metric(labels, at)
            log_end.add_metric(labels, end)
            lag.add_metric(labels, max(0, end - at))
            seconds = state.history[(topic, partition)].lag_seconds(at, now)
            if seconds is not None:
                lag_s.add_metric(labels, seconds)
        rows.add_metric(q, state.input_rows)
        batches.add_metric(q, state.batches)
        rate.add_metric(q, state.rows_per_second)
        duration.add_metric(q, state.batch_duration_s)
        if state.last_progress_at is not None:
            last.add_metric(q, state.last_progress_at)
        active.add_metric(q, 1 if state.active else 0)
        if state.writes_observed:
            records_written.add_metric(q, state.records_written)
            bytes_written.add_metric(q, state.bytes_written)
    return [offset, log_end, lag, lag_s, rows, batches, rate, duration, last, active, records_written, bytes_written]


def group_families(views: list[GroupView]) -> list[Metric]:
    """The consumer groups' committed offsets as the brokers report them."""
    committed = GaugeMetricFamily(
        "kafkasource_group_committed_offset",
        "The consumer group's committed offset for the partition, as the brokers report it",
        labels=GROUP_PARTITION,
    )
    lag = GaugeMetricFamily(
        "kafkasource_group_lag_records",
        "Log end offset minus the group's committed offset, both read from the brokers at the same time",
        labels=GROUP_PARTITION,
    )
    commit_time = GaugeMetricFamily(
        "kafkasource_group_commit_timestamp_seconds",
        "Unix time of the group's last commit for the partition, from the commit's metadata",
        labels=GROUP_PARTITION,
    )
    read_at = GaugeMetricFamily(
        "kafkasource_group_offsets_read_timestamp_seconds",
        "Unix time the exporter last read the group's offsets from the brokers",
        labels=["group"],
    )
    errors = CounterMetricFamily(
        "kafkasource_group_offsets_read_errors",
        "Failed reads of the group's offsets from the brokers",
        labels=["group"],
    )
    for view in sorted(views, key=lambda v: v.group):
        for (topic, partition), offset in sorted(view.committed.items()):
            labels = [view.group, topic, str(partition)]
            committed.add_metric(labels, offset)
            if (topic, partition) in view.log_ends:
                lag.add_metric(labels, max(0, view.log_ends[(topic, partition)] - offset))
            who = view.committers.get((topic, partition))
            if who is not None and who.at_ms is not None:
                commit_time.add_metric(labels, who.at_ms / 1000)
        if view.read_at is not None:
            read_at.add_metric([view.group], view.read_at)
        errors.add_metric([view.group], view.read_errors)
    return [committed, lag, commit_time, read_at, errors]


def commit_families(counts: CommitCounts) -> list[Metric]:
    """The outcomes of the source's commits, sent to the exporter by the processes that made them."""
    successes = CounterMetricFamily(
        "kafkasource_commits", "Commits the brokers accepted, per group and mode", labels=["group", "mode"]
    )
    failures = CounterMetricFamily(
        "kafkasource_commit_failures",
        "Commits that failed for good, per group, mode and Kafka error name",
        labels=["group", "mode", "reason"],
    )
    retries = CounterMetricFamily(
        "kafkasource_commit_retries",
        "Commits retried after a retriable error, per group and Kafka error name",
        labels=["group", "reason"],
    )
    for key, n in sorted(counts.successes.items()):
        successes.add_metric(list(key), n)
    for key3, n in sorted(counts.failures.items()):
        failures.add_metric(list(key3), n)
    for key, n in sorted(counts.retries.items()):
        retries.add_metric(list(key), n)
    return [successes, failures, retries]


class ExporterCollector:
    """What the exporter holds (its queries, its groups' views by group id, its commit counts), as metric families:
    built at each collect() under the exporter's lock, every family listed even before it has samples."""

    def __init__(self, lock: threading.Lock, queries: Queries, views: dict[str, GroupView], commits: CommitCounts):
        self._lock = lock
        self._queries = queries
        self._views = views
        self._commits = commits

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            return (
                query_families(self._queries, time.time())
                + group_families(list(self._views.values()))
                + commit_families(self._commits)
            )

    def describe(self) -> Iterable[Metric]:
        """The families without samples: their names for the registry (and for a scrape's `name[]` filter)."""
        return query_families(Queries(), 0.0) + group_families([]) + commit_families(CommitCounts())


class Exposition:
    """A registry of the exporter's own holding its collector; served over HTTP by prometheus_client's server
    (Prometheus' text format 0.0.4, or OpenMetrics to a scraper that asks for it) when `port` is not None, and
    written to `textfile`, if given, as node_exporter's textfile collector wants it: whole, by a rename."""

    def __init__(self, collector: ExporterCollector, host: str, port: int | None, textfile: str | None):
        self.registry = CollectorRegistry()
        self.registry.register(collector)
        self._textfile = textfile
        self._server = self._thread = None
        if port is not None:
            # "" binds every address, as for a socket (prometheus_client looks the host up, and "" is no name)
            self._server, self._thread = start_http_server(port, host or "0.0.0.0", registry=self.registry)
            self._thread.name = "kafkasource-metrics-http"

    @property
    def address(self) -> tuple[str, int] | None:
        """(host, port) of the HTTP server; None without one."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def text(self) -> str:
        """The metrics in Prometheus' text format, as a scrape that does not ask for OpenMetrics gets them."""
        return generate_latest(self.registry).decode()

    def write_textfile(self) -> None:
        if self._textfile is not None:
            write_to_textfile(self._textfile, self.registry)

    def close(self) -> None:
        """Stop serving."""
        if self._server is not None and self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=15)
