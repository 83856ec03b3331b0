"""The sink through a real cluster's failures: three brokers (replication 3, min.insync.replicas 2) and a controller
of their own (dev/kafka_cluster.py's "dedicated" layout, so that two brokers may be down with the cluster's
metadata still answering).

Each scenario writes values numbered at the source and reads the target back record by record (read_committed
under exactly-once): a Kafka-to-Kafka query while the leader of a target partition, the transaction coordinator of
one of its transactional ids and the coordinator of one of its marker groups are killed and started again, and a
broker is stopped cleanly and started again; the same at-least-once; a batch write with acks=all while a leader
is killed; and writes refused while two of three brokers are down, then resumed from the checkpoint. The write and
read paths are spread over the scenarios rather than multiplied by them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from kafkasource.options.sink import parse_sink_options
from kafkasource.writing.markers import MarkedBatch, marker_group
from kafkasource.writing.transactional_pool import TransactionalPool
from kafkasource.writing.transactions import Outcome, transactional_id, write_transaction
from tests import native_coverage
from tests.cluster_helpers import group_coordinator, log_ends, replicated_topic, report
from tests.kafka_helpers import KafkaHarness, Record, SequenceProducer, await_condition
from tests.sink_helpers import copy_query, finish_available_now, read_topic, write_batch

pytestmark = [pytest.mark.faults, pytest.mark.spark]  # spark: the 3-node cluster is as slow to start
NATIVE = native_coverage.WRITE_PATHS[-1]  # "native" where the extension is built
PROGRESS = 60  # records the target must gain while a node is down: the query wrote on without it


@pytest.fixture(scope="module")
def cluster():
    from dev.kafka_cluster import start_cluster

    running = start_cluster(3, layout="dedicated")
    yield running
    running.stop()


@pytest.fixture
def kafka(cluster) -> KafkaHarness:
    """The cluster's harness, every broker up and registered (a failed test may have left some down)."""
    cluster.restart_down()
    harness = KafkaHarness(cluster.bootstrap_servers)
    await_condition("three registered brokers", lambda: len(harness.admin.list_topics(timeout=10).brokers) == 3)
    return harness


def target_gains(kafka: KafkaHarness, target: str, records: int, after: int, query) -> float:
    """Wait until the target's read_committed ends, summed, pass `after` + `records`; the seconds it took."""
    began = time.monotonic()
    await_condition(f"{records} more records visible in {target}",
                    lambda: sum((log_ends(kafka, target, 2, committed=True) or {0: 0}).values()) >= after + records,
                    query, timeout=120)
    return time.monotonic() - began


def values_by_partition(records) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {0: [], 1: []}
    for partition, _offset, _key, value, _headers in records:
        found[partition].append(value)
    return found


# (guarantee, writePath, readPath, commitMode): each path and mode met once across the two
COPIES = [("exactly-once", NATIVE, "python", "sync"), ("at-least-once", "python", native_coverage.READ_PATHS[-1],
                                                         "async")]


# A task's transaction can stall after its coordinator's SIGKILL (seen with librdkafka 2.12.1 and 2.16.0, the native
# write path): the producer does not reach the coordinator that took over, which aborts the transaction once
# transaction.timeout.ms passes, and the query makes no progress for the whole wait; or the next task's new producer
# does not reach it either, and its init_transactions() times out, which fails the query. That stall, and only it,
# runs the scenario once more; the summary counts it as "rerun". (A marker's patterns replace pytest.ini's, so it
# names pytest.ini's own, the Python worker's missed connect-back, again.)
@pytest.mark.flaky(reruns=1, only_rerun=[r"timed out after \d+ s waiting for \d+ more records visible",
                                         r"(?s)in init_transactions\b.*_TIMED_OUT",
                                         "Python worker failed to connect back"])
@pytest.mark.parametrize(("guarantee", "write_path", "read_path", "commit_mode"), COPIES,
                         ids=[c[0] for c in COPIES])
