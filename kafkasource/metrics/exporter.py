"""The exporter behind kafkasource.metrics.serve: it holds the metrics, fed by its listener, the commit outcomes and
its reads of the groups; kafkasource.metrics.collector serves them and writes the textfile."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.streaming import StreamingQueryListener

from kafkasource.cluster.client import KafkaClient
from kafkasource.commit.outcomes import ENV_ADDRESS, OutcomeReceiver
from kafkasource.metrics import group_offsets
from kafkasource.metrics.commit_counts import CommitCounts
from kafkasource.metrics.queries import Queries
from kafkasource.options import SourceOptions

if TYPE_CHECKING:
    from kafkasource.metrics.collector import Exposition

log = logging.getLogger(__name__)

DEFAULT_PORT = 9108


def _collector_module():
    """kafkasource.metrics.collector, which needs prometheus_client: the `metrics` extra."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise ImportError(
            'kafkasource.metrics.serve needs prometheus_client: pip install "kafkasource[metrics]"',
            name="prometheus_client",
        ) from None
    from kafkasource.metrics import collector

    return collector


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

    def __init__(
        self,
        spark,
        port: int | None,
        host: str,
        textfile: str | None,
        source_options: Sequence[Mapping[str, str] | SourceOptions],
        broker_interval_s: float,
    ):
        collector = _collector_module()  # before anything starts: without prometheus_client, nothing does
        self._lock = threading.Lock()
        self._queries = Queries()
        self._commits = CommitCounts()
        self._groups = [group_offsets.group_options(o) for o in source_options]  # checked before anything starts
        self._views = {o.group_id: group_offsets.GroupView(group_offsets.group_id(o)) for o in self._groups}
        self._clients = [KafkaClient(o) for o in self._groups]  # used by the groups' thread only
        self._broker_interval_s = max(1.0, broker_interval_s)
        self._closing = threading.Event()
        self._spark = spark
        self._receiver = OutcomeReceiver(host="127.0.0.1")
        self._threads = [
            threading.Thread(target=self._receive_outcomes, name="kafkasource-metrics-commits", daemon=True)
        ]
        # the groups are read on a thread of their own, so that a read waiting on a slow or unreachable broker (each of
        # its requests up to kafkaConsumer.pollTimeoutMs) holds up no query and no caller's loop, such as the ingest
        # job's, which watches for stop requests; that thread alone uses these clients. The crashes once blamed on
        # Kafka clients used from a second thread of the job's driver were librdkafka's admin OffsetFetch (librdkafka
        # issue #5040, see KafkaClient.committed_with_metadata), which crashes from a single thread too: threads were
        # never the cause, and that call is made nowhere now
        if self._groups:
            self._threads.append(
                threading.Thread(
                    target=self._read_groups_every_interval, name="kafkasource-metrics-groups", daemon=True
                )
            )
        self._exposition: Exposition = collector.Exposition(
            collector.ExporterCollector(self._lock, self._queries, self._views, self._commits), host, port, textfile
        )
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
        address = self._exposition.address
        return address[1] if address is not None else None

    @property
    def url(self) -> str | None:
        address = self._exposition.address
        if address is None:
            return None
        host, port = address
        return f"http://[{host}]:{port}/metrics" if ":" in host else f"http://{host}:{port}/metrics"

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
        for options, client in zip(self._groups, self._clients, strict=True):
            try:
                view = group_offsets.read_group(options, client)
            except Exception as exc:  # the brokers may be away for a while: keep the last view, count the error
                log.warning("reading the offsets of group %s failed: %s", options.group_id, exc)
                with self._lock:
                    self._views[options.group_id].read_errors += 1
                continue
            with self._lock:
                view.read_errors = self._views[options.group_id].read_errors
                self._views[options.group_id] = view

    # -- what it gives ---------------------------------------------------------------------------------
    def text(self) -> str:
        """The metrics in Prometheus' text format, as a scrape that does not ask for OpenMetrics gets them."""
        return self._exposition.text()

    def write_textfile(self) -> None:
        """Write the metrics to `textfile` (if given) as node_exporter wants it: whole, by a rename."""
        self._exposition.write_textfile()

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
        self._exposition.close()
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


def serve(
    spark,
    port: int | None = DEFAULT_PORT,
    host: str = "127.0.0.1",
    textfile: str | None = None,
    source_options: Mapping[str, str] | SourceOptions | Sequence[Mapping[str, str] | SourceOptions] = (),
    broker_interval_s: float = 30.0,
) -> Exporter:
    """Export the metrics of this session's kafkasource queries in Prometheus' text format (OpenMetrics to a scraper
    that asks for it) at http://host:port/metrics (port 0: any free one, see `exporter.port`; None: no HTTP, e.g.
    with `textfile` only). Needs prometheus_client: `pip install "kafkasource[metrics]"`.

    `source_options`: the options of the queries (one mapping, or several) whose consumer groups' committed
    offsets to read from the brokers, at most every `broker_interval_s` seconds. Call it before starting the
    queries: commit outcomes reach it from queries started afterwards (classic Spark; not over Spark Connect)."""
    if isinstance(source_options, (Mapping, SourceOptions)):
        source_options = [source_options]
    return Exporter(spark, port, host, textfile, list(source_options), broker_interval_s)
