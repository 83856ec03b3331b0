"""A record's latency through a Kafka-to-Kafka streaming query at a trickle: kafkasource, the built-in
format("kafka") and their mixes, against Spark's own floor, in one run on one broker and one Spark session.

Every latency row is measured the same way. Fresh input and output topics of the row's partition count; a
consumer assigned to all output partitions before the query starts (read_committed for exactly-once); the query
`readStream.format(source)...load().selectExpr("value")` → `writeStream.format(sink)`, trigger
`processingTime="0 seconds"` (or `realTime`), a fresh checkpoint, `startingOffsets=latest`; once its first
trigger completed, a producer (linger.ms 0) sends `--rate` records a second for `--seconds`, round-robin over
the partitions, each value its send time; the consumer notes `arrival - send` for each record; after the last
send the run waits up to 15 s for the rest. The `floor` row has no Kafka: a Python clock source into a Python
sink (bench/latency_floor.py), the latency the micro-batch engine adds by itself. `realtime-ours` is a check,
not a latency row: what Spark's real-time mode says to kafkasource's source and sink, with its allow-list
check on, off, and off with real-time mode's default of async progress tracking off too.

Prints four tables (latency; per trigger, from the queries' progress; each row's slowest triggers; the
real-time check) and writes them to `--results` with the date and the machine.

    python3 -m bench.latency [--seconds 25] [--rate 10] [--partitions 1,100] [--only name,name] [--rounds 1]
                             [--results bench/LATENCY.md]
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from bench.latency_floor import FloorSink, FloorSource
from bench.reference import reference_jars
from bench.run import spark_session
from bench.trickle import percentile
from dev import broker as local_broker

FIRST_TRIGGER_S = 90  # the first trigger of a query; a real-time one ends its first 5 s batch before reporting
DRAIN_S = 15  # after the last send, for the records still on their way
CHECK_FIRST_TRIGGER_S = 20  # each real-time check attempt: bounded, since a refused query may also just hang
CHECK_SECONDS = 10
WARM_UP_SECONDS = 5
WARM_UP_ROWS = ("ours", "ours-exactly-once")
# Spark ends a Python worker idle for a minute (PythonWorkerFactory's IDLE_WORKER_TIMEOUT_NS, not a setting), and
# a new one costs its first batch seconds (bench/run.py): a row using Python after longer than this without
# Python work (after the built-in rows) gets an untimed warm-up first
PYTHON_IDLE_S = 45
REALTIME_TRIGGER = "5 seconds"
# Spark's switch for the real-time mode's allow-list of operators and sinks (SQLConf
# STREAMING_REAL_TIME_MODE_ALLOWLIST_CHECK, default true); the error OPERATOR_OR_SINK_NOT_IN_ALLOWLIST names it
ALLOWLIST_CONF = "spark.sql.streaming.realTimeMode.allowlistCheck"
# Past the allow-list, a Python sink meets the next refusal: real-time mode turns on asynchronous progress
# tracking for stateless queries (SQLConf STREAMING_ASYNC_PROGRESS_TRACKING_REAL_TIME_MODE_ENABLED_BY_DEFAULT),
# which only a few sinks support; so a third setting turns that default off as well
ASYNC_PROGRESS_CONF = "spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled"
CHECK_SETTINGS = {"on": {ALLOWLIST_CONF: "true"},
                  "off": {ALLOWLIST_CONF: "false"},
                  "off, async progress tracking off": {ALLOWLIST_CONF: "false", ASYNC_PROGRESS_CONF: "false"}}
ROUND_BATCH_IDS = 10**9  # a pooled round's batch ids are shifted by this much times its number
DURATION_ORDER = ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets",
                  "triggerExecution")


@dataclass(frozen=True)
class Route:
    """A Kafka-to-Kafka query: which format reads, which writes, and how."""
    source: str
    sink: str
    realtime: bool = False
    exactly_once: bool = False
    commit_mode: str | None = None  # with a group id of its own (kafkasource source only)
    # a kafka.client.id of its own (kafkasource source only): its executors' consumers are new, not pooled by an
    # earlier row's query, as a query's are when it runs alone in its session
    own_consumers: bool = False

    @property
    def uses_python(self) -> bool:
        return "kafkasource" in (self.source, self.sink)


FLOOR = "floor"
LATENCY_ROWS: dict[str, Route | None] = {
    FLOOR: None,
    "builtin": Route("kafka", "kafka"),
    "builtin-realtime": Route("kafka", "kafka", realtime=True),
    "ours": Route("kafkasource", "kafkasource"),
    "ours-own-consumers": Route("kafkasource", "kafkasource", own_consumers=True),
    "ours-source": Route("kafkasource", "kafka"),
    "ours-sink": Route("kafka", "kafkasource"),
    "ours-exactly-once": Route("kafkasource", "kafkasource", exactly_once=True),
    "ours-group-sync": Route("kafkasource", "kafkasource", commit_mode="sync"),
    "ours-group-async": Route("kafkasource", "kafkasource", commit_mode="async"),
}
CHECK = "realtime-ours"
NAMES = (*LATENCY_ROWS, CHECK)
CHECK_ATTEMPTS = {"kafkasource source → built-in sink": Route("kafkasource", "kafka", realtime=True),
                  "built-in source → kafkasource sink": Route("kafka", "kafkasource", realtime=True)}


@dataclass
class Outcome:
    sent: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    progress: list[dict] = field(default_factory=list)  # the query's progress of triggers that read rows
    error: str | None = None  # the whole text; tables cut it
    note: str = ""


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    """Whether `condition` came true within `timeout` seconds, checked every `step`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
    return True