def test_a_copy_query_writes_each_record_through_dying_leaders_and_coordinators(
        spark, cluster, kafka, tmp_path, capsys, guarantee, write_path, read_path, commit_mode):
    """A Kafka-to-Kafka query while, one after the other, the leader of a target partition, (exactly-once) the
    transaction coordinator of a task's transactional id and the coordinator of a task's marker group are killed
    with SIGKILL, and then a target partition's leader is stopped cleanly, each started again once the target
    gained records without it. Exactly-once: the target holds each source value once, in the source's order;
    at-least-once: each at least once. Either way the source group's commits end at the log end."""
    source, target = replicated_topic(kafka, "copy-source", 2), replicated_topic(kafka, "copy-target", 2)
    group, prefix = kafka.unique_name("copy-group"), kafka.unique_name("copy")
    roles = [("leader of target partition 0", "SIGKILL", lambda: cluster.leader(target, 0))]
    if guarantee == "exactly-once":
        roles += [(f"transaction coordinator of {transactional_id(prefix, 0)}", "SIGKILL",
                   lambda: cluster.transaction_coordinator(transactional_id(prefix, 0))),
                  (f"coordinator of marker group {marker_group(prefix, 1)}", "SIGKILL",
                   lambda: cluster.group_coordinator(marker_group(prefix, 1)))]
    roles.append(("leader of target partition 1", "clean stop", lambda: cluster.leader(target, 1)))
    reading = {"subscribe": source, "startingOffsets": "earliest", "kafka.group.id": group, "readPath": read_path,
               "commitMode": commit_mode, "maxOffsetsPerTrigger": "1000", "kafkaConsumer.pollTimeoutMs": "90000"}
    writing = {"topic": target, "deliveryGuarantee": guarantee, "writePath": write_path}
    if guarantee == "exactly-once":
        writing["transactionalIdPrefix"] = prefix
    outages = []
    with SequenceProducer(kafka, source, 2, per_second=50) as producer:
        query = copy_query(spark, kafka, reading, writing, tmp_path / "cp", interval="500 milliseconds")
        try:
            target_gains(kafka, target, PROGRESS, 0, query)
            if guarantee == "exactly-once":  # the hash rule the cluster finds coordinators by, against the brokers'
                marker = marker_group(prefix, 1)
                assert cluster.group_coordinator(marker) == group_coordinator(kafka, marker)
            for role, how, node_of in roles:
                victim = node_of()
                visible = sum((log_ends(kafka, target, 2, committed=True) or {0: 0}).values())
                if how == "SIGKILL":
                    cluster.kill(victim)
                else:
                    cluster.stop_node(victim)
                recovered = target_gains(kafka, target, PROGRESS, visible, query)
                cluster.restart(victim)
                outages.append(f"{role} (node {victim}, {how}): writing again after {recovered:.1f} s")
            producer.stop()
            ends = await_condition("the source's log ends", lambda: log_ends(kafka, source, 2), timeout=60)
            await_condition("the source group's commits at the log end",
                            lambda: kafka.committed(group, source, 2) == ends, query, timeout=120)
        finally:
            query.stop()

    assert producer.errors == []
    written = values_by_partition(read_topic(kafka, target, 2, read_committed=True))
    produced = {p: producer.values_in_order(p) for p in (0, 1)}
    assert sum(map(len, produced.values())) == sum(ends.values())
    counts = Counter(value for values in written.values() for value in values)
    lost = [value for values in produced.values() for value in values if value not in counts]
    duplicated = sum(n - 1 for n in counts.values())
    assert lost == []
    if guarantee == "exactly-once":
        assert written == produced  # each value once, in its partition, in the source's order
    report(capsys, f"{guarantee} copy (writePath={write_path}, readPath={read_path}, commitMode={commit_mode}) on 3 "
                   f"brokers, RF 3, min.insync.replicas 2: {'; '.join(outages)}; {sum(ends.values())} records, "
                   f"0 lost, {duplicated} duplicated; the source group committed the log end")


