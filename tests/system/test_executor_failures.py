"""Failures only executors meet: the task's consumer, called as an executor calls it (task_reader.read_ranges), against
secured brokers of their own that refuse it (a wrong SASL password, a CA that did not sign the broker's certificate).
A refusal fails the task at once with librdkafka's reason, and the failed consumer is closed, not pooled. A port
nothing accepts on: tests/unit/test_executor_failures.py."""

from __future__ import annotations

import re
import secrets

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dev import secure_broker
from kafkasource.errors import AccessError
from kafkasource.reading.consumers import ConsumerPool
from tests.support.security_helpers import PASSWORDS, WRONG_PASSWORD
from tests.support.task_reads import (
    assert_closed_not_pooled,
    failed_read,
    fetch_config,
    librdkafka_reason,
    offsets_read,
)

NOT_RETRIED_S = 30  # a refusal must fail the task long before kafkaConsumer.pollTimeoutMs (120 s here)
LONG_POLL_TIMEOUT_MS = 120_000


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
