"""Tests that start processes of their own beyond the session's broker, registry and Spark: jobs under spark-submit,
a standalone cluster, Spark Connect, 3-node Kafka clusters, secured brokers, faults, Prometheus, Delta Lake and
Iceberg, the plain-install run's checks."""
