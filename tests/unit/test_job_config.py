"""The jobs' configuration and command lines, before any Spark or Kafka: exact messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkasource.jobs.cli import one_line
from kafkasource.jobs.config import ConfigError, load, parse_trigger
from kafkasource.jobs.plan import table
from kafkasource.jobs.replay import range_option
from tests.support.job_helpers import REPO_ROOT

MINIMAL = '[kafka]\n"bootstrap.servers" = "127.0.0.1:9092"\n[source]\nsubscribe = "orders"\n' \
          '[sink]\npath = "/data/orders"\ncheckpoint = "/data/ck"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


def error_of(path: Path, **kwargs) -> str:
    with pytest.raises(ConfigError) as raised:
        load(path, **kwargs)
    return str(raised.value)


def test_example_configs_load_and_pass_option_checks(monkeypatch):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setenv("INGEST_DIR", "/srv/ingest")
    config = load(REPO_ROOT / "conf" / "ingest.example.toml", required=("path", "checkpoint"))
    assert config.source_options == {"kafka.bootstrap.servers": "127.0.0.1:9092", "kafka.group.id": "orders-ingest",
                                     "kafka.auto.offset.reset": "earliest", "subscribe": "orders",
                                     "commitMode": "sync", "maxOffsetsPerTrigger": "4000", "failOnDataLoss": "true",
                                     # value = "json": the source decodes it, a record that does not fit kept
                                     "valueFormat": "json", "valueSchema": "order_id BIGINT, customer STRING, amount "
                                     "DOUBLE", "json.mode": "FAILFAST", "onDecodeError": "keep"}
    assert (config.destination.path, config.checkpoint) == ("/srv/ingest/orders", "/srv/ingest/checkpoint")
    assert (config.decoding.value, str(config.trigger)) == ("json", "availableNow")
    assert config.parsed_options(streaming=True).group_id == "orders-ingest"
    for name in ("replay", "lag"):
        load(REPO_ROOT / "conf" / f"{name}.example.toml").parsed_options(streaming=name != "replay")


ROUTE = ('[kafka]\n"bootstrap.servers" = "127.0.0.1:9092"\n"group.id" = "g"\n[source]\nsubscribe = "orders"\n'
         '[transform]\nsql = "SELECT value FROM records"\n[sink]\ntopic = "out"\ncheckpoint = "/data/ck"\n'
         '[job]\nname = "orders-route"\n')


def test_the_route_example_and_a_minimal_route_give_the_sinks_options(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setenv("ROUTE_DIR", "/srv/route")
    config = load(REPO_ROOT / "conf" / "route.example.toml", required=("checkpoint",), writes_topic=True)
    assert config.sink_options == {"kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "large-orders",
                                   "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "orders-route",
                                   "valueFormat": "json"}
    assert config.checkpoint == "/srv/route/checkpoint" and "FROM records" in (config.transform_sql or "")
    # the consumer's settings stay with the source; [sink.kafka] adds producer settings over [kafka]'s
    path = write(tmp_path, ROUTE + '[sink.kafka]\n"linger.ms" = 20\n"bootstrap.servers" = "other:9092"\n')
    assert load(path, writes_topic=True).sink_options == {
        "kafka.bootstrap.servers": "other:9092", "kafka.linger.ms": "20", "topic": "out",
        "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "orders-route"}
    at_least_once = write(tmp_path,
                          ROUTE.replace('topic = "out"', 'topic = "out"\ndelivery_guarantee = "at-least-once"'))
    assert load(at_least_once, writes_topic=True).sink_options == {
        "kafka.bootstrap.servers": "127.0.0.1:9092", "topic": "out", "deliveryGuarantee": "at-least-once"}


def test_route_and_parquet_configs_refuse_each_others_keys_and_a_bad_sink(tmp_path):
    path = write(tmp_path, ROUTE.replace('topic = "out"', 'topic = "out"\npath = "/data/out"'))
    assert error_of(path, writes_topic=True) == (
        f"{path}: [sink] path applies to a job that writes files or tables (ingest, replay) only; remove it")
    assert error_of(write(tmp_path, MINIMAL + 'topic = "out"\n')) == (
        f"{path}: [sink] topic applies to the route job, which writes a topic only; remove it")
    assert error_of(write(tmp_path, MINIMAL + '[transform]\nsql = "SELECT 1"\n')) == (
        f"{path}: [transform] applies to the route job only; remove it")
    assert error_of(write(tmp_path, ROUTE.replace("[transform]\nsql", "[transform]\n# sql")), writes_topic=True) == (
        f"{path}: [transform] sql is required")
    bad = write(tmp_path, ROUTE.replace('topic = "out"', 'topic = "out"\ndelivery_guarantee = "exactly"'))
    assert error_of(bad, writes_topic=True).startswith(
        f"{path}: [sink]: option deliveryGuarantee must be one of at-least-once, exactly-once, none")
    assert error_of(bad, writes_topic=True).endswith(
        "(the sink's options come from [sink]: topic for topic, delivery_guarantee for deliveryGuarantee, "
        "transactional_id_prefix for transactionalIdPrefix, marker_topic for markerTopic, value_format for "
        "valueFormat; its kafka.* settings "
        "from [kafka] and [sink.kafka])")


def test_environment_values_and_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "pa$$word")
    monkeypatch.delenv("BROKERS", raising=False)
    path = write(tmp_path, MINIMAL.replace('"127.0.0.1:9092"', '"${env:BROKERS:-h:9092}"\n'
                                                               '"sasl.password" = "${env:KAFKA_SASL_PASSWORD}"'))
    options = load(path).source_options
    assert options["kafka.bootstrap.servers"] == "h:9092"
    assert options["kafka.sasl.password"] == "pa$$word"


def test_unset_environment_variable_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKA_SASL_PASSWORD", raising=False)
    path = write(tmp_path, MINIMAL.replace('[source]', '"sasl.password" = "${env:KAFKA_SASL_PASSWORD}"\n[source]'))
    assert error_of(path) == (f"{path}: [kafka] sasl.password reads the environment variable KAFKA_SASL_PASSWORD, "
                              "which is not set; export KAFKA_SASL_PASSWORD=... before starting the job")


@pytest.mark.parametrize("text, message", [
    (MINIMAL.replace('"bootstrap.servers" = "127.0.0.1:9092"\n', ''),
     '[kafka] bootstrap.servers is required: the brokers, like "broker1:9092,broker2:9092"'),
    (MINIMAL.replace('path = "/data/orders"\n', ''), "[sink] path is required"),
    (MINIMAL.replace('path = "/data/orders"', 'path = 42'), "[sink] path must be a string (in quotes), got 42"),
    (MINIMAL + '[decode]\nvalue = "xml"\n',
     "[decode] value must be one of raw, text, json, avro, protobuf, json-schema, got 'xml'"),
    (MINIMAL + '[decode]\nvalue = "avro"\n', '[schema_registry] url is required with value = "avro": the schema '
                                             'registry, like "http://registry:8081"'),
    (MINIMAL + '[decode]\nvalue = "json"\nschema = "a INT"\ndead_letter_topic = "dlt"\n',
     '[decode] dead_letter_topic applies to value = "avro", "protobuf" or "json-schema" only; remove it or set value'),
    (MINIMAL + '[schema_registry]\nurl = "http://r:8081"\n',
     '[schema_registry] applies to value = "avro", "protobuf" or "json-schema" only; remove it or set value'),
    (MINIMAL + '[decode]\nvalue = "json"\n',
     '[decode] schema is required with value = "json": a Spark DDL schema, like "order_id BIGINT, amount DOUBLE"'),
    (MINIMAL + '[decode]\nvalue = "json"\nschema = "id BIGINT, date STRING"\n',
     "[decode] schema defines date, a column the job adds itself; rename that field (columns added: kafka_topic, "
     "kafka_partition, kafka_offset, kafka_timestamp, date, _corrupt)"),
    (MINIMAL + '[sink]\n', None),  # a table defined twice is invalid TOML: checked below
    (MINIMAL.replace("[sink]", "[snk]"), "unknown section [snk] (did you mean 'sink'?); known sections: "
                                         "[kafka], [source], [schema_registry], [decode], [sink], [transform], [job], "
                                         "[metrics]"),
    (MINIMAL + '[job]\ntriger = "availableNow"\n',
     "unknown key 'triger' in [job] (did you mean 'trigger'?); known keys: name, trigger"),
    (MINIMAL.replace('subscribe = "orders"', 'subscribe = ["orders"]'),
     "[source] subscribe must be a string, number or boolean, got ['orders']"),
    (MINIMAL.replace('subscribe = "orders"', 'subscribe = "orders"\n"kafka.group.id" = "g"'),
     "[source] kafka.group.id: Kafka client settings go in [kafka] without the kafka. prefix, "
     "like [kafka] group.id = ..."),
    (MINIMAL + '[job]\ntrigger = "every 5 minutes"\n',
     "[job] trigger must be availableNow or processingTime=<interval> (like processingTime=30s), "
     "got 'every 5 minutes'"),
])
def test_bad_config_names_the_key(tmp_path, text, message):
    path = write(tmp_path, text)
    found = error_of(path, required=("path", "checkpoint"))
    if message is None:
        assert found.startswith(f"{path} is not valid TOML: ")
    else:
        assert found == f"{path}: {message}"


DELTA = MINIMAL.replace('path = "/data/orders"', 'format = "delta"\npath = "/data/orders"')
ICEBERG = MINIMAL.replace('path = "/data/orders"', 'format = "iceberg"\ntable = "lake.db.orders"')


def test_delta_and_iceberg_destinations_read_their_keys_and_iceberg_fans_out_by_default(tmp_path):
    delta = load(write(tmp_path, DELTA + 'options = { mergeSchema = true }\n'
                                 'table_properties = { "delta.appendOnly" = "true" }\n'), required=("path",))
    iceberg = load(write(tmp_path, ICEBERG + 'options = { "target-file-size-bytes" = 134217728 }\n'),
                   required=("path",))
    by_name = load(write(tmp_path, DELTA.replace('path = "/data/orders"', 'table = "main.orders"')),
                   required=("path",))
    parquet = load(write(tmp_path, MINIMAL), required=("path",))

    assert (delta.destination.format, delta.destination.path, delta.destination.table) == ("delta", "/data/orders",
                                                                                           None)
    assert dict(delta.destination.options) == {"mergeSchema": "true"}
    assert dict(delta.destination.table_properties) == {"delta.appendOnly": "true"}
    assert delta.destination.describe() == "Delta table at /data/orders"
    assert delta.destination.identifier() == "delta.`/data/orders`"
    assert (by_name.destination.describe(), by_name.destination.identifier()) == ("Delta table main.orders",
                                                                                  "main.orders")
    # Iceberg's writer fails on a date it closed already unless it fans out; a user's own setting wins
    assert dict(iceberg.destination.options) == {"fanout-enabled": "true", "target-file-size-bytes": "134217728"}
    assert iceberg.destination.describe() == "Iceberg table lake.db.orders"
    assert (parquet.destination.format, parquet.destination.describe()) == ("parquet", "Parquet at /data/orders")


@pytest.mark.parametrize("text, message", [
    (MINIMAL.replace('path = "/data/orders"', 'format = "orc"\npath = "/data/orders"'),
     "[sink] format must be one of parquet, delta, iceberg, got 'orc'"),
    (MINIMAL.replace('path = "/data/orders"', 'table = "orders"'),
     '[sink] table: Parquet is written to a folder; set path, or format = "delta" or "iceberg" to write a table '
     'by name'),
    (ICEBERG.replace('table = "lake.db.orders"', 'path = "/data/orders"'),
     '[sink] path: Iceberg tables are written by name in a catalog; set table = "<catalog>.<namespace>.<table>" '
     'and configure the catalog (spark.sql.catalog.<catalog>)'),
    (ICEBERG.replace('table = "lake.db.orders"', ''), '[sink] table is required with format = "iceberg": a name in '
                                                      'a catalog'),
    (DELTA.replace('path = "/data/orders"', ''), '[sink] needs path (a folder) or table (a name) with format = '
                                                 '"delta"'),
    (DELTA + 'table = "main.orders"\n', "[sink] table: set path or table, not both"),
    (MINIMAL + 'table_properties = { "delta.appendOnly" = "true" }\n',
     '[sink] table_properties: Parquet files have no table properties; remove them, or set format = "delta" or '
     '"iceberg"'),
    (DELTA + 'options = { mergeSchema = ["yes"] }\n',
     "[sink.options] mergeSchema must be a string, number or boolean, got ['yes']"),
])
def test_a_bad_destination_names_the_key_and_what_to_write(tmp_path, text, message):
    path = write(tmp_path, text)
    assert error_of(path, required=("path", "checkpoint")) == f"{path}: {message}"



def test_bad_source_option_is_reported_with_the_file(tmp_path):
    path = write(tmp_path, MINIMAL.replace('subscribe = "orders"', 'subscribe = "orders"\nmaxOffsetsPerTrigger = -5'))
    with pytest.raises(ConfigError) as raised:
        load(path).parsed_options(streaming=True)
    assert str(raised.value) == (f"{path}: option maxOffsetsPerTrigger must be a positive number, got -5 "
                                 "(options come from [source], kafka.* ones from [kafka])")


def test_missing_file():
    assert error_of(Path("/nonexistent/job.toml")) == "config file /nonexistent/job.toml does not exist"


def test_triggers_and_ranges():
    assert str(parse_trigger("processingTime=30 seconds", "--trigger")) == "processingTime=30000 ms"
    assert parse_trigger("AvailableNow", "--trigger").available_now
    with pytest.raises(ConfigError, match=r"--trigger: the interval in 'processingTime=soon' must be a duration"):
        parse_trigger("processingTime=soon", "--trigger")
    assert range_option("--from", "earliest", "starting") == {"startingOffsets": "earliest"}
    assert range_option("--to", '{"t": {"0": 5}}', "ending") == {"endingOffsets": '{"t": {"0": 5}}'}
    assert range_option("--from", "2026-11-01T00:00:00Z", "starting") == {"startingTimestamp": "1793491200000"}
    assert range_option("--from", "2026-11-01 00:00", "starting") == {"startingTimestamp": "1793491200000"}
    assert range_option("--to", "1793491200000", "ending") == {"endingTimestamp": "1793491200000"}
    with pytest.raises(ConfigError, match=r"^--from 'yesterday' is not earliest, latest, offsets JSON"):
        range_option("--from", "yesterday", "starting")


def test_table_aligns_numbers_right():
    assert table(["TOPIC", "LAG"], [["orders", 5], ["t", 1200], ["u", None]]) == (
        "TOPIC    LAG\norders     5\nt       1200\nu          -")


@pytest.mark.parametrize("job, first_line", [
    ("ingest", "usage: ingest [-h] --config CONFIG"),
    ("replay", "usage: replay [-h] --config CONFIG"),
    ("lag", "usage: lag [-h] --config CONFIG"),
])
def test_help(job, first_line):
    result = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / f"{job}.py"), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.startswith(first_line)
    assert f"{job}:" in result.stdout and "--config CONFIG" in result.stdout


def test_bad_config_exits_2_with_one_line(tmp_path):
    path = write(tmp_path, MINIMAL.replace("[sink]", "[sink]\npartition_by_date = \"yes\""))
    result = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "ingest.py"), "--config", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"ingest: configuration error: {path}: "
                             "[sink] partition_by_date must be true or false, got 'yes'\n")


def test_replay_of_a_table_config_asks_for_a_folder_before_reading_anything(tmp_path):
    path = write(tmp_path, DELTA)
    result = subprocess.run([sys.executable, str(REPO_ROOT / "jobs" / "replay.py"), "--config", str(path),
                             "--from", "earliest", "--to", "latest"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"replay: configuration error: {path}: [sink] is a Delta table at /data/orders; "
                             "replay writes Parquet files only: give it a folder with --output\n")


def test_metrics_table_is_off_by_default_and_checked(tmp_path):
    assert load(write(tmp_path, MINIMAL)).metrics is None
    path = write(tmp_path, MINIMAL + f'[metrics]\nport = 9108\ntextfile = "{tmp_path}/ingest.prom"\n'
                                      'broker_interval = "15s"\n')
    metrics = load(path).metrics
    assert (metrics.port, metrics.host, metrics.textfile, metrics.broker_interval_s) == (
        9108, "127.0.0.1", f"{tmp_path}/ingest.prom", 15.0)
    for keys, message in [
        ('host = "0.0.0.0"', "[metrics] needs port (Prometheus scrapes http://host:port/metrics) or textfile"),
        ("port = 70000", "[metrics] port must be a port number from 0 to 65535 (0: any free port), got 70000"),
        ('port = "9108"', "[metrics] port must be a port number from 0 to 65535 (0: any free port), got '9108'"),
        ('textfile = "/nowhere/x.prom"', "[metrics] textfile: the directory /nowhere does not exist"),
        ('port = 0\nbroker_interval = "500ms"', "[metrics] broker_interval must be at least 1s"),
        ('port = 0\nbroker_interval = "soon"', "[metrics] broker_interval must be a duration such as 15s or 1m"),
        ("prot = 9108", "unknown key 'prot' in [metrics] (did you mean 'port'?)"),
    ]:
        assert message in error_of(write(tmp_path, MINIMAL + "[metrics]\n" + keys + "\n")), keys


def test_a_token_provider_in_source_signs_in_the_source_the_route_sink_and_the_dead_letter_producer(tmp_path):
    """oauthProvider and its arguments in [source] reach every client a job makes: the source's, the route job's
    sink (its options) and the dead-letter producer (its librdkafka configuration, with the provider as oauth_cb)."""
    from kafkasource.writing.dead_letters import producer_config

    signed = ROUTE.replace('subscribe = "orders"\n', 'subscribe = "orders"\noauthProvider = "aws_msk_iam"\n'
                                                     '"oauthProvider.region" = "eu-west-1"\n')
    config = load(write(tmp_path, signed), writes_topic=True)

    assert config.parsed_options(streaming=True).token_provider.name == "aws_msk_iam"
    assert config.sink_options == {
        "kafka.bootstrap.servers": "127.0.0.1:9092", "oauthProvider": "aws_msk_iam",
        "oauthProvider.region": "eu-west-1", "topic": "out", "deliveryGuarantee": "exactly-once",
        "transactionalIdPrefix": "orders-route"}
    producer = producer_config(config.source_options)
    assert (producer["sasl.mechanism"], producer["security.protocol"]) == ("OAUTHBEARER", "SASL_SSL")
    assert producer["oauth_cb"].name == "aws_msk_iam" and dict(producer["oauth_cb"].arguments) == {
        "region": "eu-west-1"}
    assert "group.id" not in producer


def test_one_line_of_a_py4j_error_carries_the_jvms_reason():
    py4j = RuntimeError("An error occurred while calling o43.sql.\n: java.lang.NoClassDefFoundError: "
                        "org/apache/spark/sql/catalyst/plans/logical/IgnoreCachedData\n\tat org.apache.Foo.bar")
    assert one_line(py4j) == ("An error occurred while calling o43.sql. java.lang.NoClassDefFoundError: "
                              "org/apache/spark/sql/catalyst/plans/logical/IgnoreCachedData")
    assert one_line(RuntimeError("first line\nsecond line")) == "first line"

