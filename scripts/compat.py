"""The compatibility run of scripts/test.sh: a small selection of the tests, again, on the newest pyspark 4.1, in a
virtualenv of its own with the test helpers' packages and Spark Connect's client. pyspark 4.0 runs the same
selection but Spark Connect in the plain-install run (scripts/plain_install.py), in a virtualenv without the test
helpers' packages (the Connect client needs pandas); 4.0 and 4.1 share what differs from 4.2 on (no admission
control for Python readers). The virtualenv is kept in the git-ignored .cache/compat/ (a stamp file says what it
holds), so only the first run downloads; the tests import this checkout (PYTHONPATH), the native extension
included. The summary names the pyspark and Python and the time.

    python3 -m scripts.compat
    KAFKASOURCE_COMPAT_VENVS=/elsewhere python3 -m scripts.compat   # the virtualenv kept elsewhere
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from scripts.virtualenvs import REPO, find_python, virtualenv

VENVS = Path(os.environ.get("KAFKASOURCE_COMPAT_VENVS", REPO / ".cache" / "compat"))

# (pyspark, Python): the newest patch of the minor release; None: the Python running this script
TARGETS = {"4.1": ("4.1.4", None)}

# What the selection needs besides pyspark; versions from constraints.txt where it pins them
PACKAGES = ["confluent-kafka[schemaregistry,avro,json,protobuf]", "pyarrow>=15", "xxhash>=3.0", "pandas>=2,<3",
            "pytest>=8", "pytest-rerunfailures>=14"]

# Spark Connect: a batch read, and a stream with bounded batches and group commits
CONNECT = [
    "tests/system/test_connect.py::test_format_resolves_without_register_and_batch_read_returns_exact_rows",
    "tests/system/test_connect.py::test_a_processing_time_stream_reads_bounded_batches_and_commits_its_group_on_every_version",
]
# Batch read on both read paths (the native one included), a rate-limited stream with group commits, AvailableNow
# twice, register (tests/*/test_compat.py), a registry format, batch writes on both write paths, exactly-once batch and
# stream writes, the ingest job into Delta Lake and Iceberg tables (both have jars for 4.0 and 4.1 only), the
# example Declarative Pipeline, and Spark Connect
SELECTION = [
    "tests/unit/test_compat.py",
    "tests/integration/test_compat.py",
    "tests/system/test_compat.py",
    "tests/integration/test_stream_read.py::test_batch_read_of_an_explicit_offset_range",
    "tests/integration/test_registry_avro.py::test_key_and_value_with_schemas_of_their_own_in_a_stream",
    "tests/integration/test_sink.py::test_a_batch_write_lands_every_record_exactly_where_the_columns_say",
    "tests/integration/test_sink_exactly_once.py::test_an_exactly_once_batch_write_writes_every_sample_row_and_marks_its_task",
    "tests/system/test_lakehouse_jobs.py",
    "tests/system/test_pipeline.py",
    *CONNECT,
]


def run(minor: str, extra: list[str]) -> tuple[str, str, float, int]:
    pyspark, python_version = TARGETS[minor]
    started = time.monotonic()
    python = virtualenv(VENVS / f"pyspark-{pyspark}", find_python(python_version),
                        [f"pyspark[connect,pipelines]=={pyspark}", *PACKAGES])
    prepared = time.monotonic() - started
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH")] if p)}
    python_seen = subprocess.run([str(python), "-c", "import platform, pyspark; "
                                  "print(pyspark.__version__, platform.python_version())"],
                                 capture_output=True, text=True, check=True, env=env).stdout.split()
    print(f"\n== compatibility run: pyspark {python_seen[0]}, Python {python_seen[1]} "
          f"(virtualenv ready in {prepared:.0f} s) ==", flush=True)
    code = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *SELECTION, *extra],
                          cwd=REPO, env=env).returncode
    return python_seen[0], python_seen[1], time.monotonic() - started, code


def main(argv: list[str]) -> int:
    minors = [a for a in argv if a in TARGETS] or list(TARGETS)
    extra = [a for a in argv if a not in TARGETS]
    results = [run(minor, extra) for minor in minors]
    print("\ncompatibility runs:")
    for pyspark, python, seconds, code in results:
        print(f"  pyspark {pyspark} (Python {python}): {'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s")
    return max(code for *_, code in results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
