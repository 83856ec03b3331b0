"""The soak's --cluster mode: the ingest job and, beside it, an exactly-once Kafka-to-Kafka query (the route job,
copying each source record to the same partition of a target topic) on the three-node cluster of
dev/kafka_cluster.py (replication 3, min.insync.replicas 2), while at random moments each job is SIGKILLed and
started again from its checkpoint, and a random node is SIGKILLed or stopped cleanly (in turn), kept down a few
seconds and started again (one node down at a time: the cluster's quorum and min.insync.replicas allow that).

After the drain it checks the ingest job as bench/soak.py does, and the route job record by record: a
read_committed consumer of the target finds, in each partition, every value the producer numbered there once and
in order (0 lost, 0 duplicated), and the route's group has committed the source's log ends.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench import job_memory
from bench.soak import Clock, Figures, Job, commits_within_sink, sink_check, stop_and_drain
from bench.soak_parts import PARTITIONS, QUIET, TOPIC, GroupView, SequenceProducer, Sink
from dev.kafka_cluster import KafkaCluster, start_cluster

INGEST_GROUP, ROUTE_GROUP, TARGET = "soak-ingest", "soak-route", "soak-copy"
DRAIN_TIMEOUT_S = 900
READ_TIMEOUT_S = 300
# as the ingest job's (bench/soak.py): the source rides out a node's outage on a loaded machine
ROUTE_CONFIG = '''[kafka]
"bootstrap.servers" = "{bootstrap}"
"group.id" = "{group}"
"auto.offset.reset" = "earliest"

[source]
subscribe = "{source}"
maxOffsetsPerTrigger = 5000
"kafkaConsumer.pollTimeoutMs" = 300000
commitTimeoutMs = 300000

[decode]
value = "text"

[transform]
sql = "SELECT value, kafka_partition AS partition FROM records"

[sink]
topic = "{target}"
checkpoint = "{workdir}/route-ck"
delivery_guarantee = "exactly-once"

[job]
name = "{group}"
trigger = "processingTime=1 second"
'''
INGEST_SOURCE = '''maxOffsetsPerTrigger = 5000
"kafkaConsumer.pollTimeoutMs" = 300000
commitTimeoutMs = 300000'''


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3), NewTopic(TARGET, PARTITIONS, 3)]).values():
        future.result(60)


def read_target(bootstrap: str) -> dict[int, list[str]]:
    """Each partition of the target, as a read_committed consumer sees it from offset 0 to its end: the values."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-reader", "enable.auto.commit": False,
                         "enable.partition.eof": True, "isolation.level": "read_committed", "log_level": QUIET})
    found: dict[int, list[str]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + READ_TIMEOUT_S
    try:
        consumer.assign([TopicPartition(TARGET, p, 0) for p in range(PARTITIONS)])
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, 1.0):
                if msg.error() is None:
                    at_end.discard(msg.partition())
                    found[msg.partition()].append(msg.value().decode())
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                else:
                    raise KafkaException(msg.error())
    finally:
        consumer.close()
    if len(at_end) < PARTITIONS:
        raise RuntimeError(f"{TARGET}: only partitions {sorted(at_end)} were read to their end in {READ_TIMEOUT_S} s")
    return found


def target_check(target: dict[int, list[str]], acked: dict[tuple[int, int], str]) -> tuple[int, int, list[str]]:
    """(lost, duplicated, problems): every acknowledged source value once in its partition of the target, in the
    source's order, and nothing else."""
    lost = duplicated = 0
    problems = []
    for partition, values in sorted(target.items()):
        expected = [value for (p, _), value in sorted(acked.items()) if p == partition]
        counts = Counter(values)
        missing = [v for v in expected if v not in counts]
        twice = sorted(v for v, n in counts.items() if n > 1)
        extra = sorted(set(counts) - set(expected))
        lost += len(missing)
        duplicated += sum(counts[v] - 1 for v in twice)
        problems += [f"partition {partition}: {len(found):,} {what} (first {found[:5]})"
                     for found, what in [(missing, "values lost"), (twice, "values more than once"),
                                         (extra, "values never produced")] if found]
        if not (missing or twice or extra) and values != expected:
            problems.append(f"partition {partition}: every value once, but not in the source's order")
    return lost, duplicated, problems


