"""The ingest job, and a batch write with the sink, on a real Spark standalone cluster on loopback: a master and
two workers started from pyspark's own spark-class, executors in their own JVMs with their own Python workers. The
package reaches them as users ship it: with --py-files as built by `python3 -m scripts.package`; the driver runs
on a worker in cluster deploy mode, its config shipped with --files.

The workers and the jobs' Python processes run a Python that has this one's packages but not kafkasource
(dev/bare_python.py), and the workers do not inherit this process's PYTHONPATH: executors import kafkasource
only from what the job ships them, and each that reads says where it loaded kafkasource from."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pyspark
import pytest

from dev import bare_python, packed_env
from dev.process import free_port
from dev.submit import SPARK_SUBMIT, SUBMIT_ENV, submit_command
from scripts.package import build_zip
from tests.support.job_helpers import REPO_ROOT, durable_positions, write_config
from tests.support.kafka_helpers import await_condition

pytestmark = pytest.mark.spark  # a Spark standalone cluster and spark-submit

SPARK_HOME = Path(pyspark.__file__).parent
# kafkasource's lines at INFO in the executors' Python workers: reading/consumers.py's line saying where kafkasource was
# loaded from is one (the jobs keep kafkasource.reading.consumers at WARNING otherwise)
EXECUTOR_LOG_LEVEL = ("--conf", "spark.executorEnv.KAFKASOURCE_LOG_LEVEL=INFO")


def spark_class(main_class: str, *args: str, log: Path, env: dict) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), main_class, *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0
    except ValueError:  # seen once: in the moment before the master is elected leader, /json/ answers with HTML
        return 0


def loaded_from(executors: list[Path]) -> dict[Path, list[str]]:
    """Where the Python workers of each executor that read loaded kafkasource from, one entry per worker process
    and read path: reading/consumers.py's line "reading with confluent-kafka ...; kafkasource loaded from DIR", and
    reading/native.py's "reading with the native extension DIR/_native.abi3.so (librdkafka ...)"."""
    python_path = re.compile(r" INFO kafkasource\.reading\.consumers \[pid \d+\]: "
                             r"reading with confluent-kafka .*; kafkasource loaded from (.+)$")
    native_path = re.compile(r" INFO kafkasource\.reading\.native \[pid \d+\]: "
                             r"reading with the native extension (.+)/[^/]+ \(librdkafka ")
    return {executor: [found.group(1) for line in (executor / "stderr").read_text().splitlines()
                       for found in (python_path.search(line) or native_path.search(line),) if found]
            for executor in executors}


@pytest.fixture(scope="module")
def bare() -> Path:
    """The Python the jobs' Python processes run: this one's packages, no kafkasource."""
    return bare_python.interpreter()


