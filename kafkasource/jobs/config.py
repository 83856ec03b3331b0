"""A job's TOML configuration, checked before Spark starts.

Every error names the file, the key and what to write instead. Values may read the environment
with `${env:NAME}` (an unset NAME is an error naming it) or `${env:NAME:-default}`, so secrets such
as `sasl.password` never have to be written into a config file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kafkasource.errors import OptionError
from kafkasource.jobs.destination import DESTINATION_KEYS, Destination, parse_destination
from kafkasource.jobs.tables import ConfigError, Section, did_you_mean
from kafkasource.jobs.topic_sink import topic_sink_options
from kafkasource.options import SourceOptions, parse_duration_ms, parse_options

VALUE_FORMATS = ("raw", "text", "json", "avro", "protobuf", "json-schema")
# values in a schema registry's wire format: the source's valueFormat for each
REGISTRY_FORMATS = {"avro": "avro", "protobuf": "protobuf", "json-schema": "json-schema"}
# columns the jobs add to every row; a JSON schema must not define them
INGESTION_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "date", "_corrupt")


@dataclass(frozen=True)
class ValueDecoding:
    """The job's [decode] section: how the value column becomes the rows the job writes."""

    value: str  # raw | text | json | avro | protobuf | json-schema
    schema: str | None  # Spark DDL, for json
    dead_letter_topic: str | None = None  # avro: records that do not decode go there instead of _corrupt


@dataclass(frozen=True)
class Trigger:
    available_now: bool
    interval_ms: int | None = None

    def __str__(self) -> str:
        return "availableNow" if self.available_now else f"processingTime={self.interval_ms} ms"


@dataclass(frozen=True)
class Metrics:
    """[metrics]: Prometheus metrics over HTTP (port) and/or as a file for node_exporter's textfile collector."""

    port: int | None
    host: str
    textfile: str | None
    broker_interval_s: float


@dataclass(frozen=True)
class JobConfig:
    path: str  # where it was read from, as given: a local path, a shipped file's name or a URI
    source_options: dict[str, str]  # kafkasource options, kafka.* included; secrets included: never print
    decoding: ValueDecoding
    destination: Destination  # the ingest and replay jobs' [sink]: Parquet, Delta or Iceberg
    checkpoint: str | None
    partition_by_date: bool
    trigger: Trigger
    app_name: str
    metrics: Metrics | None = None  # off unless the file has a [metrics] section
    transform_sql: str | None = None  # [transform] sql: the route job's query over the view `records`
    # the route job's kafkasource sink options, kafka.* included; secrets included: never print
    sink_options: dict[str, str] | None = field(default=None, repr=False)

    def parsed_options(self, streaming: bool) -> SourceOptions:
        try:
            return parse_options(self.source_options, streaming=streaming)
        except OptionError as exc:
            raise ConfigError(f"{self.path}: {exc} (options come from [source], kafka.* ones from [kafka])") from None


def parse_trigger(text: str, where: str) -> Trigger:
    """'availableNow' or 'processingTime=<interval>' (like '30 seconds' or '500ms')."""
    if text.strip().lower() == "availablenow":
        return Trigger(True)
    name, _, interval = text.partition("=")
    if name.strip().lower() != "processingtime" or not interval.strip():
        raise ConfigError(
            f"{where} must be availableNow or processingTime=<interval> (like processingTime=30s), got {text!r}"
        )
    try:
        return Trigger(False, parse_duration_ms("trigger", interval.strip()))
    except OptionError:
        raise ConfigError(
            f"{where}: the interval in {text!r} must be a duration such as 500ms, 30s, 15m or 1h"
        ) from None


def _read_toml(path: str, data: bytes | None) -> dict:
    try:
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        return tomllib.loads(data.decode("utf-8"))  # a dict of tables
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


# [sink] keys of a job that writes files or tables (ingest, replay), and of one that writes a topic (route)
FILE_SINK_KEYS = (*DESTINATION_KEYS, "partition_by_date")
TOPIC_SINK_KEYS = ("topic", "delivery_guarantee", "transactional_id_prefix", "marker_topic", "value_format", "kafka")

