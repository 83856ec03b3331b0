"""Running the jobs as users do: pyspark's own spark-submit as a subprocess, configured by a TOML file; killing
one whole; and reading what its Parquet file sink holds durably. Shared by the tests and the soak test."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.parquet as pq
import pyspark

from dev.process import REPO_ROOT, descendants

SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
SUBMIT_ENV = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


def write_config(path: Path, bootstrap: str, topic: str, group: str | None, out_dir: Path,
                 trigger: str = "availableNow", value: str = "raw", schema: str | None = None,
                 extra_source: str = "") -> Path:
    lines = ["[kafka]", f'"bootstrap.servers" = "{bootstrap}"', '"auto.offset.reset" = "earliest"']
    if group:
        lines.append(f'"group.id" = "{group}"')
    lines += ["[source]", f'subscribe = "{topic}"', extra_source,
              "[decode]", f'value = "{value}"'] + ([f'schema = "{schema}"'] if schema else []) + [
              "[sink]", f'path = "{out_dir / "out"}"', f'checkpoint = "{out_dir / "ck"}"',
              "[job]", f'trigger = "{trigger}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def submit_command(job: str, *args: str, master: str = "local[2]", extra: tuple[str, ...] = (),
                   driver_java_options: str = "") -> list[str]:
    """spark-submit of jobs/<job>.py; `driver_java_options` are added to the driver JVM's own (the tests start it
    faster with them, see tests/support/job_helpers.py; the soak and benchmarks leave the JVM as users run it)."""
    java_options = f"-Dlog4j2.configurationFile={REPO_ROOT / 'conf' / 'log4j2.properties'} {driver_java_options}"
    return [str(SPARK_SUBMIT), "--master", master, "--properties-file", str(REPO_ROOT / "conf" / "spark-defaults.conf"),
            "--conf", "spark.ui.enabled=false", "--conf", "spark.driver.host=127.0.0.1",
            "--conf", f"spark.driver.extraJavaOptions={java_options.strip()}",
            *extra, str(REPO_ROOT / "jobs" / f"{job}.py"), *args]


def start_job(job: str, *args: str, log_path: Path, **kwargs) -> subprocess.Popen:
    """A job under spark-submit in a process group of its own, logging to log_path."""
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(submit_command(job, *args, **kwargs), cwd=REPO_ROOT, env={**os.environ, **SUBMIT_ENV},
                                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the whole application: spark-submit's JVM and every Python process it started. Spark's Python
    daemons move into process groups of their own (to signal their forked workers), so those groups are killed
    too; left alone, they would only end once they noticed the JVM's end."""
    groups = {process.pid}
    for pid in descendants(process.pid):
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            pass
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait(30)


def committed_files(output: Path, attempts: int = 100) -> set[str]:
    """The Parquet files the file sink's log lists as committed, by path.

    Every tenth batch the sink compacts its log into one file, and deletes the files that file replaced once
    they are older than spark.sql.streaming.fileSink.log.cleanupDelay (10 minutes): one listed may be gone when
    it is read. Its entries are then in a compacted file the next listing holds, so the log is listed and read
    again (a round of deletions takes a moment)."""
    for attempt in itertools.count(1):
        try:
            return _files_in_log(output / "_spark_metadata")
        except FileNotFoundError:
            if attempt >= attempts:
                raise
            time.sleep(0.1)


def _files_in_log(log_dir: Path) -> set[str]:
    files: set[str] = set()
    for entry in sorted(log_dir.iterdir()) if log_dir.exists() else []:
        if entry.name.startswith("."):  # a log file still being written under a temporary name
            continue
        for line in entry.read_text().splitlines()[1:]:  # the first line is the log's version
            item = json.loads(line)
            if item.get("action", "add") == "add":
                files.add(urlparse(item["path"]).path)
    return files


def durable_positions(output: Path) -> list[tuple[int, int]]:
    """(kafka_partition, kafka_offset) of every row in the files the file sink's log lists as committed."""
    rows = []
    for path in sorted(committed_files(output)):
        table = pq.read_table(path, columns=["kafka_partition", "kafka_offset"])
        rows.extend(zip(table.column("kafka_partition").to_pylist(), table.column("kafka_offset").to_pylist(),
                        strict=True))
    return rows
