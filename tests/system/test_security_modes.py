"""The security modes users run, each against a real broker of its own (one CA made in the test signs every
broker and client certificate), read through Spark on both read paths:

- SASL_SSL: SCRAM-SHA-512 over TLS, with ACLs;
- mutual TLS: the broker requires a client certificate its CA signed (ssl.client.auth=required); the client
  gives a PEM certificate and an encrypted PEM key (kafka.ssl.key.password);
- OAUTHBEARER with OIDC: librdkafka fetches a token from an identity provider started by the test (client
  credentials grant, RS256 JWTs), and Kafka's own validator checks it against that provider's JWKS and audience;
  the principal is the token's subject, granted its ACLs like any user.

A read checks every row and the group's committed offsets; a refusal checks the text the user sees, which
names the brokers and what was presented (user, OAuth client, certificate path) and never a secret.
"""

from __future__ import annotations

import secrets
import tempfile
import time
from pathlib import Path

import pytest

from dev import secure_broker
from dev.oidc import IdentityProvider
from kafkasource.errors import OptionError
from kafkasource.options import parse_options
from tests.support.query_helpers import available_now_failure, run_to_end, stream
from tests.support.security_helpers import AsAdmin, committed, files_under, holding, rows, topic_with_records
from tests.support.sink_helpers import PARTITIONS, expected_records, read_topic, sample_frame, sample_rows, write_batch

PASSWORDS = {user: f"{user}-pw-{secrets.token_hex(10)}" for user in ("admin", "alice")}
WRONG_PASSWORD = f"wrong-pw-{secrets.token_hex(10)}"
KEY_PASSWORD = f"key-pw-{secrets.token_hex(10)}"
CLIENT_ID = "orders-etl"
CLIENT_SECRET = f"client-secret-{secrets.token_hex(10)}"
WRONG_CLIENT_SECRET = f"wrong-secret-{secrets.token_hex(10)}"
AUDIENCE = "kafka-test-cluster"
QUERY_TIMEOUT_S = 300
# a refusal fails the query at once; were it taken for an unreachable broker, the query would fail only after this
# long, with "did not answer" instead of the refusal the tests assert
POLL_TIMEOUT_MS = "120000"


@pytest.fixture(scope="module")
def certificates():
    return secure_broker.make_certificates(Path(tempfile.mkdtemp(prefix="kafkasource-certs-")))


def read_and_commit(spark, broker, checkpoint: Path, principal: str | None, credentials: dict[str, str],
                    read_path: str, topic_prefix: str):
    """A new topic of 20 records, which `principal` is granted READ on with its group (on a broker with ACLs); an
    AvailableNow query with `credentials` run to its end; its rows and the group's commits asserted. Returns
    (query, topic, options)."""
    topic, group = f"{topic_prefix}-{secrets.token_hex(4)}", f"{topic_prefix}-group-{secrets.token_hex(4)}"
    expected = topic_with_records(broker, topic)
    if principal is not None:
        broker.grant(principal, "TOPIC", topic, "READ")
        broker.grant(principal, "GROUP", group, "READ")
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, **credentials, "subscribe": topic,
               "readPath": read_path, "commitMode": "sync", "kafka.group.id": group,
               "kafka.auto.offset.reset": "earliest", "kafkaConsumer.pollTimeoutMs": POLL_TIMEOUT_MS}

    query, collector = run_to_end(spark, checkpoint, options, QUERY_TIMEOUT_S)

    assert rows(collector) == sorted(expected)
    assert committed(broker, group, topic, 2) == {0: 10, 1: 10}
    return query, topic, options


def found_in(message: str, *texts: str) -> set[str]:
    """Which of `texts` the message holds: one search for what must be there and what must not."""
    return {text for text in texts if text in message}


def refusal(spark, broker, checkpoint: Path, credentials: dict[str, str]) -> str:
    """The error of an AvailableNow query with `credentials`, which the broker refuses."""
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, **credentials, "subscribe": "anything",
               "startingOffsets": "earliest", "kafkaConsumer.pollTimeoutMs": POLL_TIMEOUT_MS}
    return available_now_failure(spark, checkpoint, options, QUERY_TIMEOUT_S)


