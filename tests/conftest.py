"""What every tier shares: the session's servers and Spark for the integration and system tiers (one real Kafka
broker, one schema registry, one local Spark session, each started once for the first test that needs it), the
read and write paths tests run on, the markers of what each test costs (tests/support/tiers.py), and the run's line
on the native half of the read tests."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import pytest

from tests.support import native_coverage  # first: it may hide the native extension before anything imports kafkasource

# isort: split
from dev import broker as local_broker
from dev import registry as local_registry
from tests.support import tiers
from tests.support.kafka_helpers import KafkaHarness

log = logging.getLogger(__name__)


def pytest_configure(config) -> None:
    """A run that requires the native read tests (see tests/support/native_coverage.py) does not start without them."""
    refusal = native_coverage.refusal()
    if refusal:
        raise pytest.UsageError(refusal)


# node ids of the tests that ran (reached their call) on the native read path, resp. the native Avro decoder: for the
# run's summary line. Collection marks those tests with a user property, which a report carries, so this also counts
# what pytest-xdist's workers ran: they collect, and only their reports reach the process that prints the summary.
NATIVE_PROPERTY = "native"
_native_ran: dict[str, set[str]] = {"read path": set(), "avro": set()}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items) -> None:
    """Each test carries the markers of what it costs (tests/support/tiers.py: `broker`, `spark`, `system`), so `-m`
    selects by cost; a test in tests/unit/ or tests/repo/ that asks for a broker, the registry or Spark stops the run
    before anything starts. Tests marked `before_admission_control` prove what kafkasource does on pyspark 4.0/4.1
    only: on a pyspark with admission control for Python readers they are deselected (counted as such, never as
    passed or skipped), as are tests marked `lakehouse` on a pyspark that Delta Lake and Iceberg have no jars for
    (the compatibility run's pyspark has them)."""
    from dev import lakehouse
    from kafkasource.runtime.spark_api import ADMISSION_CONTROL

    left_out = [item for item in items
                if (ADMISSION_CONTROL and item.get_closest_marker("before_admission_control"))
                or (not lakehouse.supported() and item.get_closest_marker("lakehouse"))]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
    root = Path(__file__).parent
    wrong = []
    for item in items:
        where, asked = tiers.tier(item.path, root), set(getattr(item, "fixturenames", ()))
        for name in tiers.cost_markers(where, asked):
            item.add_marker(name)
        why = tiers.misplaced(where, asked)
        if why:
            wrong.append(f"{item.nodeid} {why}")
        params = getattr(getattr(item, "callspec", None), "params", {})
        for kind, fixtures in (("read path", native_coverage.READ_PATH_FIXTURES),
                               ("avro", native_coverage.AVRO_FIXTURES)):
            if any(params.get(name) == "native" for name in fixtures):
                item.user_properties.append((NATIVE_PROPERTY, kind))
    if wrong:
        raise pytest.UsageError("tests in the wrong tier:\n" + "\n".join(wrong))


def pytest_runtest_logreport(report) -> None:
    if report.when == "call":
        for name, kind in report.user_properties:
            if name == NATIVE_PROPERTY:
                _native_ran[kind].add(report.nodeid)


def pytest_terminal_summary(terminalreporter) -> None:
    """One line saying whether the native half of the read tests ran, or what this install left out and why."""
    line = native_coverage.left_out() or native_coverage.ran_line(len(_native_ran["read path"]),
                                                                  len(_native_ran["avro"]))
    terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def kafka_broker(request):
    started = time.monotonic()
    broker = local_broker.start()
    _announce(request, f"Kafka {local_broker.KAFKA_VERSION} broker up on {broker.bootstrap_servers} "
                       f"in {time.monotonic() - started:.1f} s")
    yield broker
    _close_pooled_clients()
    broker.stop()


def _close_pooled_clients() -> None:
    """The clients this process's tests left in kafkasource's pools (the tests that call the executors' reads and
    writes directly), closed while their broker is up: a pooled consumer with a group.id outliving it would log a
    failed connection every 50 ms until the process exits."""
    from kafkasource.reading.consumers import POOL as READERS
    from kafkasource.writing.producer import POOL as PRODUCERS
    from kafkasource.writing.transactional_pool import POOL as TRANSACTIONAL

    for pool in (READERS, PRODUCERS, TRANSACTIONAL):
        pool.close_all()


def _announce(request, message: str) -> None:
    """Say in the run's output (not captured) what a session fixture started and how long it took."""
    log.info(message)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\n{message}")


@pytest.fixture(scope="session")
def schema_registry(request) -> str:
    """The URL (`schema.registry.url`) of one real schema registry (Apicurio, in memory) for the whole run."""
    started = time.monotonic()
    registry = local_registry.start()
    _announce(request, f"Apicurio Registry {local_registry.APICURIO_VERSION} up on {registry.url} "
                       f"in {time.monotonic() - started:.1f} s")
    yield registry.url
    registry.stop()


@pytest.fixture(scope="session")
def kafka(kafka_broker) -> KafkaHarness:
    return KafkaHarness(kafka_broker.bootstrap_servers)


@pytest.fixture
def topic(kafka, request) -> str:
    """A fresh 3-partition topic named after the test."""
    return kafka.create_topic(kafka.unique_name(request.node.name))


@pytest.fixture(scope="session")
def spark():
    # Python workers must run this interpreter, and everything binds to loopback (Spark would
    # otherwise pick the machine's network address)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # the tests' own token provider may run, as a cluster's owner allows one: Spark's Python workers see the
    # environment the JVM started with (kafkasource/cluster/sign_in/custom.py)
    os.environ["KAFKASOURCE_OAUTH_PROVIDERS"] = "tests.support.token_provider:client_credentials"
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("kafkasource-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.streaming.stopTimeout", "30s")
               .getOrCreate())
    session.sparkContext.setLogLevel("WARN")
    yield session
    session.stop()


# Read tests run against both read paths wherever the native one is built; where it is required but missing,
# pytest_configure has refused the run (tests/support/native_coverage.py)
@pytest.fixture(params=native_coverage.READ_PATHS)
def read_path(request) -> str:
    return request.param


@pytest.fixture(params=native_coverage.WRITE_PATHS)
def write_path(request) -> str:
    """The sink's writePath a test runs on: "python", and "native" where the extension is built."""
    return request.param


@pytest.fixture(params=native_coverage.AVRO_READ_PATHS)
def decoder(request) -> str:
    """The Avro decoder a test of kafkasource.formats.avro.decode runs on: "python", and "native" where it is built."""
    return request.param
