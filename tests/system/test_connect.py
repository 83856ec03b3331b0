"""kafkasource works over Spark Connect as in classic Spark: the format resolves on the server, batch and
streaming reads return exact rows, commits and lag work, and our error messages reach the client intact.
A real Connect server process from pyspark's own launcher, the client in this process over
sc://127.0.0.1:<port>, the real broker.

The server's Python workers run this interpreter, where kafkasource is installed; the client side
only builds plans. Connect sessions come from pyspark's Connect builder directly: the generic
`SparkSession.builder.remote(...)` marks the whole process as a Connect client (an environment
variable), after which no classic SparkContext could start in the same pytest run.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid

import pytest
from pyspark.errors import PySparkException, StreamingQueryException
from pyspark.sql.connect.session import SparkSession as ConnectSession

import kafkasource
from dev import connect as local_connect
from dev.process import free_port
from kafkasource.metrics.progress import Lag, LagListener, input_rows, lag_from_progress
from tests.support.job_helpers import REPO_ROOT
from tests.support.kafka_helpers import Record, await_condition, described_group
from tests.support.query_helpers import QUERY_TIMEOUT_S, batch, stream
from tests.support.sink_helpers import (
    DIGEST,
    PARTITIONS,
    batch_markers,
    finish_available_now,
    read_topic,
    sample_frame,
    sample_rows,
    without_offsets,
    write_batch,
)
from tests.support.sink_helpers import expected_records as sink_expected

pytestmark = pytest.mark.spark  # every test here talks to a Spark Connect server
log = logging.getLogger(__name__)

SECRET = f"s3cr3t-{uuid.uuid4().hex}"  # never to appear in any message


@pytest.fixture(scope="module")
def connect_server(request, tmp_path_factory):
    started = time.monotonic()
    server = local_connect.start(log_dir=tmp_path_factory.mktemp("connect-server"))
    message = f"Spark Connect server up on {server.remote} in {time.monotonic() - started:.1f} s"
    log.info(message)
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():  # shown in the run's output, not captured
        print(f"\n{message}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def connect(connect_server):
    """A fresh Connect session per test: registrations and temporary views never carry over."""
    session = ConnectSession.builder.remote(connect_server.remote).create()
    try:
        yield session
    finally:
        session.stop()


def produce_sample(kafka, topic) -> list[Record]:
    return kafka.produce(topic, [Record(i % 3, f"k{i}".encode() if i != 4 else None, f"v{i}".encode(),
                                        headers=(("trace", f"t{i}".encode()),) if i % 2 else ())
                                 for i in range(9)])


def as_records(rows) -> list[Record]:
    return sorted((Record(r.partition, r.key, r.value, tuple((h.key, h.value) for h in r.headers or ()),
                          topic=r.topic, offset=r.offset) for r in rows),
                  key=lambda r: (r.partition, r.offset))


def expected_records(produced: list[Record]) -> list[Record]:
    return sorted((Record(r.partition, r.key, r.value, r.headers, topic=r.topic, offset=r.offset) for r in produced),
                  key=lambda r: (r.partition, r.offset))


def test_connect_session_leaves_classic_pyspark_alone(connect):
    from pyspark.sql.utils import is_remote

    assert type(connect).__module__ == "pyspark.sql.connect.session"
    assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ and not is_remote()


def test_format_resolves_without_register_and_batch_read_returns_exact_rows(connect, kafka, topic):
    produced = produce_sample(kafka, topic)

    rows = batch(connect, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
                           "includeHeaders": "true"}).collect()

    assert as_records(rows) == expected_records(produced)
    assert [r.headers for r in rows if r.offset == 0 and r.partition == 0] == [None]  # none: null, as format("kafka")
    assert {r.timestampType for r in rows} == {0}


def test_register_on_a_connect_session(connect, kafka, topic):
    produced = kafka.produce_values(topic, 6, partitions=3)

    kafkasource.register(connect)  # ships the class to the server; the server imports it from its own install
    rows = batch(connect, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
                           "startingOffsets": json.dumps({topic: {"0": 1, "1": -2, "2": -2}})}).collect()

    assert sorted((r.partition, r.offset, r.value) for r in rows) == sorted(
        (r.partition, r.offset, r.value) for r in produced if (r.partition, r.offset) != (0, 0))


def test_stream_commits_bounds_batches_and_reports_lag(connect, kafka, kafka_broker, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("connect-stream"), partitions=3)
    kafka.produce_values(topic, 30, partitions=3)
    group = kafka.unique_name("connect-group")
    table = f"drained_{uuid.uuid4().hex[:8]}"
    listener = LagListener()  # a client-side listener: Connect streams the events to this process
    connect.streams.addListener(listener)
    try:
        query = (stream(connect, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.group.id": group,
                                  "kafka.auto.offset.reset": "earliest", "subscribe": topic,
                                  "maxOffsetsPerTrigger": 12})
                 .writeStream.format("memory").queryName(table)  # foreachBatch would run on the server
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert not query.isActive, "AvailableNow run did not finish"
        assert query.exception() is None
        await_condition("the listener to see the last batch",
                        lambda: listener.latest.get(str(query.id)) == Lag({(topic, p): 0 for p in range(3)}),
                        timeout=60)
    finally:
        connect.streams.removeListener(listener)

    rows = connect.table(table).select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(p, o) for p in range(3) for o in range(10)]

    progress = [p for p in query.recentProgress if input_rows(p) > 0]
    assert [input_rows(p) for p in progress] == [12, 12, 6]  # maxOffsetsPerTrigger bounds every batch
    assert progress[0]["numInputRows"] is None  # the shape Connect delivers, which input_rows reads through
    assert lag_from_progress(progress[0]) == Lag({(topic, p): 6 for p in range(3)})
    assert lag_from_progress(query.lastProgress) == Lag({(topic, p): 0 for p in range(3)})

    assert described_group(kafka_broker, group) == [(0, 10, 10, 0), (1, 10, 10, 0), (2, 10, 10, 0)]


def test_a_processing_time_stream_reads_bounded_batches_and_commits_its_group_on_every_version(
        connect, kafka, tmp_path):
    """What a Connect stream does on every pyspark from 4.0 on (the one above needs 4.2's AvailableNow and lag): batches
    of at most maxOffsetsPerTrigger, every record once, and the group committed to the end once Spark recorded the
    last batch complete (at the next trigger)."""
    topic = kafka.create_topic(kafka.unique_name("connect-trickle"), partitions=2)
    kafka.produce_values(topic, 30, partitions=2)
    group = kafka.unique_name("connect-trickle-group")
    table = f"trickled_{uuid.uuid4().hex[:8]}"
    query = (stream(connect, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "kafka.group.id": group,
                              "kafka.auto.offset.reset": "earliest", "subscribe": topic, "maxOffsetsPerTrigger": 12})
             .writeStream.format("memory").queryName(table)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="0 seconds").start())
    try:
        await_condition("every record in the table", lambda: connect.table(table).count() == 30, query,
                        timeout=QUERY_TIMEOUT_S)
        await_condition("the group's commit of the last batch",
                        lambda: kafka.committed(group, topic, 2) == {0: 15, 1: 15}, query, timeout=QUERY_TIMEOUT_S)
    finally:
        query.stop()

    rows = connect.table(table).select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == [(p, o) for p in range(2) for o in range(15)]
    assert [n for n in (input_rows(p) for p in query.recentProgress) if n] == [12, 12, 6]


def test_option_error_reaches_the_client_with_our_message(connect, kafka, topic, tmp_path):
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic, "startingOffsets": "bogus",
               "kafka.sasl.password": SECRET}
    expected = ("kafkasource.errors.OptionError: option startingOffsets must be earliest, latest, committed, "
                "or JSON like {\"orders\": {\"0\": 23}}; got 'bogus'")

    with pytest.raises(PySparkException) as batch_error:
        batch(connect, options).collect()
    df = stream(connect, options)  # lazy over Connect: the server sees the plan at start()
    with pytest.raises(PySparkException) as stream_error:
        df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck")).start()

    for raised in (batch_error, stream_error):
        assert expected in str(raised.value)
        assert SECRET not in str(raised.value)


def test_the_sink_writes_a_batch_and_an_exactly_once_stream_over_connect(connect, kafka, tmp_path):
    """df.write and df.writeStream format("kafkasource") from a Connect client, with no jar on the server: the
    batch lands the sample's exact records where its columns say; an exactly-once AvailableNow copy of a topic
    lands every record once for read_committed consumers, and each task's batch marker holds the query's batch."""
    topic_a = kafka.create_topic(kafka.unique_name("connect-sink-a"), PARTITIONS)
    topic_b = kafka.create_topic(kafka.unique_name("connect-sink-b"), PARTITIONS)

    write_batch(sample_frame(connect, topic_a, topic_b), {"kafka.bootstrap.servers": kafka.bootstrap_servers})

    rows = sample_rows(topic_a, topic_b)
    assert read_topic(kafka, topic_a, PARTITIONS) == sink_expected(rows, topic_a)
    assert read_topic(kafka, topic_b, PARTITIONS) == sink_expected(rows, topic_b)

    source = kafka.create_topic(kafka.unique_name("connect-copy-in"), PARTITIONS)
    sink = kafka.create_topic(kafka.unique_name("connect-copy-out"), PARTITIONS)
    produced = kafka.produce(source, [Record(i % PARTITIONS, None if i % 5 == 0 else f"k{i}".encode(),
                                             f"v{i}".encode(), (("n", f"{i}".encode()),) if i % 2 else ())
                                      for i in range(15)])
    prefix = kafka.unique_name("connect-copy")
    df = stream(connect, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": source,
                          "startingOffsets": "earliest", "includeHeaders": "true"})
    query = (df.selectExpr("key", "value", "headers", "partition").writeStream.format("kafkasource")
             .option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", sink)
             .option("deliveryGuarantee", "exactly-once").option("transactionalIdPrefix", prefix)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    finish_available_now(query)

    # one batch (0), one task per source partition, each naming its partition: the copy keeps every position's
    # record in order (transaction markers take offsets of their own, so offsets are compared without them)
    copied = [(r.partition, r.key, r.value, r.headers) for r in sorted(produced, key=lambda r: (r.partition, r.offset))]
    assert without_offsets(read_topic(kafka, sink, PARTITIONS, read_committed=True)) == copied
    assert batch_markers(kafka, prefix, sink, PARTITIONS) == [(1, {
        "kind": "kafkasource-sink-marker", "queryId": str(query.id), "batchId": 0, "partition": task,
        "records": 5, "digest": DIGEST}) for task in range(PARTITIONS)]


def test_a_sink_option_error_reaches_the_client_with_our_message(connect, kafka, topic, tmp_path):
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": topic,
               "deliveryGuarantee": "exactly-once", "kafka.sasl.password": SECRET}
    expected = ("kafkasource.errors.OptionError: deliveryGuarantee=exactly-once needs the option "
                "transactionalIdPrefix: each Spark task writes in a Kafka transaction whose transactional.id is "
                "derived from it")
    df = connect.createDataFrame([("v",)], "value string")

    with pytest.raises(PySparkException) as batch_error:
        write_batch(df, options)
    writer = connect.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value") \
        .writeStream.format("kafkasource")
    for name, value in options.items():
        writer = writer.option(name, value)
    query = writer.option("checkpointLocation", str(tmp_path / "ck")).start()
    try:  # Spark builds a stream's writer when its first batch starts
        with pytest.raises(StreamingQueryException) as stream_error:
            query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()

    for raised in (batch_error, stream_error):
        assert expected in str(raised.value), str(raised.value)
        assert SECRET not in str(raised.value)
    assert read_topic(kafka, topic, PARTITIONS) == []


def test_unreachable_broker_reaches_the_client_with_our_message(connect, tmp_path):
    servers = f"127.0.0.1:{free_port()}"
    options = {"kafka.bootstrap.servers": servers, "subscribe": "t", "kafkaConsumer.pollTimeoutMs": 3000,
               "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
               "kafka.sasl.username": "someone", "kafka.sasl.password": SECRET}
    expected = (f"kafkasource.errors.BrokerUnavailableError: could not list topics: Kafka at {servers} did not "
                f"answer within 3000 ms (kafkaConsumer.pollTimeoutMs)")

    with pytest.raises(PySparkException) as batch_error:
        batch(connect, options).collect()
    query = (stream(connect, options).writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    try:
        with pytest.raises(StreamingQueryException) as stream_error:
            query.awaitTermination(120)
    finally:
        query.stop()

    for raised in (batch_error, stream_error):
        assert expected in str(raised.value)
        assert SECRET not in str(raised.value)
    assert expected in str(query.exception())


def test_example_reads_kafka_over_connect(connect_server, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("connect-example"), partitions=3)
    kafka.produce_values(topic, 31, partitions=3)
    group = kafka.unique_name("connect-example-group")
    kafka.commit(group, {(topic, 0): 5})

    # its own process, as a user runs it: the generic builder there marks that process as a Connect client
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "connect_read.py"), "--remote", connect_server.remote,
         "--bootstrap-servers", kafka.bootstrap_servers, "--topic", topic, "--group", group,
         "--checkpoint", str(tmp_path / "ck")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)

    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        f"{topic}: 3 partitions with records, read over {connect_server.remote}",
        "partition 0: offsets 0..10 (11 records)",
        "partition 1: offsets 0..9 (10 records)",
        "partition 2: offsets 0..9 (10 records)",
        f"group {group}: read 26 records past its committed offsets, and committed the end",
    ]
    assert kafka.committed(group, topic, 3) == {0: 11, 1: 10, 2: 10}


def test_ingest_job_over_connect_reports_its_rate_metrics_and_commits(connect_server, kafka, tmp_path):
    from tests.support.job_helpers import write_config
    from tests.support.metrics_helpers import by_partition, parse

    topic = kafka.create_topic(kafka.unique_name("connect-ingest"), partitions=3)
    group = kafka.unique_name("connect-ingest-group")
    kafka.produce_values(topic, 30, partitions=3)
    textfile = tmp_path / "ingest.prom"
    config = write_config(tmp_path / "ingest.toml", kafka.bootstrap_servers, topic, group, tmp_path,
                          extra_source="maxOffsetsPerTrigger = 12")
    with open(config, "a") as f:
        f.write(f'[metrics]\ntextfile = "{textfile}"\n')

    # the job's own process, as a user runs it with --remote (the client side needs no Spark of its own)
    result = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "ingest.py"), "--config", str(config),
                             "--remote", connect_server.remote],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})

    assert result.returncode == 0, result.stderr[-3000:]
    batches = [line.split("kafkasource.jobs: ")[1] for line in result.stderr.splitlines()
               if "kafkasource.jobs: batch" in line]
    assert [line.split(",")[0] for line in batches] == ["batch 0: 12 rows", "batch 1: 12 rows", "batch 2: 6 rows"]
    rates = [float(line.split(", ")[1].split(" ")[0].replace(",", "")) for line in batches]
    assert all(rate > 0 for rate in rates), batches  # computed from rows and the trigger's duration, as classic
    assert kafka.committed(group, topic, 3) == {0: 10, 1: 10, 2: 10}
    found = parse(textfile.read_text())  # progress through the client-side listener, offsets from the brokers
    metric_rate = list(found["kafkasource_query_rows_per_second"].values())[0]
    shown = f"{metric_rate:,.0f}" if metric_rate >= 100 else f"{metric_rate:.2g}"
    assert f"batch 2: 6 rows, {shown} rows/s" in batches[-1]  # the log line's figure is the exported one
    assert by_partition(found["kafkasource_partition_offset"]) == {0: 10, 1: 10, 2: 10}
    assert by_partition(found["kafkasource_group_committed_offset"]) == {0: 10, 1: 10, 2: 10}
    assert list(found["kafkasource_query_input_rows_total"].values()) == [30]
    # commit outcomes travel only within one machine's classic Spark: the server's commits do not report here
    assert "kafkasource_commits_total" not in found
    assert "# TYPE kafkasource_commits_total counter" in textfile.read_text()


def test_avro_values_decode_over_connect_with_no_jar_on_the_server(connect, kafka, schema_registry, tmp_path):
    """valueFormat=avro over Connect: the reader schema is fetched where the server defines the read, the records
    are decoded by the server's Python workers; a batch read and a stream (into a memory table) give the same
    typed rows."""
    from tests.support.registry_helpers import avro_serializer, encode, produce_payloads

    topic = kafka.create_topic(kafka.unique_name("connect-avro"), partitions=1)
    schema = {"type": "record", "name": "Reading", "fields": [
        {"name": "sensor", "type": "string"}, {"name": "celsius", "type": ["null", "double"], "default": None},
        {"name": "tags", "type": {"type": "map", "values": "string"}}]}
    serializer = avro_serializer(schema_registry, schema)
    values = [{"sensor": f"s{i}", "celsius": None if i == 2 else i / 2, "tags": {"room": f"r{i}"}} for i in range(4)]
    produce_payloads(kafka, topic, [encode(serializer, topic, value) for value in values])
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
               "startingOffsets": "earliest", "valueFormat": "avro", "schema.registry.url": schema_registry}

    batch_rows = batch(connect, options).orderBy("offset").select("value").collect()
    table = f"avro_{uuid.uuid4().hex[:8]}"
    query = (stream(connect, options).writeStream.format("memory").queryName(table)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert not query.isActive and query.exception() is None
    stream_rows = connect.table(table).orderBy("offset").select("value").collect()

    for rows in (batch_rows, stream_rows):
        assert [row.value.asDict(recursive=True) for row in rows] == values


def test_a_jobs_config_and_checkpoint_are_read_by_the_server(connect, tmp_path):
    """Over --remote, a config that is not a local file of the client is read by the server (here both share the
    disk; a `file:` URI stands in for the server's hdfs: or s3a:), and the dry run asks the server whether the
    checkpoint exists."""
    from kafkasource.jobs import files

    config = tmp_path / "ingest.toml"
    config.write_bytes(b'[kafka]\n"bootstrap.servers" = "b:9092"\n\n[sink]\npath = "/out"\n')
    (tmp_path / "ck" / "offsets").mkdir(parents=True)
    (tmp_path / "ck" / "offsets" / "0").write_text("v1\n")

    assert files._read_over_connect(connect, f"file://{config}") == config.read_bytes()
    with pytest.raises(FileNotFoundError):
        files._read_over_connect(connect, f"file://{tmp_path}/absent.toml")
    assert files.exists(connect, f"file://{tmp_path}/ck/offsets") is True
    assert files.exists(connect, f"file://{tmp_path}/none/offsets") is False