def write_and_read_back(spark, broker, principal: str | None, credentials: dict[str, str], topic_prefix: str) -> None:
    """A batch write of the sink tests' sample (keys and null keys, headers, chosen and hashed partitions) with
    `credentials` into a new topic, which `principal` is granted WRITE on (on a broker with ACLs); what the topic
    holds, read back as the broker's admin, asserted record for record."""
    topic = f"{topic_prefix}-{secrets.token_hex(4)}"
    topic_with_records(broker, topic, count=0, partitions=PARTITIONS)
    if principal is not None:
        broker.grant(principal, "TOPIC", topic, "WRITE", "DESCRIBE")

    write_batch(sample_frame(spark, topic, topic), {"kafka.bootstrap.servers": broker.bootstrap_servers, **credentials})

    assert read_topic(AsAdmin(broker), topic, PARTITIONS) == expected_records(sample_rows(topic, topic), topic)


def refused_write(spark, broker, credentials: dict[str, str], **options: str) -> str:
    """The error of a batch write with `credentials` (and `options`), which the broker refuses."""
    df = spark.createDataFrame([("v",)], "value string")
    with pytest.raises(Exception) as failed:
        write_batch(df, {"kafka.bootstrap.servers": broker.bootstrap_servers, **credentials, "topic": "anything",
                         **options})
    return str(failed.value)


# -- SASL_SSL: SCRAM-SHA-512 over TLS ---------------------------------------------------------------------------

@pytest.fixture(scope="class")
def sasl_ssl(certificates):
    broker = secure_broker.start_sasl(PASSWORDS, certificates)
    yield broker
    broker.stop()


def scram_over_tls(certificates, password: str) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_SSL", "kafka.ssl.ca.location": str(certificates.ca_pem),
            "kafka.sasl.mechanism": secure_broker.MECHANISM, "kafka.sasl.username": "alice",
            "kafka.sasl.password": password}