@pytest.mark.parametrize("write_path", native_coverage.WRITE_PATHS)
def test_a_kept_producers_marker_goes_on_when_its_groups_coordinator_shuts_down_cleanly(cluster, kafka, capsys,
                                                                                        write_path):
    """librdkafka's own reproduction of its coordinator bug, on real brokers: a transactional producer kept from the
    task before sends its batch marker just after the node coordinating the marker's group stopped cleanly and left
    the cluster's metadata. librdkafka keeps that node cached as the coordinator and, until another of the
    producer's connections goes up or down, never looks it up again: without the sink's connections.max.idle.ms the
    call waited past 180 s, the node's restart included. With it, the batch commits within the bound below, once."""
    topic = replicated_topic(kafka, "marker-coordinator", 1)
    pool = TransactionalPool()

    def writer(prefix: str):
        options = parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": topic,
                                      "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": prefix,
                                      "writePath": write_path}, streaming=True)
        return lambda batch_id: write_transaction(options, 0, iter([(topic, None, f"v{batch_id}".encode(), None, 0)]),
                                                  MarkedBatch("q", batch_id), pool)

    try:
        # a write under another prefix first: the coordinators' topics exist only once a transaction used them
        warm_up = kafka.unique_name("warm-up")
        writer(warm_up)(0)
        # a prefix whose marker group is coordinated by another node than its transactions: the bug is the group's
        prefix = next(p for p in (kafka.unique_name("marker-coordinator") for _ in range(50))
                      if cluster.group_coordinator(marker_group(p, 0)) != cluster.transaction_coordinator(
                          transactional_id(p, 0)))
        write = writer(prefix)
        pool.created = 0
        assert [write(0), write(1)] == [Outcome(1), Outcome(1)] and pool.created == 1  # one producer, kept
        victim = cluster.group_coordinator(marker_group(prefix, 0))
        cluster.stop_node(victim)
        await_condition("the stopped node out of the cluster's metadata",
                        lambda: len(kafka.admin.list_topics(timeout=10).brokers) == 2)
        began = time.monotonic()
        assert write(2) == Outcome(1)
        took = time.monotonic() - began
    finally:
        pool.close_all()
        cluster.restart_down()
    assert took < 30 and pool.created == 1  # the kept producer's own marker went through
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"v0", b"v0", b"v1", b"v2"]
    report(capsys, f"writePath={write_path}: a kept producer's marker after its group's coordinator (node {victim}) "
                   f"stopped cleanly committed in {took:.1f} s")


def test_a_batch_write_with_acks_all_loses_nothing_while_a_leader_dies(spark, cluster, kafka, capsys):
    """df.write saves one after another (acks=all, the native path where built) while the leader of the topic's
    partition 0 is killed and started again: every value of every save is in the topic once."""
    topic = replicated_topic(kafka, "batch", 2)
    per_save, saves = 2000, []

    def save() -> None:
        n = len(saves)
        df = spark.range(0, per_save, 1, 2).selectExpr(f"CAST(concat('s{n}-', id) AS BINARY) AS value",
                                                     "CAST(id % 2 AS INT) AS partition")
        began = time.monotonic()
        write_batch(df, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": topic, "kafka.acks": "all",
                         "writePath": NATIVE})
        saves.append((began, time.monotonic()))

    save()  # every node up
    victim, killed_at = cluster.leader(topic, 0), []
    # the saves stay in the test's thread (Spark does not find format("kafkasource") from another): the kill comes
    # from a timer, half a second into the next save
    killer = threading.Timer(0.5, lambda: (killed_at.append(time.monotonic()), cluster.kill(victim)))
    killer.start()
    try:
        while len(saves) < 20 and not (killed_at and sum(ended > killed_at[0] for _, ended in saves) >= 2):
            save()
    finally:
        killer.join()
        cluster.restart(victim)
    before = sum(ended < killed_at[0] for _, ended in saves)

    during = [ended for _, ended in saves if ended > killed_at[0]]
    values = Counter(r[3] for r in read_topic(kafka, topic, 2))
    expected = {f"s{n}-{i}".encode() for n in range(len(saves)) for i in range(per_save)}
    assert set(values) == expected and set(values.values()) == {1}  # 0 lost, 0 duplicated
    report(capsys, f"batch write, acks=all, writePath={NATIVE}: the leader of partition 0 (node {victim}) killed "
                   f"during save {before + 1} of {len(saves)} ({len(during)} saves ended after the kill, the first "
                   f"{during[0] - killed_at[0]:.1f} s after it): {len(expected)} records, 0 lost, 0 duplicated")


