"""Session fixtures: one real Kafka broker and one local Spark session for the whole run."""

from __future__ import annotations

import logging
import os
import sys
import time

import pytest

from dev import broker as local_broker
from tests.kafka_helpers import KafkaHarness

log = logging.getLogger(__name__)


@pytest.fixture(scope="session")
def kafka_broker(request):
    started = time.monotonic()
    broker = local_broker.start()
    message = (f"Kafka {local_broker.KAFKA_VERSION} broker up on {broker.bootstrap_servers} "
               f"in {time.monotonic() - started:.1f} s")
    log.info(message)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():  # shown in the run's output, not captured
        print(f"\n{message}")
    yield broker
    broker.stop()


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
