"""When Spark ends the driver-side process of a stream reader with SIGTERM, the reader's stop() runs to its end
(flushing pending async commits), in that runner process only; the duplicate SIGTERM Spark sends at once does not
cut it short, and a later one ends the process at once."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from confluent_kafka import KafkaException
from pyspark.serializers import SpecialLengths, UTF8Deserializer, read_int, write_int, write_with_length
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.streaming.python_streaming_source_runner import COMMIT_FUNC_ID
from pyspark.worker_util import pickleSer

from kafkasource.cluster.client import COORDINATOR_RETRIABLE
from kafkasource.records.schema import arrow_schema
from kafkasource.runtime.shutdown import (
    DUPLICATE_WINDOW_S,
    RUNNER_MODULE,
    SIGTERM_EXIT_CODE,
    exit_on_sigterm,
    in_stream_runner,
    stopping,
)
from kafkasource.source import KafkaDataSource
from tests.support.job_helpers import REPO_ROOT
from tests.support.kafka_helpers import await_condition


class ProbeSource(DataSource):
    """A stream of nothing whose reader writes what Spark calls on it to the file in option `log`."""

    @classmethod
    def name(cls) -> str:
        return "kafkasource_shutdown_probe"

    def schema(self) -> str:
        return "value int"

    def streamReader(self, schema):
        return ProbeReader(self.options["log"])


class ProbeReader(DataSourceStreamReader):
    def __init__(self, log_path: str):
        self.log_path = log_path
        self.stopped = False
        if in_stream_runner():  # the same guard the Kafka reader uses
            exit_on_sigterm()

    def _note(self, event: dict) -> None:
        with open(self.log_path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), **event}) + "\n")

    def initialOffset(self) -> dict:
        self._note({"call": "initialOffset", "runner": in_stream_runner()})
        return {"n": 0}

    def latestOffset(self) -> dict:
        return {"n": 0}

    def partitions(self, start, end):
        return [InputPartition(0)]

    def read(self, partition):
        return iter(())

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            stopping()
            time.sleep(2)  # as long as a flush of commits may take: SIGTERM must not cut it short
            self._note({"call": "stop"})


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_query_stop_reaches_stop_through_sigterm_in_the_runner_process_only(spark, tmp_path):
    spark.dataSource.register(ProbeSource)
    log_path = tmp_path / "calls.jsonl"
    query = (spark.readStream.format(ProbeSource.name()).option("log", str(log_path)).load()
             .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        await_condition("initialOffset in the runner", lambda: events(log_path), query=query, timeout=120)
    finally:
        query.stop()
    await_condition("stop() after query.stop()", lambda: any(e["call"] == "stop" for e in events(log_path)),
                    timeout=30)

    calls = events(log_path)
    assert calls[0]["call"] == "initialOffset" and calls[0]["runner"] is True
    assert [e["call"] for e in calls].count("stop") == 1
    assert {e["pid"] for e in calls} == {calls[0]["pid"]}  # one process: the driver-side runner
    assert not in_stream_runner()  # the test process (as Spark's executor workers) is not one


# A stand-in for Spark's runner loop: the reader, a request in progress, `finally: reader.stop()`.
RUNNER_STAND_IN = textwrap.dedent("""
    import json, sys, time
    from kafkasource.options import parse_options
    from kafkasource.runtime.shutdown import exit_on_sigterm
    from kafkasource.stream import KafkaStreamReader

    servers, topic, group, first, second = sys.argv[1:6]
    reader = KafkaStreamReader(parse_options({"kafka.bootstrap.servers": servers, "subscribe": topic,
                                              "kafka.group.id": group, "commitMode": "async"}, streaming=True))
    assert exit_on_sigterm()
    try:
        reader.commit(json.loads(first))  # an async commit: sent, its answer not yet served
        reader.commit(json.loads(second))  # queued behind the first: only a later poll() sends it
        print("committed", flush=True)
        time.sleep(120)  # waiting for Spark's next request when SIGTERM comes
    finally:
        print("stopping", flush=True)
        reader.stop()
        if "--hang-in-stop" in sys.argv:
            time.sleep(120)
""")
FIRST_COMMIT, SECOND_COMMIT = {"0": 7, "1": 3}, {"0": 9, "1": 5}  # per partition, as Spark's offset JSON holds them


def as_committed(offsets: dict[str, int]) -> dict[int, int]:
    return {int(partition): offset for partition, offset in offsets.items()}


def start_stand_in(kafka, topic, group, *extra):
    commits = [json.dumps({topic: offsets}) for offsets in (FIRST_COMMIT, SECOND_COMMIT)]
    return subprocess.Popen([sys.executable, "-c", RUNNER_STAND_IN, kafka.bootstrap_servers, topic, group, *commits,
                             *extra], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)


def committed_when_the_coordinator_answers(kafka, group: str, topic: str) -> dict[int, int] | None:
    """The group's offsets; None while its coordinator is still loading (a broker that has just started)."""
    try:
        return kafka.committed(group, topic, 3)
    except KafkaException as exc:
        if exc.args[0].code() in COORDINATOR_RETRIABLE:
            return None
        raise


