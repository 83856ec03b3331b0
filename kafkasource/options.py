"""One frozen, typed view of the option map. Every bad value is rejected here, naming the option.

Option names follow Spark's built-in Kafka source; every other `kafka.*` option goes to librdkafka
with the prefix stripped. Spark hands data sources a case-insensitive map, so names are matched in
lower case. `parse_options` takes any mapping, so a job that reads a config file can reuse it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Mapping

from kafkasource.errors import OptionError
from kafkasource.offsets import (EARLIEST, Committed, Earliest, Latest, SpecificOffsets, Timestamps,
                                 TopicPartition)
from kafkasource.subscription import Assign, Subscribe, SubscribePattern, Subscription

# Kafka settings we manage ourselves, or Java-client settings librdkafka does not know, with what to do instead.
UNSUPPORTED_KAFKA_SETTINGS = {
    "key.deserializer": "keys are always returned as binary; decode them in Spark (CAST, from_json, from_avro)",
    "value.deserializer": "values are always returned as binary; decode them in Spark (CAST, from_json, from_avro)",
    "sasl.jaas.config": "librdkafka takes credentials as kafka.sasl.username and kafka.sasl.password "
                        "(with kafka.sasl.mechanism and kafka.security.protocol)",
    "ssl.truststore.location": "give the CA certificate in PEM form as kafka.ssl.ca.location",
    "ssl.truststore.password": "give the CA certificate in PEM form as kafka.ssl.ca.location (no password needed)",
    "ssl.truststore.type": "give the CA certificate in PEM form as kafka.ssl.ca.location",
    "ssl.keystore.type": "give a PKCS#12 keystore as kafka.ssl.keystore.location, or PEM files as "
                         "kafka.ssl.certificate.location and kafka.ssl.key.location",
    "interceptor.classes": "Java interceptors cannot run in librdkafka; remove the option",
    "sasl.login.callback.handler.class": "use librdkafka's kafka.sasl.oauthbearer.* settings",
    "sasl.client.callback.handler.class": "use librdkafka's kafka.sasl.oauthbearer.* settings",
    "max.poll.records": "use maxOffsetsPerTrigger to bound a micro-batch",
    "session.timeout.ms": "executor consumers never join a group; remove the option",
}
# set by the source itself on every client it creates
MANAGED_KAFKA_SETTINGS = {"group.id", "auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store",
                          "enable.partition.eof", "bootstrap.servers"}

SECRET_MARKERS = ("password", "passphrase", "secret", "jaas", "key.pem", "token")


def is_secret(name: str) -> bool:
    return any(marker in name.lower() for marker in SECRET_MARKERS)


def redact(config: Mapping[str, object]) -> dict[str, object]:
    """The config with secret values hidden, for messages and logs."""
    return {k: ("*****" if is_secret(k) else v) for k, v in config.items()}


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    group_id: str | None
    starting: object  # an offsets.* specification
    ending: object | None  # batch reads only
    auto_offset_reset: str
    commit_mode: str
    commit_timeout_ms: int
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    include_headers: bool
    poll_timeout_ms: int
    read_committed: bool
    # librdkafka settings (prefix stripped), secrets included: never print this field
    kafka_config: dict[str, str] = field(repr=False)

    def client_config(self, **overrides: object) -> dict[str, object]:
        """librdkafka configuration for a client of ours: the user's kafka.* settings plus `overrides`."""
        return {**self.kafka_config, "bootstrap.servers": self.bootstrap_servers, **overrides}


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _positive_int(options: Mapping[str, str], name: str, default: int | None = None, allow_zero=False) -> int | None:
    raw = _get(options, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name} must be a whole number, got {raw!r}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise OptionError(f"option {name} must be {'zero or more' if allow_zero else 'a positive number'}, got {raw}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise OptionError(f"option {name} must be true or false, got {raw!r}")


def _choice(options: Mapping[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.lower() not in choices:
        raise OptionError(f"option {name} must be one of {', '.join(choices)}, got {raw!r}")
    return raw.lower()


_DURATION_UNITS = {"ms": 1, "s": 1000, "sec": 1000, "second": 1000, "seconds": 1000, "m": 60_000, "min": 60_000,
                   "minute": 60_000, "minutes": 60_000, "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000}


def parse_duration_ms(name: str, raw: str) -> int:
    """'15m', '30s', '500ms', '2 minutes', or a bare number of milliseconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", raw)
    if match is None or (match.group(2) and match.group(2).lower() not in _DURATION_UNITS):
        raise OptionError(f"option {name} must be a duration such as 500ms, 30s, 15m or 1h, got {raw!r}")
    return int(match.group(1)) * _DURATION_UNITS.get(match.group(2).lower() or "ms")


def _json_object(name: str, raw: str) -> dict:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option {name} is not valid JSON ({exc.msg} at position {exc.pos}): {raw!r}") from None
    if not isinstance(value, dict):
        raise OptionError(f"option {name} must be a JSON object like {{\"topic\": {{\"0\": 42}}}}, got {raw!r}")
    return value


def _per_partition(name: str, raw: str, example: str) -> tuple[tuple[TopicPartition, int], ...]:
    """{"topic": {"0": 23, "1": -1}} -> ((("topic", 0), 23), (("topic", 1), -1))."""
    out = []
    for topic, parts in _json_object(name, raw).items():
        if not isinstance(parts, dict):
            raise OptionError(f"option {name} must map each topic to {{partition: value}}, like {example}; "
                              f"got {parts!r} for topic {topic!r}")
        for partition, value in parts.items():
            try:
                if isinstance(value, (bool, float)):  # JSON true would read as 1, 1.5 as 1
                    raise TypeError(value)
                out.append(((topic, int(partition)), int(value)))
            except (TypeError, ValueError):
                raise OptionError(f"option {name}: partition {partition!r} of topic {topic!r} must be a number "
                                  f"mapped to a number, like {example}") from None
    return tuple(out)


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = {name: _get(options, name) for name in ("subscribe", "subscribePattern", "assign")}
    chosen = [name for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        raise OptionError("exactly one of the options subscribe, subscribePattern or assign must be set to say what "
                          f"to read; {'none was' if not chosen else ' and '.join(chosen) + ' were'} given")
    name = chosen[0]
    raw = given[name]
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(f"option subscribe must list topics separated by commas, got {raw!r}")
        return Subscribe(topics)
    if name == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise OptionError(f"option subscribePattern is not a valid regular expression ({exc}): {raw!r}") from None
        return SubscribePattern(raw)
    parts = []
    example = '{"orders": [0, 1]}'
    for topic, partitions in _json_object("assign", raw).items():
        if not isinstance(partitions, list) or not all(type(p) is int and p >= 0 for p in partitions):
            raise OptionError(f"option assign must map each topic to a list of partition numbers, like {example}; "
                              f"got {partitions!r} for topic {topic!r}")
        parts.extend((topic, p) for p in partitions)
    if not parts:
        raise OptionError(f"option assign names no partitions; write it like {example}")
    return Assign(tuple(sorted(set(parts))))


def _offsets_spec(options: Mapping[str, str], prefix: str, group_id: str | None, reset: str):
    """startingOffsets/endingOffsets and their timestamp forms -> an offsets.* specification (None: not given)."""
    offsets_name = f"{prefix}Offsets"
    by_ts_name = f"{prefix}OffsetsByTimestamp"
    ts_name = f"{prefix}Timestamp"
    given = [n for n in (ts_name, by_ts_name, offsets_name) if _get(options, n) is not None]
    if len(given) > 1:
        raise OptionError(f"options {' and '.join(given)} both say where to {prefix[:-3] or prefix}; set only one")
    if _get(options, ts_name) is not None:
        raw = _get(options, ts_name)
        try:
            return Timestamps(everywhere=int(raw))
        except ValueError:
            raise OptionError(f"option {ts_name} must be milliseconds since the epoch, got {raw!r}") from None
    if _get(options, by_ts_name) is not None:
        return Timestamps(per_partition=_per_partition(by_ts_name, _get(options, by_ts_name),
                                                       '{"orders": {"0": 1700000000000}}'))
    raw = _get(options, offsets_name)
    if raw is None:
        return None
    lowered = raw.lower()
    if lowered == "earliest":
        if prefix == "ending":
            raise OptionError("option endingOffsets cannot be earliest; use latest or JSON offsets")
        return Earliest()
    if lowered == "latest":
        return Latest()
    if lowered == "committed":
        if prefix == "ending":
            raise OptionError("option endingOffsets cannot be committed; use latest or JSON offsets")
        if group_id is None:
            raise OptionError("startingOffsets=committed needs kafka.group.id: the group whose committed offsets to "
                              "start from")
        return Committed(reset)
    if raw.startswith("{"):
        offsets = _per_partition(offsets_name, raw, '{"orders": {"0": 23, "1": -2}}')
        for (topic, partition), value in offsets:
            if value < EARLIEST or (prefix == "ending" and value == EARLIEST):
                allowed = "-1 (latest)" if prefix == "ending" else "-2 (earliest), -1 (latest)"
                raise OptionError(f"option {offsets_name}: offset {value} for {topic}-{partition} is not valid; use "
                                  f"an offset >= 0, {allowed}")
        # a start outside the log follows kafka.auto.offset.reset, as Kafka does; an end is kept inside the log
        return SpecificOffsets(offsets, default=Latest(), reset=reset if prefix == "starting" else "nearest")
    values = "earliest, latest, committed" if prefix == "starting" else "latest"
    raise OptionError(f"option {offsets_name} must be {values}, or JSON like {{\"orders\": {{\"0\": 23}}}}; "
                      f"got {raw!r}")


def _kafka_config(options: Mapping[str, str]) -> dict[str, str]:
    config = {}
    for name, value in options.items():
        name = name.lower()
        if not name.startswith("kafka.") or name == "kafka.bootstrap.servers":
            continue
        setting = name[len("kafka."):]
        if setting in UNSUPPORTED_KAFKA_SETTINGS:
            raise OptionError(f"option kafka.{setting} is a Java client setting that librdkafka does not "
                              f"support: {UNSUPPORTED_KAFKA_SETTINGS[setting]}")
        if setting in ("group.id", "auto.offset.reset"):
            continue  # read into typed fields
        if setting == "enable.auto.commit":
            if str(value).strip().lower() != "false":
                raise OptionError("option kafka.enable.auto.commit cannot be true: this source commits the group's "
                                  "offsets itself when a batch completes; use commitMode (sync, async or none)")
            continue
        if setting in MANAGED_KAFKA_SETTINGS:
            raise OptionError(f"option kafka.{setting} is managed by the source; remove it")
        config[setting] = str(value)
    _check_librdkafka_accepts(config)
    return config


def _check_librdkafka_accepts(config: Mapping[str, str]) -> None:
    """librdkafka itself validates names and values; turn its complaint into an error naming the option."""
    from confluent_kafka import Consumer, KafkaException

    try:
        # a client that is closed at once; it never subscribes, assigns or commits
        Consumer({**config, "group.id": "kafkasource-option-check", "log_level": 0}).close()
    except KafkaException as exc:
        message = str(exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else exc)
        names = [n for n in config if n in message] or ["a kafka.* setting"]
        shown = ", ".join(f"kafka.{n}" + ("" if is_secret(n) else f"={config[n]!r}") for n in names if n in config)
        raise OptionError(f"librdkafka rejected {shown or names[0]}: {message}. Options prefixed with kafka. "
                          "are passed to librdkafka; see its CONFIGURATION.md for the names it accepts") from None


def parse_options(raw_options: Mapping[str, str], streaming: bool = True) -> SourceOptions:
    """Validate the option map; raise OptionError naming the first bad option."""
    options = {str(k).lower(): v for k, v in raw_options.items()}
    bootstrap = _get(options, "kafka.bootstrap.servers")
    if bootstrap is None:
        raise OptionError("option kafka.bootstrap.servers is required: the brokers to connect to, "
                          "like host1:9092,host2:9092")
    subscription = _subscription(options)
    group_id = _get(options, "kafka.group.id")
    reset = _choice(options, "kafka.auto.offset.reset", ("earliest", "latest", "none"), "latest")
    kafka_config = _kafka_config(options)

    starting = _offsets_spec(options, "starting", group_id, reset)
    if starting is None:
        # as the built-in source: a batch read starts at earliest; a stream at the group's commits, else latest
        starting = Earliest() if not streaming else (Committed(reset) if group_id else Latest())
    ending = _offsets_spec(options, "ending", group_id, reset)
    if ending is not None and streaming:
        raise OptionError("options endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch reads "
                          "(spark.read); a stream has no end")
    if ending is None and not streaming:
        ending = Latest()

    commit_mode = _choice(options, "commitMode", ("sync", "async", "none"), "sync" if group_id else "none")
    if commit_mode != "none" and group_id is None:
        raise OptionError(f"commitMode={commit_mode} needs kafka.group.id: the consumer group to commit offsets to; "
                          "set kafka.group.id or use commitMode=none")
    isolation = _choice(options, "kafka.isolation.level", ("read_committed", "read_uncommitted"), "read_uncommitted")

    max_per_trigger = _positive_int(options, "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(options, "minOffsetsPerTrigger")
    if max_per_trigger is not None and min_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise OptionError(f"option minOffsetsPerTrigger ({min_per_trigger}) is above maxOffsetsPerTrigger "
                          f"({max_per_trigger}); lower the minimum or raise the maximum")
    delay_raw = _get(options, "maxTriggerDelay")
    max_trigger_delay_ms = parse_duration_ms("maxTriggerDelay", delay_raw) if delay_raw else 15 * 60_000

    return SourceOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        group_id=group_id,
        starting=starting,
        ending=ending,
        auto_offset_reset=reset,
        commit_mode=commit_mode,
        commit_timeout_ms=_positive_int(options, "commitTimeoutMs", 60_000),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=max_trigger_delay_ms,
        min_partitions=_positive_int(options, "minPartitions"),
        include_headers=_bool(options, "includeHeaders", False),
        poll_timeout_ms=_positive_int(options, "kafkaConsumer.pollTimeoutMs", 120_000),
        read_committed=isolation == "read_committed",
        kafka_config=kafka_config,
    )
