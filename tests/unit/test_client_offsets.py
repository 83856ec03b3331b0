"""The driver's offset requests over many partitions: ListOffsets in calls of LIST_OFFSETS_CHUNK partitions, shared
out among LIST_OFFSETS_LANES clients asking at once, answer every partition exactly; the lanes' runner keeps results
in order and ends every call before it returns or raises."""

from __future__ import annotations

import threading
import time

import pytest

from kafkasource.cluster.client import LIST_OFFSETS_CHUNK, LIST_OFFSETS_LANES, KafkaClient, in_parallel
from kafkasource.options import parse_options
from tests.support.kafka_helpers import Record


def test_in_parallel_returns_results_in_call_order_and_runs_the_calls_at_once():
    meet = threading.Barrier(3, timeout=10)  # passes only while all three calls run at the same time

    def call(n):
        def run():
            meet.wait()
            return n * 10
        return run

    assert in_parallel([call(1), call(2), call(3)]) == [10, 20, 30]
    assert in_parallel([lambda: "alone"]) == ["alone"]


def test_in_parallel_raises_the_first_failure_only_after_every_call_has_ended():
    ended = []

    def slow():
        time.sleep(0.3)
        ended.append("slow")
        return 1

    def failing():
        raise ValueError("the first lane failed")

    with pytest.raises(ValueError, match="the first lane failed"):
        in_parallel([failing, slow])
    assert ended == ["slow"]  # the other lane had finished before the failure reached the caller


def test_log_ends_and_starts_of_1600_partitions_asked_in_lanes_are_exact(kafka):
    partitions = 1600  # more calls than lanes: every lane asks at least one
    assert -(-partitions // LIST_OFFSETS_CHUNK) > LIST_OFFSETS_LANES
    topic = kafka.create_topic(kafka.unique_name("lanes"), partitions=partitions)
    # records in partitions at the edges of the calls and lanes, a different number in each
    filled = {0: 1, 499: 2, 500: 3, 999: 4, 1000: 5, 1199: 6, 1200: 7, 1599: 8}
    kafka.produce(topic, [Record(p, None, b"v") for p, n in filled.items() for _ in range(n)])
    client = KafkaClient(parse_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic}))
    everything = [(topic, p) for p in range(partitions)]
    try:
        ends = client.end(everything)
        starts = client.beginning(everything)
        lanes_used = len(client._offsets_consumers)
    finally:
        client.close()

    assert ends == {(topic, p): filled.get(p, 0) for p in range(partitions)}
    assert starts == {(topic, p): 0 for p in range(partitions)}
    assert lanes_used == LIST_OFFSETS_LANES