SECTIONS = {
    "kafka": None,
    "source": None,
    "schema_registry": None,
    "decode": ("value", "schema", "subject", "version", "schema_id", "message", "dead_letter_topic"),
    "sink": (*FILE_SINK_KEYS, "checkpoint", *TOPIC_SINK_KEYS),
    "transform": ("sql",),
    "job": ("name", "trigger"),
    "metrics": ("port", "host", "textfile", "broker_interval"),
}


def _metrics(section: Section) -> Metrics | None:
    if not section.data:
        return None
    port = section.data.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
        raise ConfigError(
            f"{section.where('port')} must be a port number from 0 to 65535 (0: any free port), got {port!r}"
        )
    textfile = section.text("textfile")
    if port is None and textfile is None:
        raise ConfigError(
            f"{section.path}: [metrics] needs port (Prometheus scrapes http://host:port/metrics) or "
            f"textfile (a .prom file for node_exporter's textfile collector), or both"
        )
    if textfile is not None and not Path(textfile).parent.is_dir():
        raise ConfigError(
            f"{section.where('textfile')}: the directory {Path(textfile).parent} does not exist; "
            f"point it into node_exporter's --collector.textfile.directory"
        )
    interval = section.text("broker_interval", default="30s")
    try:
        interval_ms = parse_duration_ms("broker_interval", interval)
    except OptionError:
        raise ConfigError(
            f"{section.where('broker_interval')} must be a duration such as 15s or 1m, got {interval!r}"
        ) from None
    if interval_ms < 1000:
        raise ConfigError(
            f"{section.where('broker_interval')} must be at least 1s: it bounds how often the group's "
            f"offsets are read from the brokers, got {interval!r}"
        )
    return Metrics(port, section.text("host", default="127.0.0.1"), textfile, interval_ms / 1000)


