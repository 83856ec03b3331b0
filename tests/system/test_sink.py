"""The sink beside what needs processes of its own: Spark's built-in Kafka sink (a Spark of its own, with its
connector's jars) writes the same records as kafkasource's; a principal a SASL broker denies WRITE is told so,
without its password."""

from __future__ import annotations

import os
import subprocess
import sys

from dev.process import REPO_ROOT, free_port
from tests.support.security_helpers import PASSWORDS, sasl_options
from tests.support.sink_helpers import (
    PARTITIONS,
    expected_records,
    failure_of,
    read_topic,
    sample_rows,
)


def test_the_built_in_kafka_sink_writes_the_same_records(kafka):
    topics = [kafka.create_topic(kafka.unique_name(f"{sink}-{t}"), PARTITIONS)
              for sink in ("builtin", "ours") for t in "abc"]
    result = subprocess.run([sys.executable, "-m", "tests.support.sink_reference_job", kafka.bootstrap_servers,
                             *topics], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
                            env=os.environ.copy())
    assert result.returncode == 0, result.stderr[-5000:]

    builtin_a, builtin_b, builtin_c, ours_a, ours_b, ours_c = (read_topic(kafka, t, PARTITIONS) for t in topics)
    # every column, and the offsets in each partition, alike; the built-in's records are what the DataFrame says
    assert ours_a == builtin_a == expected_records(sample_rows(topics[0], topics[1]), topics[0])
    assert ours_b == builtin_b == expected_records(sample_rows(topics[0], topics[1]), topics[1])
    assert ours_c == builtin_c == expected_records(sample_rows("x", "y"), topics[2], topic_option=True)


def test_a_principal_without_write_on_the_topic_is_told_so_without_its_password(spark, sasl):
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"denied-{os.getpid()}-{free_port()}"
    admin = AdminClient(sasl.client_config())  # kept until its future resolves: a collected client ends it
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    sasl.grant("carol", "TOPIC", topic, "DESCRIBE")
    options = {**sasl_options(sasl, "carol", PASSWORDS["carol"]), "topic": topic}

    # the sink's producers are idempotent by default: the brokers refuse that first, to a principal that may write
    # to no topic at all
    message = failure_of(spark, [("v",)], "value string", options)
    assert (f"the brokers at {sasl.bootstrap_servers} refused this client as user carol an idempotent producer "
            f"(CLUSTER_AUTHORIZATION_FAILED) while writing to topic {topic}: ") in message
    assert (f"grant it WRITE (and DESCRIBE) on topic {topic}, or IDEMPOTENT_WRITE on the cluster; under "
            "deliveryGuarantee at-least-once, kafka.enable.idempotence=false also does without") in message
    assert PASSWORDS["carol"] not in message

    message = failure_of(spark, [("v",)], "value string", {**options, "kafka.enable.idempotence": "false"})
    assert (f"the brokers at {sasl.bootstrap_servers} refused to let this client as user carol write to topic "
            f"{topic} partition 0 (TOPIC_AUTHORIZATION_FAILED). Grant the principal WRITE (and DESCRIBE) on topic "
            f"{topic}, or use credentials (kafka.sasl.username) that have them") in message
    assert PASSWORDS["carol"] not in message
