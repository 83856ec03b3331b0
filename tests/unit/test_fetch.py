"""Executor-side reading without a broker: the configurations the native consumer refuses and what it frees, the
executors' read defaults, and which ranges a stall or an error event concerns."""

from __future__ import annotations

import logging
import os

import pytest

from kafkasource.errors import KafkaSourceError
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading.consumers import ConsumerPool, FetchConfig
from kafkasource.reading.native import NativeConsumer
from kafkasource.reading.task_reader import RangeState, TaskReader, stall_error
from kafkasource.runtime import native_extension

NUL_IN_SERVERS = {"client.id": "kafkasource-test", "bootstrap.servers": "127.0.0.1:9\x00,127.0.0.1:10"}
UNREACHABLE = FetchConfig({"bootstrap.servers": "127.0.0.1:9"}, False, True, 1000)


@pytest.mark.skipif(not native_extension.available(),
                    reason="needs the native extension, which this install did not build")
def test_a_configuration_the_native_consumer_refuses_falls_back_to_confluent_kafka(caplog):
    # a property of a newer librdkafka (confluent-kafka's 2.16) than the extension's (2.12)
    newer = {"bootstrap.servers": "127.0.0.1:9", "sasl.oauthbearer.sub.claim.name": "sub"}
    pool = ConsumerPool()
    with caplog.at_level(logging.WARNING, logger="kafkasource.reading.consumers"):
        consumer = pool.acquire(FetchConfig(newer, False, True, 1000, read_path="auto"))
    assert not isinstance(consumer, NativeConsumer)
    assert "the native consumer refused the configuration (sasl.oauthbearer.sub.claim.name: No such configuration " \
           "property" in caplog.text
    consumer.close()

    with pytest.raises(KafkaSourceError, match="readPath is native, but the native consumer refused the "
                                               "configuration: sasl.oauthbearer.sub.claim.name: No such"):
        pool.acquire(FetchConfig(newer, False, True, 1000, read_path="native"))


@pytest.mark.skipif(not native_extension.available(),
                    reason="needs the native extension, which this install did not build")
def test_the_native_consumer_refuses_a_nul_in_the_bootstrap_servers_naming_the_property_only():
    """librdkafka's C strings would end at the NUL; the value is not shown, as a property's value can be a secret."""
    with pytest.raises(ValueError) as refused:
        NativeConsumer(NUL_IN_SERVERS)
    assert str(refused.value) == "the value of bootstrap.servers holds a NUL character (\\x00)"


@pytest.mark.skipif(not native_extension.available(),
                    reason="needs the native extension, which this install did not build")
def test_the_native_consumer_refuses_a_configuration_without_a_group_id_and_closes_one_with_it():
    """librdkafka gives a consumer without a group.id no consumer queue: one made anyway crashed the process when
    it was closed. The source always sets a group.id (the query's, else its own)."""
    with pytest.raises(ValueError) as refused:
        NativeConsumer({"bootstrap.servers": "127.0.0.1:9"})
    assert str(refused.value) == "group.id: the native consumer needs one (it never joins the group nor commits)"

    consumer = NativeConsumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "kafkasource-test"})
    consumer.close()
    with pytest.raises(OSError) as closed:
        consumer.assignment()
    assert str(closed.value) == "the consumer is closed"


@pytest.mark.skipif(not native_extension.available(),
                    reason="needs the native extension, which this install did not build")
def test_the_native_consumer_frees_the_configuration_it_refuses():
    """A configuration refused halfway is destroyed: a leaked one would be some 2.6 KiB, 26 MiB over 10,000."""
    def refuse(times):
        for _ in range(times):
            with pytest.raises(ValueError):
                NativeConsumer(NUL_IN_SERVERS)

    def resident_kib():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    refuse(1000)  # the allocator's pools settle first
    before = resident_kib()
    refuse(10_000)
    assert resident_kib() - before < 6 * 1024


def test_executor_defaults_favour_bounded_reads_and_user_settings_win():
    defaults = FetchConfig({"bootstrap.servers": "127.0.0.1:9"}, False, True, 1000).consumer_config()
    assert (defaults["fetch.queue.backoff.ms"], defaults["fetch.wait.max.ms"]) == (10, 10)
    assert defaults["reconnect.backoff.max.ms"] == 1000
    assert defaults["fetch.error.backoff.ms"] == 20
    chosen = FetchConfig({"bootstrap.servers": "127.0.0.1:9", "fetch.wait.max.ms": "250"}, False, True, 1000)
    assert chosen.consumer_config()["fetch.wait.max.ms"] == "250"


def test_a_stall_error_names_a_single_range_or_up_to_five_ranges_of_a_packed_task():
    ranges = [RangeState(None, OffsetRange("orders", partition, 10, 20), UNREACHABLE) for partition in range(7)]
    for state in ranges:
        state.position = 12
    advice = "nothing arrived within 1000 ms (kafkaConsumer.pollTimeoutMs). Check that the brokers are reachable " \
             "from the executors"

    assert str(stall_error(ranges[:1], 1000)) == f"reading orders-0 stalled at offset 12 (range 10..20): {advice}"
    assert str(stall_error(ranges, 1000)) == (
        "reading 7 partitions stalled: orders-0 at 12 (range 10..20), orders-1 at 12 (range 10..20), orders-2 at 12 "
        f"(range 10..20), orders-3 at 12 (range 10..20), orders-4 at 12 (range 10..20): {advice}")


def test_an_error_event_concerns_its_partition_its_whole_topic_or_once_the_client_and_only_ranges_being_read():
    reader = TaskReader(None, (OffsetRange("a", 0, 0, 5), OffsetRange("a", 1, 0, 5), OffsetRange("b", 0, 0, 5),
                               OffsetRange("b", 1, 5, 5)), UNREACHABLE)  # b-1: empty, done before it starts

    def concerned(topic, partition):
        return [state.name for state in reader.concerned(topic, partition)]

    assert concerned("a", 1) == ["a-1"]
    assert concerned("a", -1) == concerned("a", None) == ["a-0", "a-1"]
    assert concerned(None, None) == ["a-0"]
    assert concerned("b", 1) == concerned("c", 0) == []
