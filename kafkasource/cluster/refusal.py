"""The brokers refusing this client (SASL authentication, the TLS handshake): which errors mean it, and the one
message that says so, for the driver's clients and the executors' consumers alike.

Waiting longer does not help with these, so whoever meets one fails at once. librdkafka reports them only to a
client's error callback (or its log), never as the result of a request or among a consumer's messages. A broker
that requires client certificates (mutual TLS) refuses a missing or untrusted one with a TLS alert that, under
TLS 1.3, arrives after the handshake looked complete from the client's side: librdkafka reports that as a
transport error carrying OpenSSL's alert text, not as a TLS error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from confluent_kafka import KafkaError

from kafkasource.errors import AccessError
from kafkasource.runtime.secrets import masked

REFUSED = {KafkaError._AUTHENTICATION, KafkaError._SSL}
TLS_ALERT = re.compile(r"SSL alert number (\d+)")  # how OpenSSL words an alert the peer sent
# the TLS alerts a server sends about the client's certificate: bad_certificate, unsupported_certificate,
# certificate_revoked, certificate_expired, certificate_unknown, unknown_ca, certificate_required
CLIENT_CERTIFICATE_ALERTS = {42, 43, 44, 45, 46, 48, 116}


CLOSE_NOTIFY = 0  # the one alert that ends a TLS session in order (a broker shutting down), not a refusal
# What librdkafka reports when a broker refuses its re-authentication of a connection whose session is ending (KIP-368:
# brokers with connections.max.reauth.ms close a connection when its token expires unless the client signs in again
# on it). Kafka 4.3 answers librdkafka 2.12's and 2.13's re-authentication so; librdkafka then opens a new connection,
# which signs in with the current token. The credentials were not refused, so this is no reason to fail.
REAUTHENTICATION_REFUSED = "Request not valid in current SASL state"


def is_refusal(error: KafkaError) -> bool:
    """Whether `error` (from a client's error callback) means the brokers refused this client."""
    if error.code() == KafkaError._AUTHENTICATION and REAUTHENTICATION_REFUSED in error.str():
        return False
    if error.code() in REFUSED:
        return True
    alert = TLS_ALERT.search(error.str()) if error.code() == KafkaError._TRANSPORT else None
    return alert is not None and int(alert.group(1)) != CLOSE_NOTIFY


def refusal_error(what: str, error: KafkaError, kafka_config: Mapping[str, object]) -> AccessError:
    """Why the brokers in `kafka_config` refused us while we tried to `what`, and what to check: names the
    brokers, the SASL mechanism, security.protocol and the user (or OAuth client, or client certificate), never a
    secret (any secret setting's value in librdkafka's reason is masked too)."""
    servers = kafka_config.get("bootstrap.servers")
    protocol = kafka_config.get("security.protocol", "plaintext")
    reason = masked(error.str(), kafka_config)
    if error.code() == KafkaError._AUTHENTICATION:
        mechanism = kafka_config.get("sasl.mechanism") or kafka_config.get("sasl.mechanisms") or "GSSAPI"
        provider = kafka_config.get("oauth_cb")
        if str(mechanism).upper() == "OAUTHBEARER" and provider is not None:
            return AccessError(
                f"could not {what}: authentication with Kafka at {servers} failed (SASL mechanism {mechanism}, "
                f"security.protocol {protocol}) with a token of oauthProvider {getattr(provider, 'name', provider)}: "
                f"{reason}. Check that the identity the "
                "provider signs in as may connect to these brokers (its cloud's permissions for Kafka), and its "
                "oauthProvider.* options"
            )
        if str(mechanism).upper() == "OAUTHBEARER":
            client_id = kafka_config.get("sasl.oauthbearer.client.id")
            return AccessError(
                f"could not {what}: authentication with Kafka at {servers} failed (SASL mechanism {mechanism}, "
                f"security.protocol {protocol}){f' as OAuth client {client_id}' if client_id else ''}: {reason}. "
                "Check kafka.sasl.oauthbearer.client.id and kafka.sasl.oauthbearer.client.secret, that "
                "kafka.sasl.oauthbearer.token.endpoint.url is the identity provider's token endpoint, and that the "
                "brokers accept its tokens (their JWKS, expected audience and issuer)"
            )
        username = kafka_config.get("sasl.username")
        return AccessError(
            f"could not {what}: authentication with Kafka at {servers} failed (SASL mechanism {mechanism}, "
            f"security.protocol {protocol})"
            f"{f' as user {username}' if username else ''}: {reason}. Check kafka.sasl.username and "
            "kafka.sasl.password, and that kafka.sasl.mechanism is one the brokers enable"
        )
    alert = TLS_ALERT.search(reason)
    if alert and int(alert.group(1)) in CLIENT_CERTIFICATE_ALERTS:
        certificate = kafka_config.get("ssl.certificate.location")
        presented = (
            f"the client certificate {certificate}" if certificate else "this client, which presented no certificate"
        )
        return AccessError(
            f"could not {what}: the TLS handshake with Kafka at {servers} failed: the brokers refused {presented}: "
            f"{reason}. The brokers require a client certificate signed by a CA they trust: set "
            "kafka.ssl.certificate.location and kafka.ssl.key.location to such a certificate and its key (PEM), with "
            "kafka.ssl.key.password if the key is encrypted"
        )
    return AccessError(
        f"could not {what}: the TLS handshake with Kafka at {servers} failed: {reason}. If the brokers' "
        "certificate cannot be verified, set kafka.ssl.ca.location to the PEM file of the CA that signed it"
    )
