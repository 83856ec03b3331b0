"""Which client errors mean the brokers refused us, and the message that says so (no broker: librdkafka's error
values as its error callback hands them over, with the texts it gives them)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kafkasource.cluster.refusal import is_refusal, refusal_error

SERVERS = "broker-1:9093,broker-2:9093"
# what librdkafka reports when a broker requiring client certificates refuses ours under TLS 1.3
BAD_CERTIFICATE = ("ssl://broker-1:9093/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad "
                   "certificate: SSL alert number 42 (after 0ms in state APIVERSION_QUERY)")


@pytest.mark.parametrize("code, text, refused", [
    (KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed", True),
    (KafkaError._SSL, "SSL handshake failed: certificate verify failed", True),
    (KafkaError._TRANSPORT, BAD_CERTIFICATE, True),
    (KafkaError._TRANSPORT, "Receive failed: error:0A000410:SSL routines::ssl/tls alert handshake failure: "
                            "SSL alert number 40", True),
    (KafkaError._TRANSPORT, "Receive failed: SSL alert number 0", False),  # close_notify: an orderly end
    (KafkaError._TRANSPORT, "Connect to ipv4#127.0.0.1:9093 failed: Connection refused", False),
    (KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down", False),
])
def test_what_counts_as_a_refusal(code, text, refused):
    assert is_refusal(KafkaError(code, text)) is refused


def test_a_refused_client_certificate_names_its_path_and_never_the_key_password():
    config = {"bootstrap.servers": SERVERS, "security.protocol": "SSL", "ssl.certificate.location": "/etc/etl.pem",
              "ssl.key.location": "/etc/etl.key", "ssl.key.password": "k3y-pa55"}

    message = str(refusal_error("list topics", KafkaError(KafkaError._TRANSPORT, BAD_CERTIFICATE), config))

    assert message.startswith(f"could not list topics: the TLS handshake with Kafka at {SERVERS} failed: the brokers "
                              f"refused the client certificate /etc/etl.pem: {BAD_CERTIFICATE}. The brokers require")
    assert "k3y-pa55" not in message


def test_no_client_certificate_is_said_so():
    config = {"bootstrap.servers": SERVERS, "security.protocol": "SSL"}

    message = str(refusal_error("list topics", KafkaError(KafkaError._TRANSPORT, BAD_CERTIFICATE), config))

    assert "the brokers refused this client, which presented no certificate" in message
    assert "set kafka.ssl.certificate.location and kafka.ssl.key.location" in message


def test_another_tls_alert_is_no_client_certificate_refusal():
    error = KafkaError(KafkaError._TRANSPORT, "Receive failed: ssl/tls alert handshake failure: SSL alert number 40")

    message = str(refusal_error("list topics", error, {"bootstrap.servers": SERVERS, "security.protocol": "SSL"}))

    assert f"the TLS handshake with Kafka at {SERVERS} failed: Receive failed: ssl/tls alert handshake" in message
    assert "client certificate" not in message


def test_an_oauth_refusal_names_the_client_and_its_settings_and_masks_the_secret_in_librdkafka_text():
    config = {"bootstrap.servers": SERVERS, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
              "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": "orders-etl",
              "sasl.oauthbearer.client.secret": "s3cr3t-value"}
    # an identity provider that quotes the request back in its error answer
    error = KafkaError(KafkaError._AUTHENTICATION, 'Failed to acquire SASL OAUTHBEARER token: {"error": '
                                                   '"invalid_client", "request": "client_secret=s3cr3t-value"}')

    message = str(refusal_error("list topics", error, config))

    assert message.startswith(f"could not list topics: authentication with Kafka at {SERVERS} failed (SASL mechanism "
                              "OAUTHBEARER, security.protocol SASL_SSL) as OAuth client orders-etl: Failed to acquire "
                              'SASL OAUTHBEARER token: {"error": "invalid_client", "request": "client_secret=*****"}')
    assert "Check kafka.sasl.oauthbearer.client.id and kafka.sasl.oauthbearer.client.secret" in message
    assert "s3cr3t-value" not in message


def test_a_scram_refusal_names_the_user():
    config = {"bootstrap.servers": SERVERS, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.username": "alice", "sasl.password": "pw"}
    error = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: Authentication failed")

    message = str(refusal_error("list topics", error, config))

    assert (f"authentication with Kafka at {SERVERS} failed (SASL mechanism SCRAM-SHA-512, security.protocol "
            "SASL_SSL) as user alice: SASL authentication error") in message
    assert "Check kafka.sasl.username and kafka.sasl.password" in message
