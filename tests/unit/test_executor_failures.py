"""Failures only executors meet, with no broker: the task's consumer, called as an executor calls it
(task_reader.read_ranges), against a port nothing accepts on is retried until kafkaConsumer.pollTimeoutMs, and the
stall then names the last error, the failed consumer closed, not pooled; the client-level errors that never move a
range, the refusals that fail it, and what a refusal's message names."""

from __future__ import annotations

import logging
import re
import socket

import pytest
from confluent_kafka import KafkaError

from kafkasource.cluster.refusal import refusal_error
from kafkasource.errors import AccessError, KafkaSourceError
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading.task_reader import TaskReader
from tests.support.security_helpers import WRONG_PASSWORD
from tests.support.task_reads import assert_closed_not_pooled, failed_read, fetch_config, librdkafka_reason


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
