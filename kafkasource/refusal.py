"""The brokers refusing this client (SASL authentication, the TLS handshake): which errors mean it, and the one
message that says so, for the driver's clients and the executors' consumers alike.

Waiting longer does not help with these, so whoever meets one fails at once. librdkafka reports them only to a
client's error callback (or its log), never as the result of a request or among a consumer's messages.
"""

from __future__ import annotations

from typing import Mapping

from confluent_kafka import KafkaError

from kafkasource.errors import AccessError

REFUSED = {KafkaError._AUTHENTICATION, KafkaError._SSL}


def refusal_error(what: str, error: KafkaError, kafka_config: Mapping[str, object]) -> AccessError:
    """Why the brokers in `kafka_config` refused us while we tried to `what`, and what to check: names the
    brokers, the SASL mechanism, security.protocol and the user, never a secret (librdkafka's reason holds none)."""
    servers = kafka_config.get("bootstrap.servers")
    if error.code() == KafkaError._AUTHENTICATION:
        mechanism = kafka_config.get("sasl.mechanism") or kafka_config.get("sasl.mechanisms") or "GSSAPI"
        username = kafka_config.get("sasl.username")
        return AccessError(
            f"could not {what}: authentication with Kafka at {servers} failed (SASL mechanism {mechanism}, "
            f"security.protocol {kafka_config.get('security.protocol', 'plaintext')})"
            f"{f' as user {username}' if username else ''}: {error.str()}. Check kafka.sasl.username and "
            "kafka.sasl.password, and that kafka.sasl.mechanism is one the brokers enable")
    return AccessError(
        f"could not {what}: the TLS handshake with Kafka at {servers} failed: {error.str()}. If the brokers' "
        "certificate cannot be verified, set kafka.ssl.ca.location to the PEM file of the CA that signed it")