class NodeChaos:
    """One random node at a time SIGKILLed or stopped cleanly, kept down, started again."""

    def __init__(self, cluster: KafkaCluster, moments: random.Random, clock: Clock):
        self.cluster, self.moments, self.clock = cluster, moments, clock
        self.outages: dict[str, list[float]] = {"SIGKILL": [], "clean stop": []}

    def strike(self, down: tuple[float, float]) -> None:
        node_id = self.moments.randint(1, len(self.cluster.nodes))
        how = ("SIGKILL", "clean stop")[sum(map(len, self.outages.values())) % 2]  # in turn: both kinds every run
        began = time.monotonic()
        if how == "SIGKILL":
            self.cluster.kill(node_id)
        else:
            self.cluster.stop_node(node_id)
        time.sleep(self.moments.uniform(*down))  # the outage itself: a length of time, not a wait for the machine
        self.cluster.restart(node_id, timeout=300)
        took = time.monotonic() - began
        self.outages[how].append(took)
        self.clock.say(f"node {node_id} ({how}) down {took:.1f} s, answering again")


def soak(args: argparse.Namespace, workdir: Path, clock: Clock) -> bool:
    moments = random.Random(args.seed)
    cluster = start_cluster(3)
    bootstrap = cluster.bootstrap_servers
    producer = None
    jobs: list[Job] = []
    try:
        clock.say(f"cluster up on {bootstrap}")
        create_topics(bootstrap)
        producer = SequenceProducer(bootstrap, args.rate)
        producer.start()
        from dev.submit import write_config

        ingest_config = write_config(workdir / "ingest.toml", bootstrap, TOPIC, INGEST_GROUP, workdir,
                                     trigger="processingTime=1 second", value="text", extra_source=INGEST_SOURCE)
        route_config = workdir / "route.toml"
        route_config.write_text(ROUTE_CONFIG.format(bootstrap=bootstrap, group=ROUTE_GROUP, source=TOPIC,
                                                    target=TARGET, workdir=workdir))
        jobs = [Job(workdir, bootstrap, clock, "ingest", ingest_config),
                Job(workdir, bootstrap, clock, "route", route_config)]
        ingest_view, route_view = GroupView(bootstrap, INGEST_GROUP), GroupView(bootstrap, ROUTE_GROUP)
        sink, figures, chaos = Sink(workdir / "out"), Figures(), NodeChaos(cluster, moments, clock)
        kills = Counter[str]()
        for job in jobs:
            job.start()
        ends_at = clock.started + args.minutes * 60
        next_kill = {job.name: job.current.started + moments.uniform(*args.kill_every) for job in jobs}
        next_node = time.monotonic() + moments.uniform(*args.node_every)
        while (now := time.monotonic()) < ends_at:
            for job in jobs:
                if job.exited() is not None:
                    job.note_exit()
                    next_kill[job.name] = job.current.started + moments.uniform(*args.kill_every)
                elif now >= next_kill[job.name]:
                    if job.name == "ingest":  # before the kill: commits never ahead of the sink
                        ahead = commits_within_sink(ingest_view.committed(), sink.rows())
                        figures.commit_samples += 1
                        figures.ahead += [f"kill {kills['ingest'] + 1}: {problem}" for problem in ahead]
                    kills[job.name] += 1
                    job.end(f"kill {kills[job.name]}")
                    job.start()
                    next_kill[job.name] = job.current.started + moments.uniform(*args.kill_every)
            if now >= next_node:
                chaos.strike(args.down)
                next_node = time.monotonic() + moments.uniform(*args.node_every)
            time.sleep(1.0)
        produced_for, ends, drained, drain_s = stop_and_drain(
            producer, ingest_view, clock, lambda ends: drain(jobs, ingest_view, route_view, sink, ends))
        for job in jobs:
            job.end("stopped after the drain")
        target = read_target(bootstrap)
        return report(args, figures, kills, chaos, jobs, producer, sink.rows(), target, ends,
                      (ingest_view.committed(), route_view.committed()), drained, produced_for, drain_s, clock)
    finally:
        try:
            for job in jobs:
                job.close()
            if producer is not None:
                producer.stop()
        finally:
            cluster.stop()