def only_the_first_commit_landed(kafka, group: str, topic: str) -> None:
    """The group holds the first of two back-to-back async commits, and still does a second later: the second
    waits in the committer, which sends it only from a poll(), and nothing polls between Spark's requests."""
    first = as_committed(FIRST_COMMIT)
    await_condition("the first async commit on the broker",
                    lambda: committed_when_the_coordinator_answers(kafka, group, topic) == first, timeout=30)
    time.sleep(1)  # ample for a sent commit to land on a local broker
    assert kafka.committed(group, topic, 3) == first


def test_sigterm_flushes_the_queued_async_commit_then_exits(kafka, topic):
    group = kafka.unique_name("sigterm-flush")
    child = start_stand_in(kafka, topic, group)
    try:
        assert child.stdout.readline().strip() == "committed"
        only_the_first_commit_landed(kafka, group, topic)
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 128 + signal.SIGTERM
    finally:
        child.kill()
    assert kafka.committed(group, topic, 3) == as_committed(SECOND_COMMIT)


def answer(jvm) -> int:
    """The runner's int reply; its traceback when it reports an exception instead."""
    reply = read_int(jvm)
    if reply == SpecialLengths.PYTHON_EXCEPTION_THROWN:
        raise AssertionError(f"the runner failed: {UTF8Deserializer().loads(jvm)}")
    return reply


def serve_runner_setup(jvm, spark_files: str, source: KafkaDataSource) -> None:
    """What Spark's JVM sends a new runner before the first request (python_streaming_source_runner.main)."""
    write_with_length("{}.{}".format(*sys.version_info[:2]).encode(), jvm)  # the driver's Python version
    write_with_length(spark_files.encode(), jvm)  # the SparkFiles directory
    write_int(0, jvm)  # no Python includes
    write_with_length(pickleSer.dumps(source), jvm)
    write_with_length(from_arrow_schema(arrow_schema(False), prefer_timestamp_ntz=False).json().encode(), jvm)
    write_int(10_000, jvm)  # spark.sql.execution.arrow.maxRecordsPerBatch's default
    jvm.flush()


def request_commit(jvm, end: dict) -> None:
    write_int(COMMIT_FUNC_ID, jvm)
    write_with_length(json.dumps(end).encode(), jvm)
    jvm.flush()
    assert answer(jvm) == 0


def test_sparks_runner_flushes_the_queued_async_commit_on_sigterm_then_exits_255(kafka, topic):
    """pyspark's own runner module, started as Spark starts it, with this test serving the JVM's side of the socket:
    two commit requests, then SIGTERM while the runner waits for the next request."""
    group = kafka.unique_name("runner-sigterm")
    source = KafkaDataSource({"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
                              "kafka.group.id": group, "commitMode": "async"})
    env = {name: value for name, value in os.environ.items() if name != "PYTHON_WORKER_FACTORY_SECRET"}
    # mkdtemp's short path: a Unix socket's path must fit in 108 bytes
    with tempfile.TemporaryDirectory() as directory, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        path = os.path.join(directory, "jvm.sock")
        server.bind(path)
        server.listen(1)
        server.settimeout(60)
        runner = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE], cwd=REPO_ROOT,
                                  env={**env, "PYTHON_WORKER_FACTORY_SOCK_PATH": path})
        try:
            connection, _ = server.accept()
            connection.settimeout(60)
            with connection, connection.makefile("rwb") as jvm:
                assert read_int(jvm) == runner.pid  # the runner's first word: its pid
                serve_runner_setup(jvm, directory, source)
                assert answer(jvm) == 0  # the stream reader is made
                request_commit(jvm, {topic: FIRST_COMMIT})
                request_commit(jvm, {topic: SECOND_COMMIT})
                only_the_first_commit_landed(kafka, group, topic)

                runner.send_signal(signal.SIGTERM)
                assert runner.wait(60) == 255  # main()'s sys.exit(-1) after `finally: reader.stop()`
                assert read_int(jvm) == SpecialLengths.PYTHON_EXCEPTION_THROWN  # what Spark's JVM reads then
                assert UTF8Deserializer().loads(jvm).rstrip().endswith(f"SystemExit: {SIGTERM_EXIT_CODE}")
        finally:
            runner.kill()
    assert kafka.committed(group, topic, 3) == as_committed(SECOND_COMMIT)


def test_a_second_sigterm_is_not_swallowed(kafka, topic):
    child = start_stand_in(kafka, topic, kafka.unique_name("sigterm-twice"), "--hang-in-stop")
    try:
        assert child.stdout.readline().strip() == "committed"
        child.send_signal(signal.SIGTERM)
        child.send_signal(signal.SIGTERM)  # as Spark does: the same stop twice, at once
        assert child.stdout.readline().strip() == "stopping"
        time.sleep(DUPLICATE_WINDOW_S + 0.5)
        assert child.poll() is None  # the duplicate did not cut the stop short
        child.send_signal(signal.SIGTERM)  # a later one is an operator's: the default action, at once
        assert child.wait(30) == -signal.SIGTERM
    finally:
        child.kill()