def load(
    path: str | Path,
    required: tuple[str, ...] = (),
    trigger_override: str | None = None,
    data: bytes | None = None,
    writes_topic: bool = False,
) -> JobConfig:
    """Read and check a job's config file (see conf/*.example.toml); `required` names [sink] keys the job needs.
    `data` is the file's content when the caller read it already (from a cluster's file system). `writes_topic`:
    the job writes a Kafka topic ([sink] topic, [transform] sql), not Parquet."""
    path = str(path)
    tables = _read_toml(path, data)
    for name in tables:
        if name not in SECTIONS:
            raise ConfigError(
                f"{path}: unknown section [{name}]{did_you_mean(name, tuple(SECTIONS))}; "
                f"known sections: {', '.join(f'[{s}]' for s in SECTIONS)}"
            )
    section = {name: Section(path, name, tables.get(name, {}), known) for name, known in SECTIONS.items()}

    kafka = section["kafka"].options()
    if "bootstrap.servers" not in kafka:
        raise ConfigError(
            f'{section["kafka"].where("bootstrap.servers")} is required: the brokers, like "broker1:9092,broker2:9092"'
        )
    source = section["source"].options()
    prefixed = [key for key in source if key.lower().startswith("kafka.")]
    if prefixed:
        raise ConfigError(
            f"{section['source'].where(prefixed[0])}: Kafka client settings go in [kafka] without "
            f"the kafka. prefix, like [kafka] {prefixed[0][len('kafka.') :]} = ..."
        )
    source_options = {**{f"kafka.{k}": v for k, v in kafka.items()}, **source}

    decode = section["decode"]
    value = decode.text("value", default="raw")
    if value not in VALUE_FORMATS:
        raise ConfigError(f"{decode.where('value')} must be one of {', '.join(VALUE_FORMATS)}, got {value!r}")
    schema = decode.text("schema")
    if value == "json" and not schema:
        raise ConfigError(
            f'{decode.where("schema")} is required with value = "json": a Spark DDL schema, '
            f'like "order_id BIGINT, amount DOUBLE"'
        )
    if schema and value != "json":
        raise ConfigError(f'{decode.where("schema")} applies to value = "json" only; remove it or set value = "json"')
    registry = section["schema_registry"].options(prefix="schema.registry.")
    source_options.update(registry)
    dead_letter_topic = decode.text("dead_letter_topic")
    registry_keys = [
        key for key in ("subject", "version", "schema_id", "message", "dead_letter_topic") if key in decode.data
    ]
    if value in REGISTRY_FORMATS:
        if "schema.registry.url" not in registry:
            raise ConfigError(
                f'{section["schema_registry"].where("url")} is required with value = "{value}": '
                'the schema registry, like "http://registry:8081"'
            )
        # a record that does not decode is kept (in _corrupt, or sent to the dead-letter topic), never dropped
        source_options.update({"valueFormat": REGISTRY_FORMATS[value], "onDecodeError": "keep"})
        for key, option in (
            ("subject", "valueSubject"),
            ("version", "valueSchemaVersion"),
            ("schema_id", "valueSchemaId"),
            ("message", "valueMessage"),
        ):
            if key in decode.data:
                source_options[option] = decode.options()[key]
        if dead_letter_topic:
            source_options["includeHeaders"] = "true"  # the dead-letter topic gets each record's headers
    elif registry_keys or registry:
        where = decode.where(registry_keys[0]) if registry_keys else f"{path}: [schema_registry]"
        raise ConfigError(
            f'{where} applies to value = "avro", "protobuf" or "json-schema" only; remove it or set value'
        )
    if value == "json" and schema:
        # decoded by the source; FAILFAST makes a record with a field of the wrong type corrupt (kept in _corrupt,
        # never dropped), not half read
        source_options.update(
            {"valueFormat": "json", "valueSchema": schema, "json.mode": "FAILFAST", "onDecodeError": "keep"}
        )
    if schema:
        clashes = [c for c in INGESTION_COLUMNS if re.search(rf"(^|,)\s*`?{c}`?\s", schema, re.IGNORECASE)]
        if clashes:
            raise ConfigError(
                f"{decode.where('schema')} defines {clashes[0]}, a column the job adds itself; "
                f"rename that field (columns added: {', '.join(INGESTION_COLUMNS)})"
            )

    sink, job = section["sink"], section["job"]
    app_name = job.text("name", default=f"kafkasource-{PurePosixPath(path).stem.split('.')[0]}")
    _check_sink_kind(sink, section["transform"], writes_topic)
    trigger_text = trigger_override or job.text("trigger", default="availableNow")
    trigger = parse_trigger(trigger_text, "--trigger" if trigger_override else job.where("trigger"))
    return JobConfig(
        path=path,
        source_options=source_options,
        decoding=ValueDecoding(value, schema, dead_letter_topic),
        destination=Destination() if writes_topic else parse_destination(sink, path_required="path" in required),
        checkpoint=sink.text("checkpoint", required="checkpoint" in required),
        partition_by_date=sink.flag("partition_by_date", True),
        trigger=trigger,
        app_name=app_name,
        metrics=_metrics(section["metrics"]),
        transform_sql=section["transform"].text("sql", required=True) if writes_topic else None,
        sink_options=topic_sink_options(sink, source_options, app_name) if writes_topic else None,
    )


def _check_sink_kind(sink: Section, transform: Section, writes_topic: bool) -> None:
    """A key of the other kind of job is a mistake (a Parquet job given a topic, or the reverse): refuse it."""
    wrong = [key for key in (FILE_SINK_KEYS if writes_topic else TOPIC_SINK_KEYS) if key in sink.data]
    if wrong:
        kind = (
            "a job that writes files or tables (ingest, replay)"
            if writes_topic
            else "the route job, which writes a topic"
        )
        raise ConfigError(f"{sink.where(wrong[0])} applies to {kind} only; remove it")
    if transform.data and not writes_topic:
        raise ConfigError(f"{transform.path}: [transform] applies to the route job only; remove it")
