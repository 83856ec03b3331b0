"""The sink through a real cluster's failures: three brokers (replication 3, min.insync.replicas 2) and a controller
of their own (dev/kafka_cluster.py's "dedicated" layout, so that two brokers may be down with the cluster's
metadata still answering).

Each scenario writes values numbered at the source and reads the target back record by record (read_committed
under exactly-once): exactly-once queries through a rolling restart, each node stopped cleanly or with SIGKILL in
turn; a kept producer's marker after its group's coordinator stopped cleanly (librdkafka's coordinator bug); a batch
write with acks=all while a leader is killed; and writes refused while two of three brokers are down, then resumed
from the checkpoint. The write and read paths are spread over the scenarios rather than multiplied by them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from dev.process import REPO_ROOT
from kafkasource.options.sink import parse_sink_options
from kafkasource.writing.markers import MarkedBatch, marker_group
from kafkasource.writing.transactional_pool import TransactionalPool
from kafkasource.writing.transactions import Outcome, transactional_id, write_transaction
from tests.support import native_coverage
from tests.support.cluster_helpers import log_ends, replicated_topic, report, triggers
from tests.support.kafka_helpers import KafkaHarness, Record, SequenceProducer, await_condition
from tests.support.sink_helpers import copy_query, finish_available_now, read_topic, write_batch

pytestmark = [pytest.mark.faults, pytest.mark.spark]  # spark: the 3-node cluster is as slow to start
NATIVE = native_coverage.WRITE_PATHS[-1]  # "native" where the extension is built


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


# No trigger may take longer while a node goes away and comes back. Every wait of a task's transaction is bounded
# (its first marker by 15 s, delivery, marker and commit by the 60 s transaction timeout and their margins), so a
# trigger past this is a wait the sink does not bound. Most runs stay under 25 s. Runs beside another busy process
# reached 40-58 s, spent waiting for leaders that moved twice: the controller, kept from the CPU for 2.5 s, fenced
# a live broker (dev/kafka_cluster.py now runs it ahead of the rest). Too few runs since then to hold it to the
# rolling-restart issue's 30 s.
TRIGGER_BOUND_S = 120


class FileFeed:
    """Text files of numbered lines, FILE_LINES every half second, into a folder a file stream reads. Each file is
    written under a hidden name and renamed, as Spark's file source must never see half a file."""

    FILE_LINES = 50

    def __init__(self, folder) -> None:
        self.folder, self.lines = folder, []
        folder.mkdir()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(0.5):
            lines = [f"f{n}-{i}" for i in range(self.FILE_LINES)]
            hidden = self.folder / f".f{n:05d}.txt"
            hidden.write_text("\n".join(lines) + "\n")
            hidden.rename(self.folder / f"f{n:05d}.txt")
            self.lines += lines
            n += 1


class QueryProcess:
    """tests/support/query_process.py in a process of its own, answering as much of a StreamingQuery as the tests
    ask: recentProgress, lastProgress, status, exception() (a failure once the process ended with one)."""

    def __init__(self, folder, name: str, master: str, source: str, read: dict, write: dict) -> None:
        self.progress_file, self.stop_file = folder / f"{name}-progress.jsonl", folder / f"{name}-stop"
        config = folder / f"{name}.json"
        config.write_text(json.dumps({"master": master, "source": source, "read": read, "write": write,
                                      "checkpoint": str(folder / f"{name}-checkpoint"),
                                      "progress": str(self.progress_file), "stop": str(self.stop_file)}))
        self.stderr = folder / f"{name}.err"
        with open(self.stderr, "wb") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "tests.support.query_process", str(config)],
                                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=err)

    def exception(self) -> str | None:
        if self.process.poll() in (None, 0):
            return None
        return self.stderr.read_text(errors="replace")[-3000:]

    @property
    def recentProgress(self) -> list[dict]:  # noqa: N802 (StreamingQuery's name)
        if not self.progress_file.exists():
            return []
        return [json.loads(line) for line in self.progress_file.read_text().splitlines() if line.endswith("}")]

    @property
    def lastProgress(self) -> dict | None:  # noqa: N802 (StreamingQuery's name)
        return (self.recentProgress or [None])[-1]

    @property
    def status(self) -> str:
        return "running" if self.process.poll() is None else f"ended with {self.process.returncode}"

    def stop(self) -> int:
        self.stop_file.touch()
        try:
            return self.process.wait(90)
        finally:
            if self.process.poll() is None:
                self.process.kill()