def submit_env(bare: Path) -> dict[str, str]:
    """spark-submit's environment: executors (and, in client mode, the source's driver-side process) run `bare`;
    no PYTHONPATH of this process."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **SUBMIT_ENV, "PYSPARK_PYTHON": str(bare)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, bare):
    logs = tmp_path_factory.mktemp("standalone")
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "SPARK_HOME": str(SPARK_HOME),
           "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": str(bare), "SPARK_NO_DAEMONIZE": "1"}
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    processes = [spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                             "--webui-port", str(ui_port), log=logs / "master.log", env=env)]
    try:
        for n in range(2):
            processes.append(spark_class(
                "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1",
                "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(logs / f"worker-{n}"),
                log=logs / f"worker-{n}.log", env=env))
        await_condition("two workers registered with the master", lambda: alive_workers(ui_port) == 2, timeout=180)
        yield master_url, logs
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_the_sink_writes_from_executors_that_have_kafkasource_only_from_py_files(cluster, bare, kafka, tmp_path,
                                                                                 capsys):
    """A batch write submitted in client mode to a master with two workers, the package shipped with --py-files:
    each worker runs an executor, the driver and the executors run the bare Python, so each task's writer
    unpickles and writes only through the shipped zip, and every row lands in order where its partition column
    says. (The ingest job's reads from a shipped zip are the cluster deploy mode test's.)"""
    from tests.support import sink_cluster_job as job
    from tests.support.sink_helpers import read_topic

    master_url, logs = cluster
    package = build_zip(tmp_path / "kafkasource.zip")
    topic = kafka.create_topic(kafka.unique_name("cluster-sink"), partitions=job.PARTITIONS)
    apps_before = set(logs.glob("worker-*/app-*/*"))
    command = [str(SPARK_SUBMIT), "--master", master_url,
               "--properties-file", str(REPO_ROOT / "conf" / "spark-defaults.conf"), "--conf", "spark.ui.enabled=false",
               "--conf", "spark.driver.host=127.0.0.1", "--py-files", str(package),
               "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
               "--conf", "spark.executorEnv.KAFKASOURCE_LOG_LEVEL=INFO,kafkasource.writing.task=DEBUG",
               str(REPO_ROOT / "tests" / "support" / "sink_cluster_job.py"), kafka.bootstrap_servers, topic]

    started = time.monotonic()
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env={**submit_env(bare), "PYSPARK_DRIVER_PYTHON": str(bare)})
    took = time.monotonic() - started

    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-4000:])
    assert result.stdout.splitlines()[-1] == (f"sink: 40 rows written to {topic} with kafkasource from "
                                              f"{tmp_path / 'kafkasource.zip' / 'kafkasource' / '__init__.py'}")
    assert read_topic(kafka, topic, job.PARTITIONS) == job.expected_records()
    # each worker ran an executor of the job (its folder under the worker's work dir)
    executors = sorted(set(logs.glob("worker-*/app-*/*")) - apps_before)
    assert sorted({executor.parts[-3] for executor in executors}) == ["worker-0", "worker-1"], executors
    # the tasks' own lines, from the executors' Python workers: one per Spark partition, each with its 10 rows
    written = sorted(line.split("]: ", 1)[1] for executor in executors
                     for line in (executor / "stderr").read_text().splitlines()
                     if " DEBUG kafkasource.writing.task [pid " in line)
    assert written == [f"partition {p} (attempt 0): 10 records written" for p in range(job.PARTITIONS)], written
    with capsys.disabled():
        print(f"\n[cluster] sink batch write from the executors, package by --py-files: 40 records in {took:.0f} s")


def launcher_jar(path: Path) -> Path:
    """An empty jar: spark-submit's primary resource when the driver is Spark's own PythonRunner (see below)."""
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    return path


def cluster_mode_command(master_url: str, tmp_path: Path, package: Path, config: Path, python: Path,
                         *job_args: str) -> list[str]:
    """spark-submit of the ingest job with its driver on a worker. Spark's standalone manager refuses cluster
    deploy mode for a .py primary resource, so the driver's main class is Spark's PythonRunner (what
    spark-submit itself runs for a Python driver), given the script and the --py-files list as its first two
    arguments; YARN and Kubernetes take `--deploy-mode cluster jobs/ingest.py` as it is."""
    return [str(SPARK_SUBMIT), "--master", master_url, "--deploy-mode", "cluster",
            "--properties-file", str(REPO_ROOT / "conf" / "spark-defaults.conf"),
            "--conf", "spark.standalone.submit.waitAppCompletion=true", "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.pyspark.driver.python={python}", "--conf", f"spark.pyspark.python={python}",
            "--driver-memory", "512m", "--driver-cores", "1",
            "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1", *EXECUTOR_LOG_LEVEL,
            "--files", f"{config},{package}", "--conf", f"spark.submit.pyFiles={package}",
            "--class", "org.apache.spark.deploy.PythonRunner", str(launcher_jar(tmp_path / "launcher.jar")),
            str(REPO_ROOT / "jobs" / "ingest.py"), str(package), *job_args]


def test_ingest_in_cluster_deploy_mode_reads_its_config_shipped_with_files(cluster, bare, kafka, tmp_path, capsys):
    master_url, logs = cluster
    package = build_zip(tmp_path / "kafkasource.zip")
    topic = kafka.create_topic(kafka.unique_name("cluster-mode"), partitions=2)
    group = kafka.unique_name("cluster-mode-group")
    kafka.produce_values(topic, 60, partitions=2)
    config = write_config(tmp_path / "shipped.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source="maxOffsetsPerTrigger = 40")
    drivers_before = set(logs.glob("worker-*/driver-*"))
    apps_before = set(logs.glob("worker-*/app-*/*"))

    started = time.monotonic()
    # the driver finds the config by the name --files shipped it under: no path of this machine is passed
    submit = subprocess.run(cluster_mode_command(master_url, tmp_path, package, config, bare,
                                                 "--config", "shipped.toml"),
                            cwd=tmp_path, capture_output=True, text=True, timeout=600, env=submit_env(bare))
    took = time.monotonic() - started

    drivers = set(logs.glob("worker-*/driver-*")) - drivers_before
    assert len(drivers) == 1, (submit.stdout[-2000:], submit.stderr[-4000:])
    driver, = drivers
    stdout, stderr = (driver / "stdout").read_text(), (driver / "stderr").read_text()
    assert submit.returncode == 0, (submit.stderr[-3000:], stderr[-4000:])
    assert stdout.splitlines()[-1] == f"ingest: 60 rows in 2 batches from subscribe={topic} into {tmp_path / 'out'}"
    assert sorted(durable_positions(tmp_path / "out")) == [(p, o) for p in range(2) for o in range(30)]
    assert kafka.committed(group, topic, 2) == {0: 30, 1: 30}
    # the commits come from Spark's driver-side process of the source: its lines reach the driver's log
    commits = [line.split(": ", 1)[1] for line in stderr.splitlines()
               if " INFO kafkasource.commit.committer [pid " in line]
    assert commits[-1] == f"committed group {group}: {topic}-0@30, {topic}-1@30", stderr[-3000:]
    # the executors that read loaded kafkasource from the zip shipped into their folders
    executors = sorted(set(logs.glob("worker-*/app-*/*")) - apps_before)
    readers = {executor: lines for executor, lines in loaded_from(executors).items() if lines}
    assert readers, {executor: (executor / "stderr").read_text()[-2000:] for executor in executors}
    assert {executor: set(lines) for executor, lines in readers.items()} == {
        executor: {f"{executor}/kafkasource.zip/kafkasource"} for executor in readers}
    with capsys.disabled():
        print(f"\n[cluster] ingest in cluster deploy mode, config shipped with --files: 60 records in {took:.0f} s")


def test_executors_read_natively_from_a_packed_environment(cluster, kafka, tmp_path, capsys):
    """readPath=native fails a task on any executor whose Python cannot load the extension; the executors' Python
    is the packed environment's (the workers' own interpreter, dev/bare_python.py, has no kafkasource)."""
    master_url, logs = cluster
    started = time.monotonic()
    environment = packed_env.archive()  # built with pex, cached in .cache/packed-env/ by the sources' hash
    packed_in = time.monotonic() - started
    # client mode: Spark also runs the source's driver-side process with spark.pyspark.python, relative to
    # the directory spark-submit runs in, so the submitting machine holds the environment unpacked too
    (tmp_path / "submit").mkdir()
    (tmp_path / "submit" / "environment").symlink_to(packed_env.unpacked())
    topic = kafka.create_topic(kafka.unique_name("packed"), partitions=2)
    group = kafka.unique_name("packed-group")
    kafka.produce_values(topic, 60, partitions=2)
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source='maxOffsetsPerTrigger = 40\nreadPath = "native"')
    apps_before = set(logs.glob("worker-*/app-*/*"))

    started = time.monotonic()
    result = subprocess.run(submit_command(
        "ingest", "--config", str(config), master=master_url,
        extra=("--conf", f"spark.archives={environment}#environment",
               "--conf", "spark.pyspark.python=./environment/bin/python",
               "--conf", f"spark.pyspark.driver.python={sys.executable}",
               "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1")),
        cwd=tmp_path / "submit", capture_output=True, text=True, timeout=600, env={**os.environ, **SUBMIT_ENV})
    took = time.monotonic() - started

    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-4000:])
    assert result.stdout.splitlines()[-1] == (
        f"ingest: 60 rows in 2 batches from subscribe={topic} into {tmp_path / 'out'}")
    assert sorted(durable_positions(tmp_path / "out")) == [(p, o) for p in range(2) for o in range(30)]
    assert kafka.committed(group, topic, 2) == {0: 30, 1: 30}
    # each executor that read says which extension it loaded: the one unpacked from the archive
    executors = sorted(set(logs.glob("worker-*/app-*/*")) - apps_before)
    announced = {executor: [line.split(": ", 1)[1] for line in (executor / "stderr").read_text().splitlines()
                            if " INFO kafkasource.reading.native [pid " in line] for executor in executors}
    readers = {executor: lines for executor, lines in announced.items() if lines}
    assert readers, announced
    assert all(line.startswith(f"reading with the native extension {executor}/environment/lib/python3.")
               for executor, lines in readers.items() for line in lines), readers
    # the wheel's console entry points, run by the environment's Python (a packed environment's scripts name the
    # directory it was built in) with only Spark's own Python path added, as a node gives its Python workers:
    # the lag job needs no session and reports the group at the log end
    spark_python = sorted(str(p) for p in (SPARK_HOME / "python" / "lib").glob("*.zip"))
    bin_dir = packed_env.unpacked() / "bin"
    lag = subprocess.run([str(bin_dir / "python"), str(bin_dir / "kafkasource-lag"), "--config", str(config)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(spark_python)})
    assert lag.returncode == 0, lag.stderr[-2000:]
    assert lag.stdout.splitlines()[-1] == "total lag: 0 records over 2 partitions"
    assert sorted(p.name for p in bin_dir.glob("kafkasource-*")) == [
        "kafkasource-ingest", "kafkasource-lag", "kafkasource-replay", "kafkasource-route"]
    with capsys.disabled():
        print(f"\n[cluster] packed environment ready in {packed_in:.0f} s; ingest with readPath=native on its "
              f"executors: 60 records in {took:.0f} s ({len(readers)} of {len(executors)} executors read natively)")
