"""When Spark ends the driver-side process of a stream reader with SIGTERM, the reader's stop() runs to its end
(flushing pending async commits), in that runner process only; the duplicate SIGTERM Spark sends at once does not
cut it short, and a later one ends the process at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kafkasource.shutdown import DUPLICATE_WINDOW_S, exit_on_sigterm, in_stream_runner, stopping
from tests.job_helpers import REPO_ROOT
from tests.kafka_helpers import await_condition


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
    import sys, time
    from kafkasource.options import parse_options
    from kafkasource.shutdown import exit_on_sigterm
    from kafkasource.stream import KafkaStreamReader

    servers, topic, group = sys.argv[1:4]
    reader = KafkaStreamReader(parse_options({"kafka.bootstrap.servers": servers, "subscribe": topic,
                                              "kafka.group.id": group, "commitMode": "async"}, streaming=True))
    assert exit_on_sigterm()
    try:
        reader.commit({topic: {"0": 7, "1": 3}})  # an async commit: sent, its answer not yet awaited
        print("committed", flush=True)
        time.sleep(120)  # waiting for Spark's next request when SIGTERM comes
    finally:
        print("stopping", flush=True)
        reader.stop()
        if "--hang-in-stop" in sys.argv:
            time.sleep(120)
""")


def start_stand_in(kafka, topic, group, *extra):
    return subprocess.Popen([sys.executable, "-c", RUNNER_STAND_IN, kafka.bootstrap_servers, topic, group, *extra],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)


def test_sigterm_flushes_pending_async_commits_then_exits(kafka, topic):
    group = kafka.unique_name("sigterm-flush")
    child = start_stand_in(kafka, topic, group)
    try:
        assert child.stdout.readline().strip() == "committed"
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 128 + signal.SIGTERM
    finally:
        child.kill()
    assert kafka.committed(group, topic, 3) == {0: 7, 1: 3}


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
