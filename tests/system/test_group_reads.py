"""The exporter's reads of a group's committed offsets where the admin client's OffsetFetch crashed the process: a
fresh broker whose group coordinator is being created while the reads run, one thread reading the group as the
exporter does while another commits. librdkafka's admin OffsetFetch dereferences a missing consumer-group handle when
the broker answers NOT_COORDINATOR (librdkafka issue #5040); our reads go through a consumer carrying the group id
(KafkaClient.committed_with_metadata), and no code of ours calls the admin one."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dev import broker as local_broker
from kafkasource.cluster.client import COORDINATOR_RETRIABLE, KafkaClient
from kafkasource.commit import metadata as committer
from kafkasource.metrics import group_offsets as group_reads

READS = 200
PARTITIONS = 3


@pytest.fixture
def fresh_broker(tmp_path):
    """A broker of this test's own: no group has been looked up on it, so __consumer_offsets does not exist yet and
    the test's first look-up of a group creates it."""
    broker = local_broker.start(data_dir=tmp_path / "broker")
    yield broker
    broker.stop()


def test_exporter_reads_are_exact_while_the_coordinator_is_created_and_another_thread_commits(fresh_broker):
    bootstrap = fresh_broker.bootstrap_servers
    topic, group, idle_group = "orders", "orders-ingest", "orders-audit"  # idle_group never commits
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(60)
    while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < PARTITIONS:
        time.sleep(0.1)
    assert "__consumer_offsets" not in admin.list_topics(timeout=10).topics  # no coordinator up yet
    options = {name: group_reads.group_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic,
                                                "kafka.group.id": name})
               for name in (group, idle_group)}
    clients = {name: KafkaClient(o) for name, o in options.items()}  # as the exporter holds them
    # commit n sets every partition to offset n, its metadata saying at_ms=n: a read shows which commit it saw
    commits = {"asked": 0, "answered": 0}
    lock = threading.Lock()
    reads: list[tuple[int, group_reads.GroupView, group_reads.GroupView, int]] = []  # answered, views, asked
    failures: list[BaseException] = []
    reading, done, stop = threading.Event(), threading.Event(), threading.Event()

    def read() -> None:
        try:
            for _ in range(READS):
                if stop.is_set():  # the committing side failed
                    return
                with lock:
                    before = commits["answered"]
                reading.set()
                views = {name: group_reads.read_group(options[name], clients[name]) for name in (group, idle_group)}
                with lock:
                    reads.append((before, views[group], views[idle_group], commits["asked"]))
        except BaseException as exc:  # the test thread reports it
            failures.append(exc)
        finally:
            done.set()

    reader = threading.Thread(target=read, name="exporter-reads", daemon=True)
    reader.start()
    assert reading.wait(60)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 600
    try:
        while not done.is_set() and time.monotonic() < deadline:
            with lock:
                commits["asked"] += 1
                n = commits["asked"]
            while True:  # the same commit until it lands: the coordinator may still be loading
                try:
                    consumer.commit(offsets=[TopicPartition(topic, p, n, metadata=committer.metadata(now_ms=n))
                                             for p in range(PARTITIONS)], asynchronous=False)
                    break
                except KafkaException as exc:  # e.g. "not coordinator", "coordinator load in progress"
                    error = exc.args[0]
                    if not (error.retriable() or error.code() in COORDINATOR_RETRIABLE) \
                            or time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            with lock:
                commits["answered"] = n
            time.sleep(0.02)
    finally:
        stop.set()
        consumer.close()
        reader.join(120)
        if not reader.is_alive():  # a client is closed only once no read is using it
            for client in clients.values():
                client.close()
    assert not reader.is_alive(), f"{len(reads)} of {READS} reads in 10 minutes"
    assert not failures, failures
    assert len(reads) == READS
    expected_partitions = {(topic, p) for p in range(PARTITIONS)}
    for before, view, idle_view, after in reads:
        if view.committed:  # one commit's offsets on every partition, with that commit's metadata
            seen = set(view.committed.values())
            assert len(seen) == 1 and set(view.committed) == expected_partitions, view.committed
            n = seen.pop()
            assert before <= n <= after, (before, n, after)
            assert {tp: who.at_ms for tp, who in view.committers.items()} == dict.fromkeys(expected_partitions, n)
        else:
            assert before == 0, f"a read began after commit {before} was answered and saw none"
        assert view.log_ends == dict.fromkeys(expected_partitions, 0)
        assert idle_view.committed == {} and idle_view.log_ends == dict.fromkeys(expected_partitions, 0)
    assert reads[0][0] == 0 and reads[-1][0] >= 1  # reads from before the first commit to well after it