def error_text(error: BaseException) -> str:
    # pyspark's exceptions from the JVM keep the message in `desc`, without the JVM's stack trace
    return (getattr(error, "desc", None) or str(error)).strip() or type(error).__name__


def first_line(text: str) -> str:
    """The error's first line; when that only opens a Python traceback (a Python data source's error, as Spark
    relays it), with the traceback's last line, the Python exception, in its place."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return text
    opening = "Traceback (most recent call last):"
    if not lines[0].rstrip().endswith(opening):
        return lines[0]
    raised = [line for line in lines[1:] if not line.startswith((" ", "\t", "SQLSTATE"))]
    return lines[0].rstrip()[:-len(opening)] + (raised[-1] if raised else opening)


def condensed(text: str, limit: int = 300) -> str:
    """The error's own lines in one, without stack frames (indented, JVM's and Python's alike), cut to `limit`."""
    text = text.split("=== Streaming Query ===")[0]  # a failed query's text goes on with its plan
    kept = [line.replace("Traceback (most recent call last):", "").strip() for line in text.strip().splitlines()
            if line.strip() and not line.startswith((" ", "\t", "SQLSTATE", "JVM stacktrace"))]
    return " ".join(" ".join(kept).split())[:limit]


def raise_if_failed(query) -> None:
    if not query.isActive:
        failure = query.exception()
        if failure is not None:
            raise failure
        raise RuntimeError("the query stopped by itself")


def await_first_trigger(query, timeout: float) -> None:
    """Until the query's first trigger completed: from then on it reads what is sent (startingOffsets=latest)."""
    if not wait_until(lambda: query.lastProgress is not None or not query.isActive, timeout, 0.2):
        raise RuntimeError(f"no trigger completed within {timeout:.0f} s (status: {query.status['message']})")
    raise_if_failed(query)


def stop_query(query) -> None:
    try:
        query.stop()  # bounded by spark.sql.streaming.stopTimeout, set on the session
    except Exception as e:  # a query that cannot stop must not end the run
        print(f"  (stopping query {query.name or query.id} failed: {first_line(error_text(e))})", flush=True)


def data_progress(query) -> list[dict]:
    return [p for p in query.recentProgress if p["numInputRows"]]


