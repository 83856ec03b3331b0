"""Running the jobs as users do, for the tests: dev/submit.py (spark-submit, killing a job, the sink's durable
rows), which the soak test shares, and `run_job`, a job run to its end with its output captured."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from dev import submit
from dev.process import REPO_ROOT
from dev.submit import SUBMIT_ENV, durable_positions, kill_group, submit_command, write_config

__all__ = ["QUICK_START_JAVA_OPTIONS", "REPO_ROOT", "durable_positions", "kill_group", "run_job", "start_job",
           "write_config"]

# the driver JVM of a test's spark-submit: C1 alone compiles enough for a test's few small batches, and the JVM
# starts sooner (about 2 s of a local job's 21 s, measured on the 2-core test machine; more when it is busy); the
# JIT tier changes no behaviour of the job (tests/sink_fault_query.py starts its Spark the same way)
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
