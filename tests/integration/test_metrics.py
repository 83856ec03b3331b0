"""The metrics exporter against the broker's truth, with real Spark: while a processing-time query runs, after it
has caught up, and once records arrived behind the group's commit."""

from __future__ import annotations

import time

from kafkasource import metrics
from tests.support.kafka_helpers import Record, await_condition
from tests.support.metrics_helpers import by_partition, scrape
from tests.support.query_helpers import base_options, stream


def test_exported_lag_and_commits_match_the_broker_while_running_and_after_catching_up(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("metrics"), partitions=3)
    group = kafka.unique_name("metrics-group")
    kafka.produce_values(topic, 300, partitions=3)
    options = base_options(kafka, subscribe=topic, maxOffsetsPerTrigger="30",
                           **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})
    exporter = metrics.serve(spark, port=0, source_options=options, broker_interval_s=1)
    query = None
    try:
        query = (stream(spark, options).writeStream.format("noop").queryName("metrics_test")
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="500 milliseconds")
                 .start())
        # while it runs (30 records a batch out of 300): the exported view is consistent with the broker's
        running = await_condition("a scrape while the query is behind", lambda: (
            lambda m: m if m.get("kafkasource_partition_lag_records") and
            sum(m["kafkasource_partition_lag_records"].values()) > 0 and
            m.get("kafkasource_group_committed_offset") else None)(scrape(exporter.url)), query, timeout=120)
        truth = kafka.committed(group, topic, 3)
        offsets = by_partition(running["kafkasource_partition_offset"])
        log_ends = by_partition(running["kafkasource_partition_log_end_offset"])
        assert log_ends == {0: 100, 1: 100, 2: 100}
        assert by_partition(running["kafkasource_partition_lag_records"]) == {p: 100 - offsets[p] for p in range(3)}
        committed = by_partition(running["kafkasource_group_committed_offset"])
        assert all(committed[p] <= truth[p] <= 100 for p in committed), (committed, truth)
        assert all(s >= 0 for s in running["kafkasource_partition_lag_seconds"].values())

        # caught up: every view says 0, and the committed offsets are the broker's, at the log end
        final = await_condition("the exporter to see the group at the log end", lambda: (
            lambda m: m if by_partition(m.get("kafkasource_group_lag_records", {})) == {0: 0, 1: 0, 2: 0} and
            by_partition(m["kafkasource_partition_lag_records"]) == {0: 0, 1: 0, 2: 0} else None)(scrape(exporter.url)),
            query, timeout=180)
        assert kafka.committed(group, topic, 3) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_group_committed_offset"]) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_partition_offset"]) == {0: 100, 1: 100, 2: 100}
        assert by_partition(final["kafkasource_partition_lag_seconds"]) == {0: 0, 1: 0, 2: 0}
        q = (("query", "metrics_test"), ("query_id", str(query.id)))
        assert final["kafkasource_query_input_rows_total"] == {q: 300}
        assert final["kafkasource_query_batches_total"][q] >= 10  # 30 records a batch at most
        assert final["kafkasource_query_active"] == {q: 1}
        # from the reader's process
        assert final["kafkasource_commits_total"][(("group", group), ("mode", "sync"))] >= 9
        commit_times = by_partition(final["kafkasource_group_commit_timestamp_seconds"])
        assert all(time.time() - 300 < t <= time.time() for t in commit_times.values()), commit_times
        query.stop()
        await_condition("the query to show as ended",
                        lambda: scrape(exporter.url)["kafkasource_query_active"] == {q: 0}, timeout=60)

        # a known lag that is not 0: records produced after the query stopped, behind the group's commit at 100,
        # which the exporter (still reading the group every second) reports exactly
        more = {0: 4, 1: 7, 2: 11}
        kafka.produce(topic, [Record(p, None, f"more-{p}-{i}".encode()) for p, n in more.items() for i in range(n)])
        behind = await_condition("the exporter to read the group behind the new records", lambda: (
            lambda m: m if by_partition(m.get("kafkasource_group_lag_records", {})) == more else None)(
            scrape(exporter.url)), timeout=60)
        assert by_partition(behind["kafkasource_group_committed_offset"]) == {0: 100, 1: 100, 2: 100}
        assert kafka.committed(group, topic, 3) == {0: 100, 1: 100, 2: 100}
        assert kafka.latest(topic, 3) == {p: 100 + n for p, n in more.items()}
    finally:
        if query is not None and query.isActive:
            query.stop()
        exporter.close()