class TestSaslSsl:
    def test_reads_and_commits_with_the_right_password_and_ca(self, spark, sasl_ssl, certificates, read_path,
                                                               tmp_path):
        read_and_commit(spark, sasl_ssl, tmp_path / "ck", "alice", scram_over_tls(certificates, PASSWORDS["alice"]),
                        read_path, "sasl-ssl")

    def test_a_wrong_password_fails_naming_the_mechanism_and_sasl_ssl(self, spark, sasl_ssl, certificates, tmp_path):
        message = refusal(spark, sasl_ssl, tmp_path / "ck", scram_over_tls(certificates, WRONG_PASSWORD))

        assert (f"authentication with Kafka at {sasl_ssl.bootstrap_servers} failed (SASL mechanism SCRAM-SHA-512, "
                "security.protocol SASL_SSL)") in message, message
        assert "Check kafka.sasl.username and kafka.sasl.password" in message
        assert found_in(message, "alice", sasl_ssl.bootstrap_servers, WRONG_PASSWORD, PASSWORDS["alice"]) == {
            "alice", sasl_ssl.bootstrap_servers}

    def test_the_sink_writes_with_the_right_password_and_a_wrong_one_is_refused_without_it(self, spark, sasl_ssl,
                                                                                          certificates):
        """The refusal is told at once under exactly-once too, whose transactional producer would otherwise wait out
        init_transactions() (the transaction timeout, 60 s, plus 30 s) and then only say it timed out."""
        write_and_read_back(spark, sasl_ssl, "alice", scram_over_tls(certificates, PASSWORDS["alice"]), "sink-sasl-ssl")

        for guarantee in ({}, {"deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "refused"}):
            started = time.monotonic()
            message = refused_write(spark, sasl_ssl, scram_over_tls(certificates, WRONG_PASSWORD), **guarantee)
            took = time.monotonic() - started

            assert (f"could not write to topic anything: authentication with Kafka at {sasl_ssl.bootstrap_servers} "
                    "failed (SASL mechanism SCRAM-SHA-512, security.protocol SASL_SSL) as user alice") in message, (
                guarantee, message)
            assert "Check kafka.sasl.username and kafka.sasl.password" in message
            assert found_in(message, "alice", sasl_ssl.bootstrap_servers, WRONG_PASSWORD, PASSWORDS["alice"]) == {
                "alice", sasl_ssl.bootstrap_servers}
            assert took < 60, (guarantee, took)


# -- mutual TLS ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="class")
def client_certificates(certificates, tmp_path_factory):
    """Certificates the broker's CA signed (the admin's, with a plain key; alice's, with an encrypted one), and
    mallory's, which another CA signed."""
    directory = tmp_path_factory.mktemp("client-certs")
    other_ca = secure_broker.make_ca(directory / "other", "other-ca")
    return {"admin": secure_broker.make_client_certificate(directory, "kafka-admin", certificates.ca),
            "alice": secure_broker.make_client_certificate(directory, "alice", certificates.ca, KEY_PASSWORD),
            "mallory": secure_broker.make_client_certificate(directory, "mallory", other_ca, KEY_PASSWORD)}


@pytest.fixture(scope="class")
def mutual_tls(certificates, client_certificates):
    broker = secure_broker.start_ssl(certificates, client=client_certificates["admin"])
    yield broker
    broker.stop()


def presenting(certificates, client: secure_broker.ClientCertificate | None) -> dict[str, str]:
    """Options for TLS with the broker's CA, presenting `client` (or no certificate)."""
    options = {"kafka.security.protocol": "SSL", "kafka.ssl.ca.location": str(certificates.ca_pem)}
    return {**options, **{f"kafka.{name}": value for name, value in (client.settings() if client else {}).items()}}


class TestMutualTls:
    def test_reads_and_commits_with_a_client_certificate_the_ca_signed(self, spark, mutual_tls, certificates,
                                                                       client_certificates, read_path, tmp_path):
        read_and_commit(spark, mutual_tls, tmp_path / "ck", None,
                        presenting(certificates, client_certificates["alice"]), read_path, "mtls")

    @pytest.mark.parametrize("client", ["mallory", None], ids=["signed-by-another-ca", "no-certificate"])
    def test_a_client_certificate_the_brokers_do_not_trust_is_refused(self, spark, mutual_tls, certificates,
                                                                      client_certificates, client, tmp_path):
        certificate = client_certificates[client] if client else None
        message = refusal(spark, mutual_tls, tmp_path / "ck", presenting(certificates, certificate))

        refused = f"the client certificate {certificate.certificate}" if certificate else \
            "this client, which presented no certificate"
        assert (f"the TLS handshake with Kafka at {mutual_tls.bootstrap_servers} failed: the brokers refused "
                f"{refused}: ") in message, message
        assert ("The brokers require a client certificate signed by a CA they trust: set kafka.ssl.certificate."
                "location and kafka.ssl.key.location") in message
        shown = {mutual_tls.bootstrap_servers, *([str(certificate.certificate)] if certificate else [])}
        assert found_in(message, *shown, KEY_PASSWORD) == shown

    def test_the_sink_writes_with_a_client_certificate_and_an_untrusted_one_is_refused(self, spark, mutual_tls,
                                                                                       certificates,
                                                                                       client_certificates):
        write_and_read_back(spark, mutual_tls, None, presenting(certificates, client_certificates["alice"]),
                            "sink-mtls")

        mallory = client_certificates["mallory"]
        message = refused_write(spark, mutual_tls, presenting(certificates, mallory))

        assert (f"could not write to topic anything: the TLS handshake with Kafka at {mutual_tls.bootstrap_servers} "
                f"failed: the brokers refused the client certificate {mallory.certificate}: ") in message, message
        shown = {mutual_tls.bootstrap_servers, str(mallory.certificate)}
        assert found_in(message, *shown, KEY_PASSWORD) == shown

    def test_a_wrong_key_password_is_refused_at_load_naming_the_key_and_not_the_password(self, client_certificates):
        alice = client_certificates["alice"]
        options = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.security.protocol": "SSL",
                   "kafka.ssl.certificate.location": str(alice.certificate), "kafka.ssl.key.location": str(alice.key),
                   "kafka.ssl.key.password": WRONG_PASSWORD}

        with pytest.raises(OptionError) as raised:
            parse_options(options)

        message = str(raised.value)
        assert f"librdkafka rejected kafka.ssl.key.location='{alice.key}': " in message, message
        assert "ssl.key.location failed" in message
        assert found_in(message, str(alice.key), WRONG_PASSWORD, KEY_PASSWORD) == {str(alice.key)}


# -- OAUTHBEARER with OIDC ------------------------------------------------------------------------------------------

@pytest.fixture(scope="class")
def identity_provider():
    provider = IdentityProvider({CLIENT_ID: CLIENT_SECRET}, AUDIENCE)
    yield provider
    provider.stop()


@pytest.fixture(scope="class")
def oauth(certificates, identity_provider):
    broker = secure_broker.start_sasl({}, certificates, oauth=identity_provider)
    yield broker
    broker.stop()


def oidc(certificates, identity_provider: IdentityProvider, secret: str) -> dict[str, str]:
    return {"kafka.security.protocol": "SASL_SSL", "kafka.ssl.ca.location": str(certificates.ca_pem),
            "kafka.sasl.mechanism": "OAUTHBEARER", "kafka.sasl.oauthbearer.method": "oidc",
            "kafka.sasl.oauthbearer.client.id": CLIENT_ID, "kafka.sasl.oauthbearer.client.secret": secret,
            "kafka.sasl.oauthbearer.token.endpoint.url": identity_provider.token_url,
            "kafka.sasl.oauthbearer.scope": "kafka"}


class TestOAuthBearer:
    def test_reads_and_commits_with_a_token_and_the_secret_shows_nowhere(self, spark, oauth, certificates,
                                                                          identity_provider, read_path, tmp_path,
                                                                          capsys):
        granted_before = identity_provider.requests.count((CLIENT_ID, True))
        query, topic, options = read_and_commit(spark, oauth, tmp_path / "ck", CLIENT_ID,
                                                oidc(certificates, identity_provider, CLIENT_SECRET), read_path,
                                                "oauth")
        capsys.readouterr()
        stream(spark, options).explain(extended=True)
        query.explain(extended=True)
        plan = capsys.readouterr().out

        # the driver's clients and the executors' consumers each fetched a token of their own
        assert identity_provider.requests.count((CLIENT_ID, True)) >= granted_before + 2
        assert plan.count("== Physical Plan ==") == 2 and f"kafka.sasl.oauthbearer.client.id={CLIENT_ID}" in plan, plan
        progress = "\n".join(p.json for p in query.recentProgress)
        assert topic in progress
        checkpoint = files_under(tmp_path / "ck")
        assert tmp_path / "ck" / "offsets" / "0" in holding(topic, checkpoint)
        for where, text in [("the query plan", plan), ("the query progress", progress)]:
            assert CLIENT_SECRET not in text, where
        assert holding(CLIENT_SECRET, checkpoint) == set()

    def test_a_wrong_client_secret_fails_naming_the_client_and_not_the_secret(self, spark, oauth, certificates,
                                                                              identity_provider, tmp_path):
        message = refusal(spark, oauth, tmp_path / "ck", oidc(certificates, identity_provider, WRONG_CLIENT_SECRET))

        assert (f"authentication with Kafka at {oauth.bootstrap_servers} failed (SASL mechanism OAUTHBEARER, "
                f"security.protocol SASL_SSL) as OAuth client {CLIENT_ID}: Failed to acquire SASL OAUTHBEARER "
                "token") in message, message
        assert "Check kafka.sasl.oauthbearer.client.id and kafka.sasl.oauthbearer.client.secret" in message
        assert (CLIENT_ID, False) in identity_provider.requests  # the provider refused it, not the broker
        assert found_in(message, CLIENT_ID, oauth.bootstrap_servers, WRONG_CLIENT_SECRET, CLIENT_SECRET) == {
            CLIENT_ID, oauth.bootstrap_servers}

    def test_the_sink_writes_with_a_token_and_a_wrong_client_secret_is_refused_without_it(self, spark, oauth,
                                                                                         certificates,
                                                                                         identity_provider):
        write_and_read_back(spark, oauth, CLIENT_ID, oidc(certificates, identity_provider, CLIENT_SECRET), "sink-oauth")

        message = refused_write(spark, oauth, oidc(certificates, identity_provider, WRONG_CLIENT_SECRET))

        assert (f"could not write to topic anything: authentication with Kafka at {oauth.bootstrap_servers} failed "
                f"(SASL mechanism OAUTHBEARER, security.protocol SASL_SSL) as OAuth client {CLIENT_ID}: Failed to "
                "acquire SASL OAUTHBEARER token") in message, message
        assert found_in(message, CLIENT_ID, oauth.bootstrap_servers, WRONG_CLIENT_SECRET, CLIENT_SECRET) == {
            CLIENT_ID, oauth.bootstrap_servers}
