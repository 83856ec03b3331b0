"""oauthProvider end to end: a token provider named by a string option signs every client of a query in, against a
real broker that takes only OAUTHBEARER tokens it can verify (Kafka's own validator, against the JWKS of an
identity provider the test starts), through a real Spark.

The provider is a module:function of the tests' own (tests/support/token_provider.py), allowed the way a cluster's owner
allows one; the clouds' built-in providers make their tokens from their libraries (tests/unit/test_sign_in_providers.py)
and hand them to the same callback, so the path from provider to broker tested here is theirs too. Each test shows:
- reads on both read paths, with the group's commits;
- writes under every deliveryGuarantee on both write paths;
- a token that expires mid-query, refreshed on the driver and the executors without a record lost or doubled;
- a provider that fails, named with its reason, the secret in its arguments shown nowhere.
"""

from __future__ import annotations

import secrets
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from dev import secure_broker
from dev.oidc import IdentityProvider
from tests.support import token_provider
from tests.support.kafka_helpers import await_condition
from tests.support.query_helpers import available_now_failure, run_to_end, stream
from tests.support.security_helpers import AsAdmin, committed, files_under, holding, rows, topic_with_records
from tests.support.sink_helpers import read_topic, write_batch

CLIENT_ID = "orders-etl"
CLIENT_SECRET = f"client-secret-{secrets.token_hex(10)}"
AUDIENCE = "kafka-sign-in-tests"
QUERY_TIMEOUT_S = 300
# a token lives this long in the refresh test (the provider tells librdkafka half that: tests/support/token_provider.py)
SHORT_LIFETIME_S = 6


@pytest.fixture(scope="module")
def identity_provider():
    provider = IdentityProvider({CLIENT_ID: CLIENT_SECRET}, AUDIENCE)
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def broker(identity_provider):
    started = secure_broker.start_sasl({}, oauth=identity_provider)
    # the token's subject is the principal: it may read, write, commit and run transactions anywhere here
    for resource, operations in {"TOPIC": ("ALL",), "GROUP": ("ALL",), "TRANSACTIONAL_ID": ("ALL",)}.items():
        started.grant(CLIENT_ID, resource, "*", *operations)
    started.grant(CLIENT_ID, "BROKER", "kafka-cluster", "IDEMPOTENT_WRITE")
    yield started
    started.stop()


def signed_in(broker, identity_provider, **arguments: str) -> dict[str, str]:
    """The options that sign a query's clients in with the tests' provider, `arguments` among its own (over
    SASL_PLAINTEXT: the default, SASL_SSL, is what the clouds' brokers take)."""
    return {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.security.protocol": "SASL_PLAINTEXT",
            "oauthProvider": token_provider.NAME, "oauthProvider.tokenUrl": identity_provider.token_url,
            "oauthProvider.clientId": CLIENT_ID, "oauthProvider.clientSecret": CLIENT_SECRET,
            **{f"oauthProvider.{name}": value for name, value in arguments.items()}}


def grants(identity_provider) -> int:
    return identity_provider.requests.count((CLIENT_ID, True))


def test_reads_and_commits_with_the_providers_tokens_and_its_secret_shows_nowhere(spark, broker, identity_provider,
                                                                                   read_path, tmp_path, capsys):
    topic, group = f"signed-read-{secrets.token_hex(4)}", f"signed-group-{secrets.token_hex(4)}"
    expected = topic_with_records(broker, topic)
    granted_before = grants(identity_provider)
    options = {**signed_in(broker, identity_provider), "subscribe": topic, "readPath": read_path,
               "kafka.group.id": group, "kafka.auto.offset.reset": "earliest", "commitMode": "sync"}

    query, collector = run_to_end(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)

    assert rows(collector) == sorted(expected)
    assert committed(broker, group, topic, 2) == {0: 10, 1: 10}
    assert grants(identity_provider) > granted_before  # the provider made the tokens the broker took
    capsys.readouterr()
    stream(spark, options).explain(extended=True)
    plan = capsys.readouterr().out
    progress = "\n".join(p.json for p in query.recentProgress)
    checkpoint = files_under(tmp_path / "ck")
    assert plan.count("== Physical Plan ==") == 1 and f"oauthprovider.clientid={CLIENT_ID}" in plan.lower(), plan
    assert topic in progress and tmp_path / "ck" / "offsets" / "0" in holding(topic, checkpoint)
    assert CLIENT_SECRET not in plan and CLIENT_SECRET not in progress
    assert holding(CLIENT_SECRET, checkpoint) == set()