class Trickle(threading.Thread):
    """Sends `count` records, `rate` a second on a fixed schedule (no drift), round-robin over the partitions,
    each value the send time; `sent` counts those the broker acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: float, count: int) -> None:
        super().__init__(name=f"trickle-{topic}", daemon=True)
        self.bootstrap, self.topic, self.partitions, self.rate, self.count = bootstrap, topic, partitions, rate, count
        self.stopping = threading.Event()
        self.sent = 0
        self.failures: list[str] = []

    def _delivered(self, error, _message) -> None:
        if error is None:
            self.sent += 1
        else:
            self.failures.append(str(error))

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 0})
        began = time.monotonic()
        for i in range(self.count):
            # the trickle's own pacing; the event makes it stop at once when the row ends early
            if self.stopping.wait(max(0.0, began + i / self.rate - time.monotonic())):
                break
            producer.produce(self.topic, value=repr(time.time()).encode(), partition=i % self.partitions,
                             on_delivery=self._delivered)
            producer.poll(0)
        if producer.flush(10):
            self.failures.append("records still unacknowledged 10 s after the last send")


class Arrivals(threading.Thread):
    """Polls the output topic from its start (a fresh topic: its end when the query starts), noting
    `arrival - send` in ms for each record. Assigned before the query starts, so nothing can pass it by."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, read_committed: bool) -> None:
        from confluent_kafka import Consumer, TopicPartition

        super().__init__(name=f"arrivals-{topic}", daemon=True)
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"latency-{uuid.uuid4().hex}", "enable.auto.commit": False,
            # librdkafka's default is read_committed: name it for every row, since it is the row's choice
            "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.stopping = threading.Event()
        self.latencies_ms: list[float] = []  # appended by this thread only; list.append is atomic
        self.failures: list[str] = []

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                message = self.consumer.poll(0.1)
                arrived = time.time()
                if message is None:
                    continue
                if message.error() is not None:
                    self.failures.append(str(message.error()))
                    continue
                self.latencies_ms.append((arrived - float(message.value())) * 1000)
        finally:
            self.consumer.close()


def start_route_query(spark, route: Route, bootstrap: str, source_topic: str, sink_topic: str, checkpoint: str,
                      tag: str):
    reader = (spark.readStream.format(route.source).option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source_topic).option("startingOffsets", "latest"))
    if route.own_consumers:
        reader = reader.option("kafka.client.id", f"latency-{tag}")
    if route.commit_mode:
        reader = reader.option("kafka.group.id", f"latency-{tag}").option("commitMode", route.commit_mode)
    writer = (reader.load().selectExpr("value").writeStream.format(route.sink)
              .option("kafka.bootstrap.servers", bootstrap).option("topic", sink_topic)
              .option("checkpointLocation", checkpoint))
    if route.exactly_once:
        writer = writer.option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", f"latency-{tag}")
    if route.realtime:
        writer = writer.outputMode("update").trigger(realTime=REALTIME_TRIGGER)  # real-time takes update only
    else:
        writer = writer.trigger(processingTime="0 seconds")
    return writer.start()