class Watch(threading.Thread):
    """Every few seconds while the copy runs: its progress by batch (recentProgress keeps only the last hundred),
    and whether its group has committed past what its target holds, partition by partition (a sample the cluster
    could not answer, a node being down, is left out and counted)."""

    def __init__(self, kafka: KafkaHarness, query, group: str, source: str, target: str) -> None:
        super().__init__(daemon=True)
        self.kafka, self.query, self.group, self.source, self.target = kafka, query, group, source, target
        self.progress: dict[int, dict] = {}
        self.ahead: list[str] = []
        self.samples = self.unanswered = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(3):
            self.sample()

    def sample(self) -> None:
        for progress in self.query.recentProgress:
            self.progress[progress["batchId"]] = progress
        try:
            committed = self.kafka.committed(self.group, self.source, 3)
            held = Counter(r[0] for r in read_topic(self.kafka, self.target, 3, read_committed=True, timeout=20))
        except Exception:  # a read or a commit lookup that met a node going away
            self.unanswered += 1
            return
        self.samples += 1
        self.ahead += [f"partition {p}: committed {offset}, {held[p]} written" for p, offset in committed.items()
                       if offset > held[p]]

    def stop(self) -> None:
        self.stopped.set()
        self.join(120)
        self.sample()


def values_by_partition(records) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    for partition, _offset, _key, value, _headers in records:
        found[partition].append(value)
    return found


# (how nodes stop, the file stream's writePath or None, the copy's writePath, readPath, commitMode). The file stream,
# whose sink keeps its producer, runs under clean stops, where a kept producer's cached coordinators go stale (a
# node that stops cleanly leaves the metadata), and test_a_kept_producers_marker_goes_on_when_its_groups_coordinator_
# shuts_down_cleanly runs that case on both write paths without Spark. Both queries run in Sparks of their own
# (tests/support/query_process.py) that run a failed task again, as a cluster's Spark does (TASK_ATTEMPTS).
TASK_ATTEMPTS = 4  # spark.task.maxFailures' default
ROLLS = [("clean", NATIVE, "python", native_coverage.READ_PATHS[-1], "sync"),
         ("kill", None, NATIVE, "python", "async")]


@pytest.mark.parametrize(("how", "kept_path", "copy_path", "read_path", "commit_mode"), ROLLS,
                         ids=[r[0] for r in ROLLS])
