"""Session fixtures: one real Kafka broker and one local Spark session for the whole run."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dev import broker as local_broker
from dev import registry as local_registry
from dev import secure_broker
from kafkasource.runtime import native_extension
from tests.kafka_helpers import KafkaHarness
from tests.security_helpers import PASSWORDS

log = logging.getLogger(__name__)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items) -> None:
    """Every test using the `spark` fixture carries the spark marker, so `-m "not spark"` leaves out what starts
    Spark; tests that start it another way (spark-submit, a Connect server, a cluster) are marked in their modules."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def kafka_broker(request):
    started = time.monotonic()
    broker = local_broker.start()
    _announce(request, f"Kafka {local_broker.KAFKA_VERSION} broker up on {broker.bootstrap_servers} "
                       f"in {time.monotonic() - started:.1f} s")
    yield broker
    broker.stop()


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


# Read tests run against both read paths wherever the native one can exist: where cargo is on PATH,
# `pip install` builds it, so a missing extension there is a failure, not a reason to skip.
READ_PATHS = ["python", "native"] if native_extension.available() or shutil.which("cargo") else ["python"]


@pytest.fixture(params=READ_PATHS)
def read_path(request) -> str:
    if request.param == "native" and not native_extension.available():
        pytest.fail("kafkasource's native extension is not built although cargo is on PATH: "
                    "see the output of pip install -e . (setup.py builds native/ with setuptools-rust)")
    return request.param


# secured brokers: started once, for every module whose tests use them
@pytest.fixture(scope="session")
def sasl():
    broker = secure_broker.start_sasl(PASSWORDS)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def certificates():
    return secure_broker.make_certificates(Path(tempfile.mkdtemp(prefix="kafkasource-certs-")))


@pytest.fixture(scope="session")
def ssl(certificates):
    broker = secure_broker.start_ssl(certificates)
    yield broker
    broker.stop()