def run_route(spark, admin, bootstrap: str, route: Route, label: str, partitions: int, rate: float,
              seconds: float, first_trigger_s: float = FIRST_TRIGGER_S, drain_s: float = DRAIN_S) -> Outcome:
    from confluent_kafka.admin import NewTopic

    tag = f"{label}-{partitions}-{uuid.uuid4().hex[:8]}"
    topics = [f"latency-{tag}-in", f"latency-{tag}-out"]
    outcome = Outcome()
    slots = spark.sparkContext.defaultParallelism
    if route.realtime and partitions > slots:
        # Spark (4.3) does not refuse it: most of the long-running tasks, one per partition, wait for a slot
        outcome.note = f"real-time mode runs a task per partition at once: {partitions} partitions, {slots} slots"
    checkpoint = tempfile.mkdtemp(prefix="kafkasource-latency-")
    query = arrivals = trickle = None
    try:
        for future in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
            future.result(60)
        arrivals = Arrivals(bootstrap, topics[1], partitions, read_committed=route.exactly_once)
        arrivals.start()
        query = start_route_query(spark, route, bootstrap, topics[0], topics[1], checkpoint, tag)
        await_first_trigger(query, first_trigger_s)
        trickle = Trickle(bootstrap, topics[0], partitions, rate, round(rate * seconds))
        trickle.start()
        # its schedule and its final flush (10 s), unless the query fails meanwhile
        wait_until(lambda: not trickle.is_alive() or not query.isActive, seconds + 30, 0.2)
        raise_if_failed(query)
        if trickle.is_alive():
            raise RuntimeError("the producer did not finish its schedule within 30 s of its end")
        outcome.sent = trickle.sent
        wait_until(lambda: len(arrivals.latencies_ms) >= trickle.sent or not query.isActive, drain_s)
        raise_if_failed(query)
        failures = trickle.failures + arrivals.failures
        if failures:
            outcome.error = f"{len(failures)} producer/consumer error(s), the first: {failures[0]}"
    except Exception as e:  # the row reports it; the run goes on
        outcome.error = error_text(e)
    finally:
        if trickle is not None:
            trickle.stopping.set()
            trickle.join(15)  # its final flush takes up to 10 s
            outcome.sent = trickle.sent
        if query is not None:
            stop_query(query)
            outcome.progress = data_progress(query)
        if arrivals is not None:
            arrivals.stopping.set()
            arrivals.join(10)
            outcome.latencies_ms = list(arrivals.latencies_ms)
        shutil.rmtree(checkpoint, ignore_errors=True)
        # later rows should not share the broker with this row's partitions
        try:
            for future in admin.delete_topics(topics).values():
                future.result(60)
        except Exception as e:
            print(f"  (deleting {', '.join(topics)} failed: {first_line(error_text(e))})", flush=True)
    return outcome


def floor_latencies_ms(path: Path) -> list[float]:
    if not path.exists():
        return []
    text = path.read_text()
    return [float(line) * 1000 for line in text[:text.rfind("\n") + 1].splitlines()]  # whole lines only


def run_floor(spark, rate: float, seconds: float) -> Outcome:
    work = Path(tempfile.mkdtemp(prefix="kafkasource-latency-floor-"))
    start_file, latencies_file = work / "start", work / "latencies"
    count = round(rate * seconds)
    outcome = Outcome()
    query = began = None
    try:
        query = (spark.readStream.format(FloorSource.name()).option("startFile", str(start_file))
                 .option("rate", repr(rate)).option("count", str(count)).load().selectExpr("value")
                 .writeStream.format(FloorSink.name()).option("latenciesFile", str(latencies_file))
                 .option("checkpointLocation", str(work / "checkpoint")).trigger(processingTime="0 seconds")
                 .start())
        await_first_trigger(query, FIRST_TRIGGER_S)
        # the clock starts now, as the producer of the Kafka rows does; renamed into place, so read whole
        began = time.time()
        (work / "start.tmp").write_text(repr(began))
        os.replace(work / "start.tmp", start_file)
        wait_until(lambda: len(floor_latencies_ms(latencies_file)) >= count or not query.isActive,
                   seconds + DRAIN_S, 0.2)
        raise_if_failed(query)
    except Exception as e:
        outcome.error = error_text(e)
    finally:
        if began is not None:  # the ticks whose time came, all of them unless the row ended early
            outcome.sent = min(count, math.floor((time.time() - began) * rate) + 1)
        if query is not None:
            stop_query(query)
            outcome.progress = data_progress(query)
        outcome.latencies_ms = floor_latencies_ms(latencies_file)
        shutil.rmtree(work, ignore_errors=True)
    return outcome


def latency_cells(outcome: Outcome) -> list[str]:
    ms = outcome.latencies_ms
    figures = ([f"{percentile(ms, f):,.0f}" for f in (0.5, 0.95, 0.99)] + [f"{max(ms):,.0f}"]) if ms else ["–"] * 4
    return [f"{outcome.sent:,}", f"{len(ms):,}", *figures]


def latency_line(name: str, partitions: str, outcome: Outcome) -> str:
    notes = ([first_line(outcome.error)] if outcome.error else []) + ([outcome.note] if outcome.note else [])
    return (f"| {name} | {partitions} | " + " | ".join(latency_cells(outcome)) + " | "
            + "; ".join(notes).replace("|", "\\|") + " |")