def drain(jobs: list[Job], ingest: GroupView, route: GroupView, sink: Sink, ends: dict[int, int]) -> bool:
    """Wait (bounded) until both groups committed the log ends and the ingest job's sink holds every offset (the
    route commits its group only after its batch's transactions committed)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        for job in jobs:
            if job.exited() is not None:
                job.note_exit()
        if ingest.committed() == ends and route.committed() == ends and \
                len({(p, o) for p, o, _ in sink.rows()}) >= sum(ends.values()):
            return True
        time.sleep(2)
    return False


def report(args, figures: Figures, kills: Counter, chaos: NodeChaos, jobs: list[Job], producer: SequenceProducer,
           rows, target: dict[int, list[str]], ends: dict[int, int], committed: tuple[dict, dict], drained: bool,
           produced_for: float, drain_s: float, clock: Clock) -> bool:
    total = clock.elapsed()
    lost, duplicated, target_problems = target_check(target, producer.acked)
    ingest_committed, route_committed = committed
    checks = [
        ("ingest: exactly once in the sink", sink_check(rows, ends, producer.acked)),
        (f"ingest: commits never ahead of the sink ({figures.commit_samples} samples, one before each kill)",
         figures.ahead + ([] if ingest_committed == ends else [f"committed {ingest_committed}, log ends {ends}"])),
        ("route (exactly-once): each source record once in the target, in order", target_problems),
        ("route: its group committed the log ends",
         [] if route_committed == ends else [f"committed {route_committed}, log ends {ends}"]),
        *[(f"{job.name}: memory flat", job_memory.flatness_problems([run.memory for run in job.runs])) for job in jobs],
        ("the jobs ended only when killed", [exit for job in jobs for exit in job.exits]),
        ("the producer had no error", producer.errors),
    ]
    print(f"\ncluster soak {time.strftime('%Y-%m-%d %H:%M')}, seed {args.seed}: {total / 60:.1f} min in all "
          f"({produced_for / 60:.1f} min producing and killing; {drain_s:.0f} s to drain)")
    print(f"  records: {sum(ends.values()):,} produced ({args.rate}/s asked) to {PARTITIONS} partitions, RF 3; "
          f"ingest sink {len(rows):,} rows; route target {sum(len(v) for v in target.values()):,} records "
          f"(read_committed): {lost} lost, {duplicated} duplicated")
    outages = "; ".join(f"{len(took)} node {how}s" + (f" (down {min(took):.0f}-{max(took):.0f} s)" if took else "")
                        for how, took in chaos.outages.items())
    print(f"  kills: ingest job {kills['ingest']}, route job {kills['route']} (SIGKILL of the whole job); {outages}")
    print(f"  drained: {'yes' if drained else 'NO'}; ingest committed {ingest_committed}, route {route_committed}")
    for job in jobs:
        print(f"  memory of the {job.name} job's Python processes (largest of each kind):")
        print("\n".join(job_memory.report([run.memory for run in job.runs])))
    for name, problems in checks:
        print(f"  {'FAIL' if problems else 'ok  '} {name}" + "".join(f"\n         {p}" for p in problems))
    return drained and not any(problems for _, problems in checks)
