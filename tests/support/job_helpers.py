"""Running the jobs as users do, for the tests: dev/submit.py (spark-submit, killing a job, the sink's durable
rows), which the soak test shares, and `run_job`, a job run to its end with its output captured."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.dataset as ds

from dev import submit
from dev.process import REPO_ROOT
from dev.submit import SUBMIT_ENV, durable_positions, kill_group, submit_command, write_config
from tests.support.kafka_helpers import Record

__all__ = ["QUICK_START_JAVA_OPTIONS", "REPO_ROOT", "durable_positions", "kill_at_random_moments", "kill_group",
           "produce_orders", "read_output", "run_job", "start_job", "write_config"]

# the driver JVM of a test's spark-submit: C1 alone compiles enough for a test's few small batches, and the JVM
# starts sooner (about 2 s of a local job's 21 s, measured on the 2-core test machine; more when it is busy); the
# JIT tier changes no behaviour of the job (tests/support/sink_fault_query.py starts its Spark the same way)
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def run_job(job: str, *args: str, timeout: float = 600, env: dict | None = None,
            **kwargs) -> subprocess.CompletedProcess:
    """A job under spark-submit, to its end."""
    return subprocess.run(submit_command(job, *args, driver_java_options=QUICK_START_JAVA_OPTIONS, **kwargs),
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **SUBMIT_ENV, **(env or {})})


def start_job(job: str, *args: str, log_path: Path, **kwargs) -> subprocess.Popen:
    """A job under spark-submit in a process group of its own, logging to log_path (dev/submit.py's start_job)."""
    return submit.start_job(job, *args, log_path=log_path, driver_java_options=QUICK_START_JAVA_OPTIONS, **kwargs)


def kill_at_random_moments(kills: int, start: Callable[[], subprocess.Popen], log_path: Path,
                           durable: Callable[[], list[tuple[int, int]]], committed: Callable[[], dict[int, int]],
                           seed: int, progress: Callable[[], int] | None = None,
                           progress_per_run: int = 1) -> list[str]:
    """Start a streaming job `kills` times; each time wait for a new durable batch (and, given `progress`, a count of
    what the sink has done, for `progress_per_run` more in this run), let it run a random moment (0-1.5 s), SIGKILL
    it whole, then compare the group's committed offsets with what is `durable` ((partition, offset) of every row
    the sink holds). The places where a commit ran ahead of the sink, named; none is right."""
    from tests.support.kafka_helpers import await_condition

    moments = random.Random(seed)
    ahead: list[str] = []
    count = progress or (lambda: 0)
    for cycle in range(kills):
        app = start()
        try:
            rows_before, done = len(durable()), count() + progress_per_run
            await_condition(f"a new durable batch in cycle {cycle}",
                            lambda app=app, rows=rows_before, done=done:
                            alive(app, log_path) and len(durable()) > rows and (progress is None or count() >= done),
                            timeout=240)
            time.sleep(moments.uniform(0, 1.5))  # a random moment of the stream's life
        finally:
            kill_group(app)
        held = set(durable())
        for partition, offset in committed().items():
            missing = [o for o in range(offset) if (partition, o) not in held]
            if missing:
                ahead.append(f"cycle {cycle}: partition {partition} committed {offset}, the sink lacks {missing[:5]}")
    return ahead


def alive(app: subprocess.Popen, log_path: Path) -> bool:
    """True while the job runs; an assertion with its log's end once it exited on its own."""
    assert app.poll() is None, f"the application exited on its own:\n{log_path.read_text()[-3000:]}"
    return True


def produce_orders(kafka, topic: str, count: int, partitions: int) -> list[Record]:
    """`count` orders {"id", "name"} as JSON values without keys, round-robin over `partitions`: what the jobs' example
    configs read."""
    records = [Record(i % partitions, None, json.dumps({"id": i, "name": f"n{i}"}).encode()) for i in range(count)]
    return kafka.produce(topic, records)


def read_output(path) -> list[dict]:
    """Every row of a job's Parquet output (Hive-partitioned), in (partition, offset) order."""
    table = ds.dataset(path, format="parquet", partitioning="hive").to_table()
    return sorted(table.to_pylist(), key=lambda r: (r["kafka_partition"], r["kafka_offset"]))