def progress_medians(progress: list[dict]) -> tuple[int, float | None, dict[str, float]]:
    """The number of triggers that read rows, the median time between the starts of consecutive batches that
    both read rows (a trigger that finds nothing new runs no batch), and the median of each durationMs entry."""
    starts = {p["batchId"]: datetime.datetime.fromisoformat(p["timestamp"]) for p in progress}
    gaps = [(starts[b] - starts[b - 1]).total_seconds() * 1000 for b in starts if b - 1 in starts]
    keys = {k for p in progress for k in p["durationMs"]}
    medians = {k: statistics.median(p["durationMs"][k] for p in progress if k in p["durationMs"]) for k in keys}
    return len(progress), statistics.median(gaps) if gaps else None, medians


def breakdown_table(measured: list[tuple[str, str, Outcome]]) -> list[str]:
    summaries = [(name, parts, *progress_medians(o.progress)) for name, parts, o in measured]
    seen = {k for *_, medians in summaries for k in medians}
    keys = [k for k in DURATION_ORDER if k in seen] + sorted(seen - set(DURATION_ORDER))
    lines = ["| row | partitions | triggers with rows | median ms between batch starts | "
             + " | ".join(f"{k} ms" for k in keys) + " |", "|" + " --- |" * (4 + len(keys))]
    for name, parts, triggers, gap, medians in summaries:
        cells = [f"{medians[k]:,.0f}" if k in medians else "–" for k in keys]
        lines.append(f"| {name} | {parts} | {triggers} | {'–' if gap is None else f'{gap:,.0f}'} | "
                     + " | ".join(cells) + " |")
    return lines


def pooled(rounds: list[Outcome]) -> Outcome:
    """A row's rounds as one outcome: records, latencies and progress together, each round's p50 and p99 noted."""
    if len(rounds) == 1:
        return rounds[0]
    figures = [f"{percentile(o.latencies_ms, 0.5):,.0f}/{percentile(o.latencies_ms, 0.99):,.0f}"
               if o.latencies_ms else "–" for o in rounds]
    errors = [o.error for o in rounds if o.error]
    # each round's batch ids apart, so that the time between batch starts never spans two rounds' queries
    progress = [{**p, "batchId": p["batchId"] + n * ROUND_BATCH_IDS} for n, o in enumerate(rounds) for p in o.progress]
    return Outcome(sent=sum(o.sent for o in rounds), latencies_ms=[ms for o in rounds for ms in o.latencies_ms],
                   progress=progress, error=errors[0] if errors else None,
                   note="p50/p99 ms by round: " + ", ".join(figures))


def slowest_table(measured: list[tuple[str, str, Outcome]]) -> list[str]:
    """Per row, the 95th percentile and the slowest of its triggers' triggerExecution, and where the slowest
    one's time went: what makes a row's tail."""
    lines = ["| row | partitions | triggers with rows | p95 triggerExecution ms | slowest ms | the slowest, by stage "
             "(ms) |", "|" + " --- |" * 6]
    for name, parts, outcome in measured:
        timed = [p for p in outcome.progress if "triggerExecution" in p["durationMs"]]
        if not timed:
            continue
        slowest = max(timed, key=lambda p: p["durationMs"]["triggerExecution"])
        stages = ", ".join(f"{k} {slowest['durationMs'][k]:,}" for k in DURATION_ORDER[:-1]
                           if slowest["durationMs"].get(k))
        executions = [p["durationMs"]["triggerExecution"] for p in timed]
        lines.append(f"| {name} | {parts} | {len(timed)} | {percentile(executions, 0.95):,.0f} | "
                     f"{max(executions):,} | {stages} |")
    return lines


def check_outcome(outcome: Outcome) -> str:
    if outcome.error:
        return condensed(outcome.error).replace("|", "\\|")
    sent, ms = outcome.sent, outcome.latencies_ms
    if not ms:
        return f"ran, but none of the {sent} records sent arrived"
    return (f"records flow: {len(ms)} of {sent} arrived; p50 {percentile(ms, 0.5):,.0f} ms, p99 "
            f"{percentile(ms, 0.99):,.0f} ms, max {max(ms):,.0f} ms")


