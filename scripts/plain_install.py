"""The plain-install run of scripts/test.sh: the package as a user installs it, with nothing the tests bring.

A user runs `pip install pyspark kafkasource` (and `kafkasource[registry]` for the registry formats), which brings
no pandas and no numpy: the test extra does, so the main suite cannot see a run-time import that nothing declares.
This run builds the package's wheel once (the native extension in it: one abi3 build serves every Python from
3.11 on), installs it into a virtualenv per target holding only pyspark and the test runner (pytest,
pytest-rerunfailures), checks that no pandas or numpy came with them, and runs a selection of the tests there from
a folder of its own, so that Spark, its Python workers and spark-submit import the installed package, not this
checkout. The registry scenario runs last, after the `registry` extra is added; what it added is removed again, so
the next run starts plain. The targets: the oldest pyspark supported under Python 3.12 (as Databricks 17.3 LTS
ships it), and the newest under Python 3.13. The virtualenvs are kept in the git-ignored .cache/plain/ while their
stamp matches.

    python3 -m scripts.plain_install           # both targets
    python3 -m scripts.plain_install 4.3       # one
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts.virtualenvs import REPO, constraints, find_python, virtualenv

HOME = Path(os.environ.get("KAFKASOURCE_PLAIN_VENVS", REPO / ".cache" / "plain"))

# (pyspark, Python): the oldest and the newest pyspark the package supports
TARGETS = {"4.0": ("4.0.5", "3.12"), "4.3": ("4.3.0", "3.13")}
TEST_RUNNER = ["pytest>=8", "pytest-rerunfailures>=14"]  # pytest.ini reruns a test whose Python worker failed to start
NOT_INSTALLED = {"numpy", "pandas", "hypothesis"}  # what the test extra brings and a user's install does not

# which package Spark and the tests import, and batch reads on both read paths, a stream with group commits, batch
# and stream writes on both write paths, exactly-once batch and stream writes; the quick start's job (on pyspark 4.0
# and 4.1 in tests/system/test_compat.py, with the other behaviours that differ there in tests/*/test_compat.py)
SELECTION = [
    "tests/system/plain_install_checks.py",
    "tests/integration/test_stream_read.py::test_batch_read_of_an_explicit_offset_range",
    "tests/integration/test_compat.py::test_a_rate_limited_stream_commits_only_what_completed_batches_read",
    "tests/integration/test_sink.py::test_a_batch_write_lands_every_record_exactly_where_the_columns_say",
    "tests/integration/test_sink.py::test_a_stream_copies_a_topic_record_for_record",
    "tests/integration/test_sink_exactly_once.py::test_an_exactly_once_batch_write_writes_every_sample_row_and_marks_its_task",
    "tests/integration/test_compat.py::test_a_replayed_stream_batch_is_written_once_under_exactly_once",
]
BY_MINOR = {  # where Spark lacks admission control for Python readers (4.0, 4.1), and where it has it
    "4.0": ["tests/unit/test_compat.py", "tests/integration/test_compat.py", "tests/system/test_compat.py"],
    "4.3": ["tests/system/test_jobs.py::test_ingest_writes_every_record_once_decodes_and_commits"],
}
# the registry scenario, once the registry extra is installed: Avro keys and values read in a stream; a struct
# value written in each registry format on both write paths and read back
REGISTRY_SELECTION = [
    "tests/integration/test_registry_avro.py::test_key_and_value_with_schemas_of_their_own_in_a_stream",
    "tests/integration/test_registry_sink.py::"
    "test_a_struct_value_round_trips_through_kafkasources_reader_and_confluent_kafkas_deserializer",
]


def build_wheel() -> Path:
    """The package's wheel, built from this checkout as a release would be (the native extension in it)."""
    wheels = HOME / "wheel"
    shutil.rmtree(wheels, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                    "-w", str(wheels), str(REPO)], check=True)
    wheel, = wheels.glob("kafkasource-*.whl")
    return wheel


def pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "-q", "--disable-pip-version-check", *args], check=True)


def installed(python: Path) -> dict[str, str]:
    listed = subprocess.run([str(python), "-m", "pip", "list", "--disable-pip-version-check", "--format=json"],
                            capture_output=True, text=True, check=True).stdout
    return {entry["name"].lower().replace("_", "-"): entry["version"] for entry in json.loads(listed)}


def user_folder() -> Path:
    """A folder holding the tests and their helpers (links to this checkout's) but not the package, to run pytest
    in: pytest puts it on sys.path, where the checkout would put its own kafkasource before the installed one."""
    folder = HOME / "user"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in ("tests", "dev"):
        (folder / name).symlink_to(REPO / name, target_is_directory=True)
    shutil.copy(REPO / "pytest.ini", folder / "pytest.ini")
    return folder


def pytest(python: Path, folder: Path, selection: list[str], extra: list[str]) -> int:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([str(python), "-m", "pytest", "-q", *selection, *extra], cwd=folder, env=env).returncode


def run(minor: str, wheel: Path, folder: Path, extra: list[str]) -> tuple[str, str, float, int]:
    pyspark, python_version = TARGETS[minor]
    started = time.monotonic()
    python = virtualenv(HOME / f"pyspark-{pyspark}", find_python(python_version), [f"pyspark=={pyspark}", *TEST_RUNNER])
    pins = str(constraints(HOME / "constraints.txt"))
    if "kafkasource" in installed(python):
        pip(python, "uninstall", "-y", "kafkasource")
    pip(python, "install", "-c", pins, str(wheel))
    packages = installed(python)
    python_seen = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    print(f"\n== plain-install run: pyspark {packages['pyspark']}, Python {python_seen}, kafkasource "
          f"{packages['kafkasource']} from its wheel: {len(packages)} distributions installed "
          f"({', '.join(sorted(packages))}) ==", flush=True)
    present = sorted(NOT_INSTALLED & set(packages))
    if present:
        print(f"plain-install run: {', '.join(present)} installed, which a plain install does not bring", flush=True)
        return packages["pyspark"], python_seen, time.monotonic() - started, 1

    code = pytest(python, folder, SELECTION + BY_MINOR[minor], extra)
    pip(python, "install", "-c", pins, f"{wheel}[registry]")
    added = sorted(set(installed(python)) - set(packages))
    print(f"\n== plain-install run, registry scenario: the registry extra added {', '.join(added)} ==", flush=True)
    code = max(code, pytest(python, folder, REGISTRY_SELECTION, extra))
    pip(python, "uninstall", "-y", *added)
    leftover = sorted(set(installed(python)) - set(packages))
    if leftover:
        print(f"plain-install run: {', '.join(leftover)} still installed after the registry scenario", flush=True)
        code = max(code, 1)
    return packages["pyspark"], python_seen, time.monotonic() - started, code


def main(argv: list[str]) -> int:
    minors = [a for a in argv if a in TARGETS] or list(TARGETS)
    extra = [a for a in argv if a not in TARGETS]
    wheel = build_wheel()
    folder = user_folder()
    results = [run(minor, wheel, folder, extra) for minor in minors]
    print("\nplain-install runs:")
    for pyspark, python, seconds, code in results:
        print(f"  pyspark {pyspark} (Python {python}), no pandas or numpy: "
              f"{'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s")
    return max(code for *_, code in results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
