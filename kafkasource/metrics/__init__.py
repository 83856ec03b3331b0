"""Prometheus metrics for kafkasource queries: `serve(spark, port=9108)`.

    exporter = kafkasource.metrics.serve(spark, port=9108, source_options=options)   # before starting queries
    ... queries run; Prometheus scrapes http://127.0.0.1:9108/metrics ...
    exporter.close()

Three sources feed it, each on its own thread, none on a query's path:
- a StreamingQueryListener: every query's progress (offsets, log ends, rows, durations) and its start and end;
- commit outcomes sent by the source's commits (kafkasource.commit.outcomes), for queries started after serve();
- the brokers, read at most every `broker_interval_s`: the committed offsets of the groups named in
  `source_options` (kafkasource.metrics.group_offsets).
With `textfile`, the same text is also written to that file (atomically) after each batch and on close(), for
node_exporter's textfile collector. docs/monitoring.md lists every metric.

prometheus_client writes, serves and negotiates the exposition (kafkasource.metrics.collector): serve() needs the
`metrics` extra, `pip install "kafkasource[metrics]"`; the rest of the package imports without it.
"""

from kafkasource.metrics.commit_counts import CommitCounts
from kafkasource.metrics.exporter import DEFAULT_PORT, Exporter, serve
from kafkasource.metrics.progress import LagListener, lag_from_progress

__all__ = ["DEFAULT_PORT", "CommitCounts", "Exporter", "LagListener", "lag_from_progress", "serve"]
