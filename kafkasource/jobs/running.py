"""What every job does around its work: its Spark session, logging, one-line failures, exit codes,
a graceful stop, and one log line per micro-batch.

Exit codes: 0 done (or stopped on request), 1 the job failed, 2 bad configuration or arguments
(argparse's own code), 3 reserved for the lag job's "lag above --max-lag".
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import re
import signal
import sys
import threading
import time
import tomllib
from typing import Callable

import kafkasource
from kafkasource.errors import KafkaSourceError
from kafkasource.jobs import files
from kafkasource.jobs.config import ConfigError, JobConfig, load
from kafkasource.progress_lag import input_rows, lag_from_progress, rows_per_second

log = logging.getLogger("kafkasource.jobs")

EXIT_FAILED, EXIT_CONFIG = 1, 2
# the first line of one of our errors inside a Spark/Py4J/Connect exception's text
_OUR_ERROR = re.compile(r"kafkasource\.errors\.(\w+): ([^\n]*)")


def add_common_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument("--config", required=True,
                        help=f"the job's TOML file (see {example}): a local path, the name of a file shipped with "
                             f"--files, or a URI Spark reads (s3a://..., hdfs://..., file:/...)")
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument("--log-config", help="Python logging settings as TOML for dictConfig (see conf/logging.toml)")


def session(app_name: str | None, remote: str | None):
    """The job's Spark session: classic, or on the Spark Connect server at `remote`. Without `app_name`, the
    one spark-submit gave (--name, else the script's name)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if app_name:
        builder = builder.appName(app_name)
    spark = (builder.remote(remote) if remote else builder).getOrCreate()
    # format("kafkasource") even where the package came by --py-files, and on every run the application's id and
    # name for the commits' metadata and the log levels, which Spark's own registration at startup does not carry
    kafkasource.register(spark)
    return spark


def load_config(location: str, remote: str | None, **checks) -> tuple[JobConfig, object | None]:
    """The job's checked configuration, and the Spark session started to read it if one was needed.

    A local file is read before Spark starts, so a bad one stops the job before any session. A file shipped
    with --files (named by its bare name) or on a file system Spark reads (hdfs:, s3a:, file: on the
    driver's node ...) is read through a session started for it, as in cluster deploy mode."""
    if files.local_file(location) is not None:
        return load(location, **checks), None
    spark = session(None, remote)
    try:
        try:
            data = files.read_bytes(spark, location)
        except FileNotFoundError:
            raise ConfigError(f"config file {location} does not exist (not a local file, not shipped with --files "
                              f"by that name, not on a file system Spark reads)") from None
        except OSError as exc:
            raise ConfigError(f"--config {location}: {exc}") from None
        return load(location, data=data, **checks), spark
    except BaseException:
        spark.stop()
        raise


def setup_logging(level: str = "INFO", config_file: str | None = None) -> None:
    """Job lines on stderr; the Kafka client, py4j and Spark's Python side at WARN; or a dictConfig file.
    The levels of kafkasource's loggers set here also hold in the Python processes Spark starts for the source
    (kafkasource.register hands them on), so their lines reach the driver's and executors' logs."""
    kafkasource.logs.leave_to_caller()
    if config_file:
        try:
            with open(config_file, "rb") as f:
                logging.config.dictConfig(tomllib.load(f))
            return
        except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"--log-config {config_file}: {exc}") from None
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("py4j", "pyspark", "confluent_kafka", "kafkasource.fetch", "kafkasource.client"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def one_line(exc: BaseException) -> str:
    """The reason for a failure, in one line: our own message when it is in there."""
    text = str(exc)
    found = _OUR_ERROR.search(text)
    if found:
        return f"{found.group(1)}: {found.group(2).strip()}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return first if len(first) <= 500 else first[:500] + " ..."


def run_main(job: str, work: Callable[[], int]) -> int:
    """Run a job's body; turn any failure into one line on stderr and an exit code."""
    try:
        return work()
    except ConfigError as exc:
        print(f"{job}: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KafkaSourceError as exc:
        print(f"{job}: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{job}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # Spark's and Py4J's exceptions: their first line, the rest at DEBUG
        log.debug("%s failed", job, exc_info=True)
        print(f"{job}: failed: {one_line(exc)}", file=sys.stderr)
        return EXIT_FAILED


class StopRequest:
    """Set by SIGTERM or SIGINT, to the job's Python process or to the spark-submit JVM around it.

    A signal to the Python process lets the running batch finish first. Under spark-submit the
    signal usually reaches the JVM instead, which then runs its shutdown hooks; a hook registered
    through Py4J ahead of Spark's own asks the job to stop and holds the JVM until it has (bounded).
    A shutting-down JVM no longer runs tasks (its executor's threads are gone), so the running batch
    is abandoned at once: the checkpoint makes the next run do it again, and the group's commits
    only ever cover completed batches. A second SIGINT to the Python process interrupts it at once."""

    def __init__(self, hold_jvm_s: float = 120.0):
        self.requested = threading.Event()
        self.jvm_exiting = threading.Event()
        self.finished = threading.Event()
        self._hook_returning = threading.Event()
        self._hold_jvm_s = hold_jvm_s

    def install(self, spark=None) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_signal)
            signal.signal(signal.SIGINT, self._on_signal)
        if spark is not None and hasattr(spark, "sparkContext"):
            try:
                self._hook_jvm(spark)
            except Exception as exc:  # Connect sessions and unusual gateways: signals to Python still work
                log.debug("no JVM shutdown hook: %s", exc)

    def _on_signal(self, signum, frame) -> None:
        if self.requested.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        log.info("%s received: stopping after the running batch", signal.Signals(signum).name)
        self.requested.set()

    def _hook_jvm(self, spark) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        context = spark.sparkContext
        ensure_callback_server_started(context._gateway)
        request = self

        class JvmShutdownHook:  # a scala.Function0 the JVM calls while it shuts down
            def apply(self):
                log.info("the JVM is shutting down: stopping now; a running batch is left to the next run")
                request.jvm_exiting.set()
                request.requested.set()
                request.finished.wait(request._hold_jvm_s)
                request._hook_returning.set()

            class Java:
                implements = ["scala.Function0"]

        setattr(JvmShutdownHook, "apply$mcV$sp", JvmShutdownHook.apply)  # the name Scala calls for () => Unit
        self._hook = JvmShutdownHook()  # referenced here, or Py4J could collect it
        self._hooks = context._jvm.org.apache.spark.util.ShutdownHookManager
        # priority 100 runs before Spark stops its SparkContext (priority 50)
        self._hook_handle = self._hooks.addShutdownHook(100, self._hook)

    def done(self) -> None:
        """The job has finished: let a JVM shutdown hook that waits for it return, and see its answer sent."""
        self.finished.set()
        if self.jvm_exiting.is_set() and self._hook_returning.wait(10):
            time.sleep(0.5)  # Py4J sends the hook's return after apply() ends; exiting first would cut it off

    def uninstall(self) -> None:
        """Before the session stops: a JVM exiting normally must not call back into a finished job."""
        handle, self._hook_handle = getattr(self, "_hook_handle", None), None
        if handle is not None:
            try:
                self._hooks.removeShutdownHook(handle)
            except Exception as exc:  # the JVM is already shutting down: the hook is running, let it
                log.debug("shutdown hook not removed: %s", exc)


class BatchLog:
    """One INFO line per completed micro-batch, read from the query's progress."""

    def __init__(self):
        self.last_batch = -1
        self.rows = 0
        self.batches = 0

    def update(self, query) -> None:
        for progress in query.recentProgress:
            batch = progress["batchId"]
            if batch <= self.last_batch:
                continue
            self.last_batch = batch
            rows = input_rows(progress)
            lag = lag_from_progress(progress)
            self.rows += rows
            self.batches += 1
            rate = rows_per_second(progress)
            log.info("batch %d: %s rows, %s rows/s, lag %s", batch, f"{rows:,}",
                     f"{rate:,.0f}" if rate >= 100 else f"{rate:.2g}",
                     f"{lag.total:,}" if lag is not None else "unknown")


def run_query(query, stop: StopRequest, batch_log: BatchLog, idle_wait_s: float = 120.0) -> bool:
    """Wait for the query to end by itself or by a stop request; True when it was asked to stop.

    On a stop request, the batch running at that moment is given up to `idle_wait_s` to finish before
    query.stop() (unless the JVM is exiting, see StopRequest); Spark's stop interrupts a batch still running,
    such as the next one of a backlog, which Spark starts as soon as the previous one ends."""
    while not query.awaitTermination(1):
        batch_log.update(query)
        if stop.requested.is_set():
            _finish_running_batch(query, stop, time.monotonic() + idle_wait_s)
            query.stop()  # our reader's process flushes async commits and closes its clients on this
            batch_log.update(query)
            return True
    batch_log.update(query)
    return False


def _finish_running_batch(query, stop: StopRequest, deadline: float) -> None:
    """Wait until the trigger running now has ended: its batch reported progress, or no trigger is active."""
    finished = _last_batch_id(query)
    while not stop.jvm_exiting.is_set() and time.monotonic() < deadline:
        if not query.status["isTriggerActive"] or _last_batch_id(query) != finished:
            return
        time.sleep(0.1)


def _last_batch_id(query) -> int:
    progress = query.lastProgress
    return -1 if progress is None else int(progress["batchId"])
