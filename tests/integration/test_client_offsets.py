"""The driver's offset requests over many partitions, against the real broker: ListOffsets in calls of
LIST_OFFSETS_CHUNK partitions, shared out among LIST_OFFSETS_LANES clients asking at once, answer every partition
exactly."""

from __future__ import annotations

from kafkasource.cluster.client import LIST_OFFSETS_CHUNK, LIST_OFFSETS_LANES, KafkaClient
from kafkasource.options import parse_options
from tests.support.kafka_helpers import Record


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
