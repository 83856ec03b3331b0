"""A commit larger than the group coordinator writes in one batch (4,000 partitions), on a broker of this module's
own: split into requests, every partition's offset lands and the broker stays up."""

from __future__ import annotations

import pytest

from dev import broker as local_broker
from tests.support.commit_helpers import committer
from tests.support.kafka_helpers import KafkaHarness


@pytest.fixture(scope="module")
def wide_kafka():
    """A broker of this module's own: before commits were split, the wide commit below shut its broker down."""
    broker = local_broker.start()
    yield KafkaHarness(broker.bootstrap_servers)
    broker.stop()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_commit_larger_than_one_offsets_batch_lands_whole_and_the_broker_stays_up(wide_kafka, mode):
    """4,000 partitions of a topic with a 249-character name: about 1.7 MB of offset records, more than the 1 MiB
    the group coordinator writes in one batch. Sent as one request, the broker answered "Unknown broker error" and
    shut down; split, every partition's offset lands."""
    kafka = wide_kafka
    name = kafka.unique_name(f"wide-{mode}")
    topic = kafka.create_topic(name + "-" + "w" * (248 - len(name)), partitions=4000)
    assert len(topic) == 249
    group = kafka.unique_name(f"wide-{mode}")
    wide = committer(kafka, group, mode, timeout_ms=120_000)
    try:
        wide.commit({(topic, p): 0 for p in range(4000)})
        wide.commit({(topic, p): p % 7 for p in range(4000)})
        wide.commit({(topic, p): 9 for p in range(5)})  # a usual trigger's commit afterwards
    finally:
        wide.close()  # an async committer sends what is queued and waits for the answers

    expected = {p: 9 if p < 5 else p % 7 for p in range(4000)}
    assert kafka.committed(group, topic, 4000) == expected
    assert wide.failed_async_commits == 0
