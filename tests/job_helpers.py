"""Running the jobs as users do, for the tests: dev/submit.py (spark-submit, killing a job, the sink's durable
rows), which the soak test shares, and `run_job`, a job run to its end with its output captured."""

from __future__ import annotations

import os
import subprocess

from dev.process import REPO_ROOT
from dev.submit import SUBMIT_ENV, durable_positions, kill_group, start_job, submit_command, write_config

__all__ = ["REPO_ROOT", "durable_positions", "kill_group", "run_job", "start_job", "write_config"]


def run_job(job: str, *args: str, timeout: float = 600, env: dict | None = None,
            **kwargs) -> subprocess.CompletedProcess:
    """A job under spark-submit, to its end."""
    return subprocess.run(submit_command(job, *args, **kwargs), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **SUBMIT_ENV, **(env or {})})
