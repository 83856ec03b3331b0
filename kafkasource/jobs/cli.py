"""What every job does on the command line: its arguments, its Spark session, its configuration, logging, and
failures told in one line with an exit code.

Exit codes: 0 done (or stopped on request), 1 the job failed, 2 bad configuration or arguments
(argparse's own code), 3 reserved for the lag job's "lag above --max-lag".
"""

from __future__ import annotations

import argparse
import logging
import logging.config
import re
import sys
import tomllib
from collections.abc import Callable
from typing import TYPE_CHECKING

import kafkasource
from kafkasource.errors import KafkaSourceError
from kafkasource.jobs import files
from kafkasource.jobs.config import ConfigError, JobConfig, load

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("kafkasource.jobs")

EXIT_FAILED, EXIT_CONFIG = 1, 2
# the first line of one of our errors inside a Spark/Py4J/Connect exception's text
_OUR_ERROR = re.compile(r"kafkasource\.errors\.(\w+): ([^\n]*)")


def add_common_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument(
        "--config",
        required=True,
        help=f"the job's TOML file (see {example}): a local path, the name of a file shipped with "
        f"--files, or a URI Spark reads (s3a://..., hdfs://..., file:/...)",
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument("--log-config", help="Python logging settings as TOML for dictConfig (see conf/logging.toml)")


def session(app_name: str | None, remote: str | None) -> SparkSession:
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


def load_config(location: str, remote: str | None, **checks) -> tuple[JobConfig, SparkSession | None]:
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
            raise ConfigError(
                f"config file {location} does not exist (not a local file, not shipped with --files "
                f"by that name, not on a file system Spark reads)"
            ) from None
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
    kafkasource.runtime.logs.leave_to_caller()
    if config_file:
        try:
            with open(config_file, "rb") as f:
                logging.config.dictConfig(tomllib.load(f))
            return
        except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"--log-config {config_file}: {exc}") from None
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("py4j", "pyspark", "confluent_kafka", "kafkasource.reading.consumers", "kafkasource.cluster.client"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def one_line(exc: BaseException) -> str:
    """The reason for a failure, in one line: our own message when it is in there."""
    text = str(exc)
    found = _OUR_ERROR.search(text)
    if found:
        return f"{found.group(1)}: {found.group(2).strip()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    if first.startswith("An error occurred while calling") and len(lines) > 1:  # Py4J's: the JVM's reason follows
        first = f"{first} {lines[1].lstrip(': ')}"
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