def test_two_brokers_down_refuse_writes_naming_min_insync_replicas_then_the_query_resumes(
        spark, cluster, kafka, tmp_path, capsys):
    """Two of the three brokers killed under an at-least-once copy: the partition is down to one in-sync replica,
    the leader refuses acks=all writes (NOT_ENOUGH_REPLICAS, which librdkafka retries until its delivery timeout
    and then reports only as timed out) and the query fails saying which partition, which replica is in sync and
    what min.insync.replicas asks. With one broker back, the query restarted from its checkpoint writes the rest:
    every value in the target, none lost."""
    # the source lets a record in with one in-sync replica: with eligible leader replicas (Kafka 4.1 on), a partition
    # below its min.insync.replicas also stops advancing its high watermark, and the query could never read them
    source = replicated_topic(kafka, "short-source", 1, {"min.insync.replicas": "1"})
    target = replicated_topic(kafka, "short-target", 1)
    first = kafka.produce(source, [Record(0, None, f"v{i}".encode()) for i in range(50)], acks="all")
    reading = {"subscribe": source, "startingOffsets": "earliest"}  # no group: nothing to commit to the brokers
    writing = {"topic": target, "writePath": "python", "kafka.delivery.timeout.ms": "8000"}
    query = copy_query(spark, kafka, reading, writing, tmp_path / "cp", interval="500 milliseconds")
    try:
        await_condition("the first 50 records in the target", lambda: log_ends(kafka, target, 1) == {0: 50}, query)
        survivor = cluster.leader(target, 0)
        down = [node for node in (1, 2, 3) if node != survivor]
        for node in down:
            cluster.kill(node)
        await_condition("one in-sync replica left, leading both topics", lambda: cluster.in_sync(target, 0) ==
                        cluster.in_sync(source, 0) == [survivor] and cluster.leader(source, 0) == survivor,
                        timeout=60)
        refused_at = time.monotonic()
        second = kafka.produce(source, [Record(0, None, f"w{i}".encode()) for i in range(50)], acks="all")
        await_condition("the query to fail", lambda: query.exception() is not None, timeout=120)
        failed_after = time.monotonic() - refused_at
        message = str(query.exception())
    finally:
        query.stop()
    assert (f"refused records for topic {target} partition 0 with NOT_ENOUGH_REPLICAS until kafka.delivery.timeout.ms "
            f"(8,000 ms) passed: the partition has 1 in-sync replica (node {survivor}) of 3, and topic {target}'s "
            f"min.insync.replicas asks for 2") in message, message
    assert f"Start the brokers of nodes {down[0]} and {down[1]}" in message, message

    cluster.restart(down[0])
    await_condition("two in-sync replicas", lambda: len(cluster.in_sync(target, 0)) >= 2, timeout=90)
    finish_available_now(copy_query(spark, kafka, reading, writing, tmp_path / "cp"))  # the same checkpoint
    values = Counter(r[3] for r in read_topic(kafka, target, 1))
    assert set(values) == {r.value for r in first + second}  # 0 lost
    report(capsys, f"two of three brokers down (nodes {down[0]} and {down[1]}): the copy failed {failed_after:.1f} s "
                   f"after the source got 50 more records, naming NOT_ENOUGH_REPLICAS, topic {target} partition 0, "
                   f"1 in-sync replica and min.insync.replicas 2; one broker back, it resumed from its checkpoint: "
                   f"100 records, 0 lost, {sum(values.values()) - 100} duplicated. The error: "
                   + message[message.index("the brokers at"):].splitlines()[0])
