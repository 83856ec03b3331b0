"""Failures only executors meet: the task's consumer, called as an executor calls it (task_reader.read_ranges), against
brokers that refuse it (a wrong SASL password, a CA that did not sign the broker's certificate) or a port nothing
accepts on. A refusal fails the task at once with librdkafka's reason; a transport error is retried until
kafkaConsumer.pollTimeoutMs, and the stall then names it. Either way the failed consumer is closed, not pooled.
"""

from __future__ import annotations

import logging
import re
import secrets
import socket
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dev import secure_broker
from kafkasource.cluster.refusal import refusal_error
from kafkasource.errors import AccessError, KafkaSourceError
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading.consumers import ConsumerPool, FetchConfig
from kafkasource.reading.task_reader import TaskReader, read_ranges
from tests.support.security_helpers import PASSWORDS, WRONG_PASSWORD

pytestmark = [pytest.mark.faults]

NOT_RETRIED_S = 30  # a refusal must fail the task long before kafkaConsumer.pollTimeoutMs (120 s here)
LONG_POLL_TIMEOUT_MS = 120_000


class RecordingPool(ConsumerPool):
    """The pool executors use, remembering every consumer it handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.handed_out: list = []

    def acquire(self, config: FetchConfig, native_ok: bool = True, topic: str | None = None):
        consumer = super().acquire(config, native_ok, topic)
        self.handed_out.append(consumer)
        return consumer


def topic_of_ten(broker) -> str:
    """A new 1-partition topic holding 10 records, made as the broker's admin."""
    name = f"executor-{secrets.token_hex(4)}"
    admin = AdminClient(broker.client_config())
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    producer = Producer(broker.client_config())
    for i in range(10):
        producer.produce(name, value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    return name


def fetch_config(kafka_config: dict[str, str], read_path: str, poll_timeout_ms: int) -> FetchConfig:
    return FetchConfig(kafka_config, include_headers=False, fail_on_data_loss=True, poll_timeout_ms=poll_timeout_ms,
                       read_path=read_path)


def offsets_read(topic: str, config: FetchConfig, pool: ConsumerPool) -> list[int]:
    return [offset for batch in read_ranges((OffsetRange(topic, 0, 0, 10),), config, pool)
            for offset in batch.column("offset").to_pylist()]


def failed_read(topic: str, config: FetchConfig, expected: type[Exception]) -> tuple[Exception, float, RecordingPool]:
    """Read records 0..9 of the topic's partition 0 as an executor does, expecting it to fail: (the error, the
    seconds it took, the pool)."""
    pool = RecordingPool()
    started = time.monotonic()
    with pytest.raises(expected) as failure:
        offsets_read(topic, config, pool)
    return failure.value, time.monotonic() - started, pool


def assert_closed_not_pooled(pool: RecordingPool) -> None:
    consumer, = pool.handed_out
    assert [idle for entries in pool._idle.values() for idle in entries] == []
    with pytest.raises((RuntimeError, OSError), match="(?i)consumer (is )?closed"):
        consumer.assignment()


def librdkafka_reason(reason: str) -> str:
    """librdkafka's text for a broker connection failure, which ends with how long it took and, when it repeats,
    how many identical errors it did not report."""
    return re.escape(reason) + r" \(after \d+ms in state [A-Z_]+(, \d+ identical error\(s\) suppressed)?\)"


def test_a_wrong_password_fails_the_task_at_once_naming_mechanism_protocol_brokers_user_and_reason(sasl, read_path):
    topic = topic_of_ten(sasl)
    sasl.grant("alice", "TOPIC", topic, "READ")
    servers = sasl.bootstrap_servers
    right = fetch_config(sasl.client_config("alice", PASSWORDS["alice"]), read_path, LONG_POLL_TIMEOUT_MS)
    wrong = fetch_config(sasl.client_config("alice", WRONG_PASSWORD), read_path, LONG_POLL_TIMEOUT_MS)

    assert offsets_read(topic, right, ConsumerPool()) == list(range(10))  # only the password differs below
    error, seconds, pool = failed_read(topic, wrong, AccessError)
    message = str(error)

    assert re.fullmatch(
        re.escape(f"could not read {topic}-0: authentication with Kafka at {servers} failed (SASL mechanism "
                  f"SCRAM-SHA-512, security.protocol SASL_PLAINTEXT) as user alice: ")
        + librdkafka_reason(f"sasl_plaintext://{servers}/bootstrap: SASL authentication error: Authentication "
                            "failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
        + re.escape(". Check kafka.sasl.username and kafka.sasl.password, and that kafka.sasl.mechanism is one the "
                    "brokers enable"), message), message
    assert seconds < NOT_RETRIED_S, f"failed after {seconds:.1f} s"
    found = [secret for secret in ("alice", WRONG_PASSWORD, PASSWORDS["alice"]) if secret in message]
    assert found == ["alice"]  # the search finds the user it names, and neither password
    assert_closed_not_pooled(pool)


def test_a_ca_that_did_not_sign_the_brokers_certificate_fails_the_task_at_once_naming_the_tls_cause(
        ssl, certificates, tmp_path, read_path):
    topic = topic_of_ten(ssl)
    other_ca, _key = secure_broker.make_ca(tmp_path / "other", "other-ca")
    servers = ssl.bootstrap_servers
    right = fetch_config({**ssl.client_config(), "ssl.ca.location": str(certificates.ca_pem)}, read_path,
                         LONG_POLL_TIMEOUT_MS)
    wrong = fetch_config({**ssl.client_config(), "ssl.ca.location": str(other_ca)}, read_path, LONG_POLL_TIMEOUT_MS)

    assert offsets_read(topic, right, ConsumerPool()) == list(range(10))  # only the CA differs below
    error, seconds, pool = failed_read(topic, wrong, AccessError)
    message = str(error)

    assert re.fullmatch(
        re.escape(f"could not read {topic}-0: the TLS handshake with Kafka at {servers} failed: ssl://{servers}/"
                  "bootstrap: SSL handshake failed: ")
        + r"error:[0-9A-F]+:SSL routines:[a-z_0-9]*:"  # OpenSSL's code and function vary with its version
        + librdkafka_reason("certificate verify failed: broker certificate could not be verified, verify that "
                            "ssl.ca.location is correctly configured or root CA certificates are installed (install "
                            "ca-certificates package)")
        + re.escape(". If the brokers' certificate cannot be verified, set kafka.ssl.ca.location to the PEM file of "
                    "the CA that signed it"), message), message
    assert seconds < NOT_RETRIED_S, f"failed after {seconds:.1f} s"
    assert_closed_not_pooled(pool)


def test_a_closed_port_is_retried_until_the_poll_timeout_and_the_stall_names_the_last_error(read_path, caplog):
    # a socket bound but not listening: connecting to it is refused, and no other process can take the port
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        servers = f"127.0.0.1:{bound.getsockname()[1]}"
        config = fetch_config({"bootstrap.servers": servers}, read_path, 3000)
        with caplog.at_level(logging.WARNING, logger="kafkasource.reading.task_reader"):
            error, seconds, pool = failed_read("orders", config, KafkaSourceError)
    message = str(error)

    assert type(error) is KafkaSourceError  # not a refusal: retried until the timeout
    assert re.fullmatch(
        re.escape("reading orders-0 stalled at offset 0 (range 0..10): nothing arrived within 3000 ms "
                  f"(kafkaConsumer.pollTimeoutMs); the last error from the brokers: {servers}/bootstrap: Connect to "
                  f"ipv4#{servers} failed: ")
        + librdkafka_reason("Connection refused")
        + re.escape(". Check that the brokers are reachable from the executors"), message), message
    assert 3 <= seconds < 60, f"failed after {seconds:.1f} s"
    # every kind of error warned about once, however often librdkafka repeats it
    warnings = [record.getMessage() for record in caplog.records]
    assert [w.split(": ", 1)[0] for w in warnings] == ["reading orders-0"] * len(warnings)
    assert sum("Connection refused" in w for w in warnings) == 1, warnings
    assert len(warnings) <= 2, warnings  # the refused connection, and "1/1 brokers are down"
    assert_closed_not_pooled(pool)


def test_a_refusal_message_names_a_user_only_where_one_is_configured_and_never_a_password():
    error = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed")
    with_user = {"bootstrap.servers": "b1:9092,b2:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                 "sasl.username": "etl", "sasl.password": WRONG_PASSWORD}
    oauth = {"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
             "sasl.oauthbearer.client.secret": WRONG_PASSWORD}

    assert str(refusal_error("read t-0", error, with_user)) == (
        "could not read t-0: authentication with Kafka at b1:9092,b2:9092 failed (SASL mechanism PLAIN, "
        "security.protocol SASL_SSL) as user etl: SASL authentication error: Authentication failed. Check "
        "kafka.sasl.username and kafka.sasl.password, and that kafka.sasl.mechanism is one the brokers enable")
    assert str(refusal_error("list topics", error, oauth)) == (
        "could not list topics: authentication with Kafka at b1:9092 failed (SASL mechanism OAUTHBEARER, "
        "security.protocol SASL_SSL): SASL authentication error: Authentication failed. Check "
        "kafka.sasl.oauthbearer.client.id and kafka.sasl.oauthbearer.client.secret, that "
        "kafka.sasl.oauthbearer.token.endpoint.url is the identity provider's token endpoint, and that the brokers "
        "accept its tokens (their JWKS, expected audience and issuer)")


def test_client_level_errors_never_move_a_range_a_refusal_fails_and_the_stall_keeps_the_telling_cause():
    config = fetch_config({"bootstrap.servers": "b1:9092", "security.protocol": "SSL"}, "python", 1000)
    reader = TaskReader(None, tuple(OffsetRange("orders", p, 10, 20) for p in range(7)), config)
    unresolved = KafkaError(KafkaError._RESOLVE, "b1:9092/bootstrap: Failed to resolve 'b1:9092'")

    reader.on_client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    reader.on_client_error(unresolved)
    reader.on_client_error(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    assert reader.last_error is unresolved  # not replaced by the bare "brokers are down" after it
    reader.on_client_error(KafkaError(KafkaError._UNKNOWN_TOPIC, "a code that, about a partition, is data loss"))
    assert [(state.position, state.moved) for state in reader.ranges.values()] == [(10, False)] * 7

    with pytest.raises(AccessError) as failure:
        reader.on_client_error(KafkaError(KafkaError._SSL, "b1:9092/bootstrap: SSL handshake failed"))
    assert str(failure.value) == (
        "could not read 7 partitions (orders-0, orders-1, orders-2, orders-3, orders-4, ...): the TLS handshake with "
        "Kafka at b1:9092 failed: b1:9092/bootstrap: SSL handshake failed. If the brokers' certificate cannot be "
        "verified, set kafka.ssl.ca.location to the PEM file of the CA that signed it")
    with pytest.raises(KafkaSourceError, match=r"^reading 7 partitions \(orders-0, .*, \.\.\.\) failed: fenced$"):
        reader.on_client_error(KafkaError(KafkaError._FATAL, "fenced"))