def realtime_check(spark, admin, bootstrap: str, partitions: int, rate: float, seconds: float) -> list[str]:
    lines = []
    for setting, confs in CHECK_SETTINGS.items():
        for key, value in confs.items():
            spark.conf.set(key, value)
        try:
            for label, route in CHECK_ATTEMPTS.items():
                outcome = run_route(spark, admin, bootstrap, route, "rtm-check", partitions, rate,
                                    min(seconds, CHECK_SECONDS), CHECK_FIRST_TRIGGER_S, CHECK_SECONDS)
                lines.append(f"| {label} | {partitions} | {setting} | {check_outcome(outcome)} |")
                print(lines[-1], flush=True)
        finally:
            for key in confs:
                spark.conf.unset(key)  # the session's default again, for the rows after the check
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=25, help="how long each row's producer sends")
    parser.add_argument("--rate", type=float, default=10, help="records a second")
    parser.add_argument("--partitions", default="1,100", help="partition counts of the topics, comma-separated")
    parser.add_argument("--only", help="rows to run, comma-separated (default: all): " + ", ".join(NAMES))
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of every row, the rows interleaved round after round; a row's figures pool its "
                             "rounds, its note gives each round's p50 and p99")
    parser.add_argument("--results", default=str(Path(__file__).parent / "LATENCY.md"), help="Markdown to write")
    args = parser.parse_args(argv)
    args.rows = [n for n in NAMES if n in args.only.split(",")] if args.only else list(NAMES)
    unknown = set(args.only.split(",")) - set(NAMES) if args.only else set()
    if unknown:
        parser.error(f"unknown row(s) {', '.join(sorted(unknown))}; known: {', '.join(NAMES)}")
    try:
        args.partition_counts = [int(p) for p in args.partitions.split(",")]
    except ValueError:
        parser.error(f"--partitions takes whole numbers, comma-separated, not {args.partitions!r}")
    if args.seconds <= 0 or args.rate <= 0 or min(args.partition_counts) < 1 or args.rounds < 1:
        parser.error("--seconds and --rate must be above 0, each partition count and --rounds at least 1")
    return args


def session(rate: float, seconds: float):
    spark = spark_session(reference_jars())
    # every progress of a row's query, not the last 100 (Spark's default): a row has up to rate × seconds batches
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(max(1000, 2 * round(rate * seconds))))
    spark.conf.set("spark.sql.streaming.stopTimeout", "30000")  # query.stop() waits forever otherwise
    spark.dataSource.register(FloorSource)
    spark.dataSource.register(FloorSink)
    return spark


