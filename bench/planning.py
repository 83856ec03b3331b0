"""Planning cost at scale: what the driver spends per trigger on a wide subscription, and where.

Topics of 1,000 / 5,000 / 10,000 partitions, as one topic (`subscribe`) or spread over 100 topics
(`subscribePattern`), on a local broker; a consumer group, so every trigger also commits; a trickle of
`--moving` records per trigger into as many random partitions (the rest stay idle).

In process (no Spark): the stream reader's latestOffset(), partitions() and commit() are called as
Spark calls them, with Spark's JSON round trip of the offsets, and the time is split by what it went to
(metadata, topic ids, ListOffsets, committed offsets, commits, range building, offsets JSON). With
`--profile`, a cProfile of the triggers of the widest case.

With `--sweep`: the log ends of the widest case through `KafkaClient.end`, for several numbers of offsets
clients asking at once (lanes) and of partitions per ListOffsets call, medians of 10 in each of 3 rounds:
what LIST_OFFSETS_LANES and LIST_OFFSETS_CHUNK were chosen from.

With `--spark`: a processing-time query (1 s trigger, noop sink) while `--moving` records a second arrive,
reporting the medians of the progress's durationMs.latestOffset and triggerExecution over the triggers
that read records, and the Spark tasks of such a trigger, with and without packRecordsPerTask.

    python3 -m bench.planning [--partitions 1000,5000,10000] [--layouts one,spread] [--triggers 30]
                              [--moving 20] [--profile] [--sweep] [--spark [--spark-seconds 40]]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from contextlib import contextmanager

from dev import broker as local_broker

SPREAD_TOPICS = 100
# partitions per CreateTopics/CreatePartitions request: KRaft controllers have capped the records one request may
# write (10,000 in Kafka 3.x; a topic is one record plus one per partition); not checked on this broker's version
CREATE_STEP = 5000


class Timer:
    """Milliseconds per named part, summed within a trigger."""

    def __init__(self):
        self.current: dict[str, float] = defaultdict(float)

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.current[name] += (time.perf_counter() - began) * 1000
        return timed

    @contextmanager
    def part(self, name: str):
        began = time.perf_counter()
        try:
            yield
        finally:
            self.current[name] += (time.perf_counter() - began) * 1000

    def take(self) -> dict[str, float]:
        out, self.current = dict(self.current), defaultdict(float)
        return out


def create_topics(admin, names: list[str], partitions_each: int) -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    for i in range(0, len(names), 20):
        batch = names[i:i + 20]
        futures = admin.create_topics([NewTopic(n, min(partitions_each, CREATE_STEP), 1) for n in batch],
                                      operation_timeout=120)
        for future in futures.values():
            future.result(180)
    for name in names:
        count = min(partitions_each, CREATE_STEP)
        while count < partitions_each:
            count = min(partitions_each, count + CREATE_STEP)
            admin.create_partitions([NewPartitions(name, count)], operation_timeout=120)[name].result(180)
    deadline = time.monotonic() + 120  # until the broker's metadata names every partition (producers need it)
    while True:
        topics = admin.list_topics(timeout=30).topics
        if all(name in topics and len(topics[name].partitions) == partitions_each for name in names):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the broker's metadata does not show {partitions_each} partitions of {names[0]}")
        time.sleep(0.5)
    # and until every partition has a leader answering ListOffsets: a new broker takes a while over thousands
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    wanted = [TopicPartition(t, p) for t in names for p in range(partitions_each)]
    while True:
        try:
            for i in range(0, len(wanted), 500):
                for future in admin.list_offsets({tp: OffsetSpec.latest() for tp in wanted[i:i + 500]},
                                                 request_timeout=30).values():
                    future.result(60)
            return
        except Exception:  # noqa: BLE001 - not led yet
            if time.monotonic() > deadline + 300:
                raise
            time.sleep(2)


def layout_topics(layout: str, partitions: int) -> tuple[list[str], int, dict[str, str]]:
    """Topic names, partitions per topic, and the subscription options."""
    marker = uuid.uuid4().hex[:6]
    if layout == "one":
        topic = f"plan-{marker}"
        return [topic], partitions, {"subscribe": topic}
    names = [f"plan-{marker}-{i:03d}" for i in range(SPREAD_TOPICS)]
    return names, partitions // SPREAD_TOPICS, {"subscribePattern": f"^plan-{marker}-"}


def all_partitions(names: list[str], each: int) -> list[tuple[str, int]]:
    return [(t, p) for t in names for p in range(each)]


def trickle(producer, targets: list[tuple[str, int]]) -> None:
    for topic, partition in targets:
        producer.produce(topic, value=b"x", partition=partition)
    producer.flush(30)


PARTS = ["metadata", "topic ids", "ListOffsets", "committed", "commits", "offsets JSON", "Spark's JSON",
         "ranges and tasks", "other"]


def in_process(bootstrap: str, names: list[str], each: int, subscription: dict[str, str], triggers: int,
               moving: int, extra: dict[str, str], profile: bool) -> dict:
    """Drive the reader as Spark does, trigger by trigger; medians of each part and of the whole."""
    from confluent_kafka import Producer
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    import kafkasource.stream as stream_module
    from kafkasource.cluster.client import KafkaClient
    from kafkasource.options import parse_options
    from kafkasource.stream import KafkaStreamReader

    options = parse_options({"kafka.bootstrap.servers": bootstrap, **subscription,
                             "kafka.group.id": f"g-{names[0]}", "startingOffsets": "latest", **extra})
    timer = Timer()
    client = KafkaClient(options.for_stream())
    for method, part in [("topics", "metadata"), ("topic_ids", "topic ids"), ("end", "ListOffsets"),
                         ("beginning", "ListOffsets"), ("high_watermarks", "ListOffsets"),
                         ("committed", "committed")]:
        setattr(client, method, timer.wrap(part, getattr(client, method)))
    originals = {name: getattr(stream_module, name) for name in ("to_json_dict", "from_json_dict")}
    for name, fn in originals.items():
        setattr(stream_module, name, timer.wrap("offsets JSON", fn))
    reader = KafkaStreamReader(options, client=client)
    committer = reader.committer
    for method in ("commit", "commit_final", "restart"):
        setattr(committer, method, timer.wrap("commits", getattr(committer, method)))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    everything = all_partitions(names, each)
    rng = random.Random(7)
    start = json.loads(json.dumps(reader.initialOffset()))
    timer.take()
    totals, parts_of, tasks, cpu = [], [], [], []
    profiler = cProfile.Profile() if profile else None
    try:
        for _ in range(triggers):
            trickle(producer, rng.sample(everything, moving))
            if profiler:
                profiler.enable()
            began, cpu_began = time.perf_counter(), time.process_time()
            end = reader.latestOffset(start, ReadAllAvailable())
            with timer.part("Spark's JSON"):  # Spark's Python runner: the reader's dicts travel as JSON text
                end = json.loads(json.dumps(end))
            before = sum(timer.current.values())
            with timer.part("ranges and tasks"):
                planned = reader.partitions(start, end)
            # what partitions() spent on offsets JSON or ListOffsets is counted there, not twice
            others = sum(timer.current.values()) - before - timer.current["ranges and tasks"]
            timer.current["ranges and tasks"] -= others
            reader.commit(end)  # the batch completed (Spark calls it one trigger late; the cost is the same)
            total = (time.perf_counter() - began) * 1000
            cpu.append((time.process_time() - cpu_began) * 1000)  # all the process's threads: librdkafka's too
            if profiler:
                profiler.disable()
            parts = timer.take()
            parts["other"] = total - sum(parts.values())
            totals.append(total)
            parts_of.append(parts)
            tasks.append(len(planned))
            start = end
    finally:
        for name, fn in originals.items():
            setattr(stream_module, name, fn)
        reader.stop()
    result = {"total": statistics.median(totals), "tasks": statistics.median(tasks), "cpu": statistics.median(cpu),
              "p90": sorted(totals)[int(0.9 * (len(totals) - 1))],
              **{p: statistics.median(parts.get(p, 0.0) for parts in parts_of) for p in PARTS}}
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(20)  # where the time is spent itself
        result["profile"] = text.getvalue()
    return result


SWEEP = [(1, 10_000), (1, 5000), (1, 2000), (1, 1000), (1, 500), (1, 250), (1, 100),
         (2, 500), (3, 500), (3, 250), (4, 250), (5, 200), (6, 250)]  # (lanes, partitions per call)


def sweep(bootstrap: str, names: list[str], each: int, rounds: int = 3, repeats: int = 10) -> str:
    """Wall and CPU of one lookup of every partition's log end, per (lanes, partitions per call); a table."""
    import kafkasource.cluster.client as client_module
    from kafkasource.options import parse_options

    everything = all_partitions(names, each)
    client = client_module.KafkaClient(parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": names[0]}))
    chosen = client_module.LIST_OFFSETS_LANES, client_module.LIST_OFFSETS_CHUNK
    found: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    try:
        for _ in range(rounds):
            for lanes, chunk in SWEEP:
                client_module.LIST_OFFSETS_LANES, client_module.LIST_OFFSETS_CHUNK = lanes, chunk
                client.end(everything)  # the lanes' clients exist and know the leaders
                walls, cpus = [], []
                for _ in range(repeats):
                    began, cpu_began = time.perf_counter(), time.process_time()
                    client.end(everything)
                    walls.append((time.perf_counter() - began) * 1000)
                    cpus.append((time.process_time() - cpu_began) * 1000)
                found[(lanes, chunk)].append((statistics.median(walls), statistics.median(cpus)))
    finally:
        client_module.LIST_OFFSETS_LANES, client_module.LIST_OFFSETS_CHUNK = chosen
        client.close()
    lines = [f"\nlog ends of {len(everything):,} partitions, medians of {repeats} per round, {rounds} rounds "
             f"(chosen: {chosen[0]} lanes x {chosen[1]})",
             "| lanes | partitions per call | wall ms | CPU ms |", "| --- | --- | --- | --- |"]
    for (lanes, chunk), figures in found.items():
        walls = [w for w, _ in figures]
        cpus = [c for _, c in figures]
        lines.append(f"| {lanes} | {chunk:,} | {min(walls):.0f}-{max(walls):.0f} | {min(cpus):.0f}-{max(cpus):.0f} |")
    return "\n".join(lines)


def with_spark(spark, bootstrap: str, names: list[str], each: int, subscription: dict[str, str], seconds: float,
               moving: int, extra: dict[str, str]) -> dict:
    """A processing-time query (1 s trigger) while `moving` records a second arrive in random partitions."""
    from confluent_kafka import Producer

    df = spark.readStream.format("kafkasource").option("kafka.bootstrap.servers", bootstrap)
    for key, value in {**subscription, "kafka.group.id": f"gs-{uuid.uuid4().hex[:6]}", "startingOffsets": "latest",
                       **extra}.items():
        df = df.option(key, value)
    query = (df.load().writeStream.format("noop").trigger(processingTime="1 second")
             .option("checkpointLocation", os.path.join(tempfile.mkdtemp(prefix="kafkasource-planning-"), "ck"))
             .start())
    stop = threading.Event()
    everything = all_partitions(names, each)

    def produce():
        producer, rng = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}), random.Random(11)
        while not stop.wait(1.0):
            trickle(producer, rng.sample(everything, moving))

    try:
        deadline = time.monotonic() + 300
        while not query.recentProgress and time.monotonic() < deadline:  # the first trigger fixed the start
            time.sleep(0.5)
        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        time.sleep(seconds)
        stop.set()
        thread.join(30)
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    reading = [p for p in progress if p.get("numInputRows")][1:]  # the first one warms up the Python workers
    if not reading:
        return {"latestOffset": float("nan"), "triggerExecution": float("nan"), "triggers": 0}
    return {"latestOffset": statistics.median(p["durationMs"].get("latestOffset", 0) for p in reading),
            "triggerExecution": statistics.median(p["durationMs"]["triggerExecution"] for p in reading),
            "triggers": len(reading)}


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the broker on the way out
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1000,5000,10000")
    parser.add_argument("--layouts", default="one,spread")
    parser.add_argument("--triggers", type=int, default=30)
    parser.add_argument("--moving", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="cProfile the triggers of the widest case")
    parser.add_argument("--sweep", action="store_true",
                        help="time the widest case's log ends per number of offsets clients and call size")
    parser.add_argument("--spark", action="store_true", help="also run each case as a real Spark query")
    parser.add_argument("--spark-seconds", type=float, default=40)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a source option for every run, e.g. packRecordsPerTask=10000")
    args = parser.parse_args(argv)
    extra = dict(item.split("=", 1) for item in args.option)
    sizes = [int(s) for s in args.partitions.split(",")]
    layouts = args.layouts.split(",")

    from confluent_kafka.admin import AdminClient

    spark = None
    try:
        if args.spark:
            from bench.run import spark_session
            spark = spark_session([])
        rows = []
        for layout in layouts:
            for size in sizes:
                # a broker of its own per case: a deleted topic's files stay open for a minute after deletion, and
                # 5,000 + 10,000 partitions on one broker passed the machine's limit of 20,000 open files
                broker = local_broker.start()
                try:
                    bootstrap = broker.bootstrap_servers
                    names, each, subscription = layout_topics(layout, size)
                    began = time.monotonic()
                    create_topics(AdminClient({"bootstrap.servers": bootstrap}), names, each)
                    created_s = time.monotonic() - began
                    profile = args.profile and size == max(sizes)
                    found = in_process(bootstrap, names, each, subscription, args.triggers, args.moving, extra,
                                       profile)
                    line = {"layout": layout, "partitions": size, "created_s": created_s, **found}
                    if args.sweep and size == max(sizes):
                        line["sweep"] = sweep(bootstrap, names, each)
                    if spark is not None:
                        line["spark"] = with_spark(spark, bootstrap, names, each, subscription, args.spark_seconds,
                                                   args.moving, extra)
                finally:
                    broker.stop()
                rows.append(line)
                report(line)
        print("\n| layout | partitions | driver total | p90 | CPU | " + " | ".join(PARTS) + " | tasks |"
              + (" Spark latestOffset | Spark triggerExecution |" if spark else ""))
        print("| --- " * (6 + len(PARTS) + (2 if spark else 0)) + "|")
        for line in rows:
            cells = [line["layout"], f"{line['partitions']:,}", f"{line['total']:.1f}", f"{line['p90']:.1f}",
                     f"{line['cpu']:.1f}",
                     *(f"{line[p]:.1f}" for p in PARTS), f"{line['tasks']:.0f}"]
            if spark:
                cells += [f"{line['spark']['latestOffset']:.0f}", f"{line['spark']['triggerExecution']:.0f}"]
            print("| " + " | ".join(cells) + " |")
        by_key = {(r["layout"], r["partitions"]): r for r in rows}
        for layout in layouts:
            low, high = by_key.get((layout, min(sizes))), by_key.get((layout, max(sizes)))
            if low and high and low is not high:
                ratio = f"{layout}: driver {high['partitions']:,} / {low['partitions']:,} partitions = " \
                        f"{high['total'] / low['total']:.2f}x"
                if spark:
                    spark_ratio = high['spark']['triggerExecution'] / low['spark']['triggerExecution']
                    ratio += f"; triggerExecution {spark_ratio:.2f}x"
                print(ratio)
    finally:
        if spark is not None:
            spark.stop()
    return 0


def report(line: dict) -> None:
    parts = ", ".join(f"{p} {line[p]:.1f}" for p in PARTS)
    print(f"{line['layout']} topic(s), {line['partitions']:,} partitions (created in {line['created_s']:.0f} s): "
          f"driver {line['total']:.1f} ms per trigger (median; p90 {line['p90']:.1f}, CPU {line['cpu']:.1f}): {parts}; "
          f"{line['tasks']:.0f} tasks", flush=True)
    if "spark" in line:
        s = line["spark"]
        print(f"  Spark: latestOffset {s['latestOffset']:.0f} ms, triggerExecution {s['triggerExecution']:.0f} ms "
              f"(medians of {s['triggers']} triggers that read records)", flush=True)
    if "profile" in line:
        print(line["profile"], flush=True)
    if "sweep" in line:
        print(line["sweep"], flush=True)


if __name__ == "__main__":
    sys.exit(main())