@pytest.mark.parametrize("guarantee", ["none", "at-least-once", "exactly-once"])
def test_writes_under_every_guarantee_with_the_providers_tokens(spark, broker, identity_provider, write_path,
                                                                guarantee):
    topic = f"signed-write-{secrets.token_hex(4)}"
    topic_with_records(broker, topic, count=0, partitions=2)
    exactly_once = {"transactionalIdPrefix": topic} if guarantee == "exactly-once" else {}
    df = spark.createDataFrame([(f"v{i}".encode(), i % 2) for i in range(20)], "value binary, partition int")

    write_batch(df.coalesce(2), {**signed_in(broker, identity_provider), "topic": topic, "writePath": write_path,
                                 "deliveryGuarantee": guarantee, **exactly_once})

    written = read_topic(AsAdmin(broker), topic, 2, read_committed=True)
    assert sorted((p, v) for p, _o, _k, v, _h in written) == sorted((i % 2, f"v{i}".encode()) for i in range(20))


def copy_while_producing(spark, broker, identity_provider, tmp_path: Path, read_path: str, write_path: str,
                         seconds: float) -> tuple[int, int, float]:
    """A stream copying one topic into another (exactly once), every client signed in with short-lived tokens,
    while records keep arriving for `seconds`; returns (records, tokens granted meanwhile, seconds run) once the
    copy holds every record, each once."""
    source, target = (f"signed-{name}-{secrets.token_hex(4)}" for name in ("in", "out"))
    group = f"signed-copy-{secrets.token_hex(4)}"
    for topic in (source, target):
        topic_with_records(broker, topic, count=0, partitions=2)
    options = signed_in(broker, identity_provider)
    df = stream(spark, {**options, "subscribe": source, "readPath": read_path, "kafka.group.id": group,
                        "kafka.auto.offset.reset": "earliest"})
    writer = df.selectExpr("value", "partition").writeStream.format("kafkasource")
    for name, value in {**options, "topic": target, "writePath": write_path, "deliveryGuarantee": "exactly-once",
                        "transactionalIdPrefix": target, "checkpointLocation": str(tmp_path / "ck")}.items():
        writer = writer.option(name, value)
    producer = Producer(broker.client_config())
    produced: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:
        while not stop.wait(0.25):
            value = b"r%d" % len(produced)
            producer.produce(source, value=value, partition=len(produced) % 2)
            produced.append(value)
            producer.poll(0)

    granted_before, started = grants(identity_provider), time.monotonic()
    query = writer.trigger(processingTime="1 second").start()
    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    try:
        time.sleep(seconds)  # the length of the run: the tokens must be replaced within it, more than once
        stop.set()
        feeder.join(10)
        assert producer.flush(30) == 0
        await_condition("the copy to hold every record",
                        lambda: len(read_topic(AsAdmin(broker), target, 2, read_committed=True)) >= len(produced),
                        query, timeout=120)
        await_condition("the group's commits at the log end",
                        lambda: committed(broker, group, source, 2) == {0: (len(produced) + 1) // 2,
                                                                       1: len(produced) // 2}, query, timeout=60)
    finally:
        query.stop()
    copied = sorted(v for _p, _o, _k, v, _h in read_topic(AsAdmin(broker), target, 2, read_committed=True))
    assert copied == sorted(produced)
    return len(produced), grants(identity_provider) - granted_before, time.monotonic() - started


def test_a_token_that_expires_mid_query_is_replaced_and_nothing_is_lost(spark, broker, identity_provider, read_path,
                                                                       tmp_path, capsys):
    """Read and written on the same path: native (the extension's refresh callback) or python (confluent-kafka's
    oauth_cb)."""
    path = read_path
    identity_provider.lifetime_s = SHORT_LIFETIME_S
    try:
        records, tokens, took = copy_while_producing(spark, broker, identity_provider, tmp_path, path, path, 15)
    finally:
        identity_provider.lifetime_s = 3600
    with capsys.disabled():
        print(f"\n[sign-in] {path} paths: {records} records copied exactly once in {took:.0f} s under "
              f"{SHORT_LIFETIME_S} s tokens; {tokens} tokens granted meanwhile")
    # every process with clients (the driver's, the executors' Python workers) replaced its token as it aged: a
    # token lasts SHORT_LIFETIME_S, and the broker closes a connection whose token expired
    assert tokens >= took / SHORT_LIFETIME_S, (tokens, took)


def test_a_provider_that_fails_is_named_with_its_reason_before_any_data_moves(spark, broker, identity_provider,
                                                                              tmp_path):
    reason = f"no credentials found for {CLIENT_ID}"
    options = {**signed_in(broker, identity_provider, fail=f"{reason} (secret {CLIENT_SECRET})"),
               "subscribe": "anything", "startingOffsets": "earliest"}

    message = available_now_failure(spark, tmp_path / "ck", options, QUERY_TIMEOUT_S)

    assert (f"oauthProvider {token_provider.NAME} could not make a token: RuntimeError: {reason} (secret *****)"
            in message), message
    assert CLIENT_SECRET not in message
    with pytest.raises(Exception) as failed:  # on the driver, before any task starts
        write_batch(spark.createDataFrame([("v",)], "value string"),
                    {**signed_in(broker, identity_provider, fail=reason), "topic": "anything"})
    assert f"oauthProvider {token_provider.NAME} could not make a token: RuntimeError: {reason}" in str(failed.value)