def warm_up(spark, admin, bootstrap: str, rate: float) -> None:
    """Untimed `ours` and `ours-exactly-once` rows on as many partitions as Spark has slots, so that each slot has a
    Python worker, and the broker has made its transaction state topic, which it does for the first transactional
    producer it ever meets: a cluster's cost once, not any query's."""
    partitions = spark.sparkContext.defaultParallelism
    for name in WARM_UP_ROWS:
        outcome = run_route(spark, admin, bootstrap, LATENCY_ROWS[name], "warm-up", partitions, rate,
                            WARM_UP_SECONDS)
        print(f"warm-up (untimed, {name}, {partitions} partitions): "
              + latency_line("warm-up", str(partitions), outcome), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from confluent_kafka.admin import AdminClient

    started = datetime.date.today().isoformat()
    load = os.getloadavg()[0]
    measured: list[tuple[str, str, Outcome]] = []
    latency_lines = ["| row | partitions | sent | arrived | p50 ms | p95 ms | p99 ms | max ms | error or note |",
                     "|" + " --- |" * 9]
    check_lines = ["| attempt (real-time trigger) | partitions | allow-list check | outcome |", "|" + " --- |" * 4]
    broker = local_broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a request ends with its client
        spark = session(args.rate, args.seconds)
        try:
            # the session's first query pays the Python workers' start-up: not any timed row's
            warm_up(spark, admin, bootstrap, args.rate)
            python_used = time.monotonic()
            print("\n".join(latency_lines), flush=True)
            rounds: dict[tuple[str, str], list[Outcome]] = {}
            for round_number in range(args.rounds):
                for i, partitions in enumerate(args.partition_counts):
                    for name in args.rows:
                        if name == CHECK:
                            if round_number == 0:
                                check_lines += realtime_check(spark, admin, bootstrap, partitions, args.rate,
                                                              args.seconds)
                            continue
                        route = LATENCY_ROWS[name]
                        if route is None and i:  # the floor has no topics: once, whatever the partition counts
                            continue
                        uses_python = route is None or route.uses_python
                        if uses_python and time.monotonic() - python_used > PYTHON_IDLE_S:
                            warm_up(spark, admin, bootstrap, args.rate)
                        if route is None:
                            outcome, parts = run_floor(spark, args.rate, args.seconds), "–"
                        else:
                            outcome = run_route(spark, admin, bootstrap, route, name, partitions, args.rate,
                                                args.seconds)
                            parts = f"{partitions:,}"
                        if uses_python:
                            python_used = time.monotonic()
                        rounds.setdefault((name, parts), []).append(outcome)
                        print(latency_line(name, parts, outcome), flush=True)
            for (name, parts), outcomes in rounds.items():
                measured.append((name, parts, pooled(outcomes)))
                latency_lines.append(latency_line(name, parts, measured[-1][2]))
        finally:
            spark.stop()
    finally:
        broker.stop()

    command = "python3 -m bench.latency" + "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv))
    sections = [f"`{command}`, {started}, pyspark {version('pyspark')}, {os.cpu_count()} CPUs (load average "
                f"{load:.1f} at the start), Spark local[2], one local broker (Apache Kafka "
                f"{local_broker.KAFKA_VERSION}). {args.rate:g} records a second for {args.seconds:g} s per row, "
                "round-robin over the partitions; trigger processingTime=0 (real-time rows: realTime="
                f"{REALTIME_TRIGGER!r}); {args.rounds} round(s), the rows interleaved; latency = a consumer's "
                "arrival time minus the value's send time, over "
                f"the records that arrived within {DRAIN_S} s of the last send (floor: a Python clock source "
                f"into a Python sink, no Kafka). Untimed {WARM_UP_SECONDS}-s `ours` and `ours-exactly-once` "
                f"queries first, and again before a row using Python after {PYTHON_IDLE_S} s without (Spark ends "
                "Python workers idle for a minute; the broker makes its transaction state topic for its first "
                "transactional producer)."]
    if measured:
        sections += ["## Latency", "\n".join(latency_lines),
                     "## Per trigger",
                     "Medians over the triggers that read rows of the query's progress `durationMs`; the time "
                     "between batch starts from the progress `timestamp` of consecutive batches. Under the "
                     f"real-time trigger a trigger is a long-running batch of {REALTIME_TRIGGER}, which reads and "
                     "writes records as they come.",
                     "\n".join(breakdown_table(measured)),
                     "## Slowest triggers",
                     "What makes a row's tail: the 95th percentile and the slowest of its triggers that read rows, "
                     "and the slowest one's time by stage (its durationMs, stages of 0 ms left out).",
                     "\n".join(slowest_table(measured))]
    if CHECK in args.rows:
        sections += ["## Real-time mode and kafkasource",
                     f"Each attempt under `trigger(realTime={REALTIME_TRIGGER!r})`, `outputMode(\"update\")`, "
                     f"each bounded: up to {CHECK_FIRST_TRIGGER_S} s for its first trigger, then {CHECK_SECONDS} s "
                     f"of records (or --seconds if shorter) and up to {CHECK_SECONDS} s for them to arrive. The "
                     f"allow-list check is `{ALLOWLIST_CONF}`, the default of async progress tracking "
                     f"`{ASYNC_PROGRESS_CONF}`. Outcome: Spark's error (first 300 characters), or the "
                     "records that went through.", "\n".join(check_lines)]
    report = "# Latency at a trickle\n\n" + "\n\n".join(sections) + "\n"
    print("\n" + report)
    Path(args.results).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