def test_a_rolling_restart_stalls_no_trigger_and_writes_each_record_once(
        cluster, kafka, tmp_path, capsys, how, kept_path, copy_path, read_path, commit_mode):
    """Exactly-once queries on 1 s triggers while each node in turn is stopped (cleanly, or with SIGKILL), kept down
    10 s and started again, the next once every partition is fully replicated: a Kafka-to-Kafka copy (200 records a
    second over 3 partitions) committing its group and, under clean stops, a file stream (100 lines a second) in a
    one-core Spark, whose sink keeps its producer; each query in a Spark of its own that runs a failed task again
    (as a cluster's does; a task's failure is not a query's). Each target holds every value once (read_committed),
    the copy's in its partition in the source's order; the group's commits are never ahead of what the target holds
    and end at the log end; no trigger takes longer than TRIGGER_BOUND_S."""
    source, copy_target = replicated_topic(kafka, "roll-source", 3), replicated_topic(kafka, "roll-copy", 3)
    kept_target = replicated_topic(kafka, "roll-files", 3) if kept_path else None
    group = kafka.unique_name("roll-group")
    bootstrap = {"kafka.bootstrap.servers": kafka.bootstrap_servers}
    reading = {**bootstrap, "subscribe": source, "startingOffsets": "earliest", "kafka.group.id": group,
               "readPath": read_path, "commitMode": commit_mode, "maxOffsetsPerTrigger": "1000"}
    writing = {**bootstrap, "topic": copy_target, "deliveryGuarantee": "exactly-once", "writePath": copy_path,
               "transactionalIdPrefix": kafka.unique_name("roll-copy")}
    with SequenceProducer(kafka, source, 3, per_second=200) as producer, FileFeed(tmp_path / "in") as feed:
        kept = kept_target and QueryProcess(
            tmp_path, "files", f"local[1,{TASK_ATTEMPTS}]", "files", {"path": str(feed.folder)},
            {**bootstrap, "topic": kept_target, "deliveryGuarantee": "exactly-once", "writePath": kept_path,
             "transactionalIdPrefix": kafka.unique_name("roll-files")})
        if not kept:
            feed.stop()  # nothing reads it
        copy = QueryProcess(tmp_path, "copy", f"local[2,{TASK_ATTEMPTS}]", "kafka", reading, writing)
        watch = Watch(kafka, copy, group, source, copy_target)
        watch.start()
        try:
            await_condition("the copy's first batch with rows",
                            lambda: any(p["numInputRows"] > 0 for p in copy.recentProgress), copy, timeout=180)
            if kept:
                await_condition("the file stream's first batch with rows", lambda: any(
                    p["numInputRows"] > 0 for p in kept.recentProgress), kept, timeout=180)
            outages = cluster.rolling_restart(how, down=10)
            producer.stop()
            feed.stop()
            ends = await_condition("the source's log ends", lambda: log_ends(kafka, source, 3), timeout=60)
            await_condition("the group's commits at the log end", lambda: kafka.committed(group, source, 3) == ends,
                            copy, timeout=120)
            if kept:
                await_condition("every line in the file stream's target", lambda: len(
                    read_topic(kafka, kept_target, 3, read_committed=True)) >= len(feed.lines), kept, timeout=120)
        finally:
            watch.stop()
            copied_exit = copy.stop()
            kept_exit = kept.stop() if kept else 0
    assert (copied_exit, kept_exit) == (0, 0), (copy.exception(), kept and kept.exception())

    assert producer.errors == []
    copied = values_by_partition(read_topic(kafka, copy_target, 3, read_committed=True))
    assert copied == {p: producer.values_in_order(p) for p in range(3)}  # each once, in its partition, in order
    figures = {f"copy (writePath={copy_path}, readPath={read_path})": triggers(list(watch.progress.values()))}
    if kept:
        lines = Counter(r[3] for r in read_topic(kafka, kept_target, 3, read_committed=True))
        assert lines == Counter(line.encode() for line in feed.lines)  # each once
        figures[f"file stream (writePath={kept_path})"] = triggers(kept.recentProgress)
    assert watch.ahead == [] and watch.samples >= 5, (watch.ahead, watch.samples)
    assert all(max(longest, gap) <= TRIGGER_BOUND_S for longest, gap, _, _ in figures.values()), figures
    report(capsys, f"rolling restart ({'clean stops' if how == 'clean' else 'SIGKILL'}, 10 s down each; "
                   f"{', '.join(f'node {n} back in sync {s:.0f} s after it went' for n, s in outages)}): "
                   + "; ".join(f"{name} {batches} batches, worst trigger {longest:.1f} s, longest between two batches "
                               f"{gap:.1f} s" for name, (longest, gap, batches, _) in figures.items())
                   + f"; {f'{len(feed.lines)} lines and ' if kept else ''}{sum(ends.values())} records, 0 lost, 0 "
                     f"duplicated; the group "
                     f"({commit_mode} commits) never ahead in {watch.samples} samples ({watch.unanswered} unanswered) "
                     f"and at the log end")


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
