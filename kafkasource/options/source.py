"""One frozen, typed view of the option map. Every bad value is rejected here, naming the option.

Option names follow Spark's built-in Kafka source; every other `kafka.*` option goes to librdkafka
with the prefix stripped. Spark hands data sources a case-insensitive map, so names are matched in
lower case. `parse_options` takes any mapping, so a job that reads a config file can reuse it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from kafkasource.cluster import settings as kafka_settings
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import OptionError
from kafkasource.formats.decoding import Decoding
from kafkasource.options.formats import SOURCE_FORMAT_OPTIONS, parse_decoding
from kafkasource.options.names import check_names
from kafkasource.options.values import (
    MAX_LONG,
    MAX_PARTITION,
    MAX_TIMEOUT_MS,
    PathChoice,
    _json_object,
    _positive_int,
    _positive_int_or,
    _whole_number,
    _whole_number_option,
    check_topic_name,
    option_text,
    parse_duration_ms,
    read_bool,
    read_bootstrap_servers,
    read_choice,
    read_path_choice,
    shown_value,
)
from kafkasource.planning.offsets import (
    EARLIEST,
    LATEST,
    AutoOffsetReset,
    Committed,
    Earliest,
    Latest,
    OffsetSpec,
    OutsideLog,
    SpecificOffsets,
    Timestamps,
)
from kafkasource.planning.partitions import TopicPartition, partition_name
from kafkasource.planning.subscription import Assign, Subscribe, SubscribePattern, Subscription
from kafkasource.reading.consumers import FetchConfig

log = logging.getLogger(__name__)

# the source's own options (every kafka.* one goes to librdkafka); any other name is refused, so a typo never
# silently falls back to a default
SOURCE_OPTIONS = (
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "endingOffsets",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
    "failOnDataLoss",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "packRecordsPerTask",
    "includeHeaders",
    "kafkaConsumer.pollTimeoutMs",
    "commitMode",
    "commitTimeoutMs",
    "readPath",
    "metadataRefreshIntervalMs",
    sign_in.OPTION,
    *SOURCE_FORMAT_OPTIONS,
)
# options of Spark's built-in source that mean nothing here: accepted, so a format("kafka") reader switches unchanged
IGNORED_BUILTIN_OPTIONS = {
    "fetchoffset.numretries": "driver requests retry until kafkaConsumer.pollTimeoutMs",
    "fetchoffset.retryintervalms": "driver requests retry until kafkaConsumer.pollTimeoutMs",
    "groupidprefix": "executor consumers never join a group",
}

CommitMode = Literal["sync", "async", "none"]  # commitMode
# a stream asks for the cluster's topics, partitions and topic ids at most this often (every trigger in between
# asks the log ends only): at 10,000 partitions the two requests cost more than the rest of a trigger's planning
DEFAULT_METADATA_REFRESH_INTERVAL_MS = 5_000


@dataclass(frozen=True)
class SourceOptions:
    bootstrap_servers: str
    subscription: Subscription
    group_id: str | None
    starting: OffsetSpec | None  # None: not given; for_stream() and for_batch() put in that read's default
    ending: OffsetSpec | None  # batch reads only
    auto_offset_reset: AutoOffsetReset
    commit_mode: CommitMode
    commit_timeout_ms: int
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    pack_records_per_task: int | None
    include_headers: bool
    read_path: PathChoice
    poll_timeout_ms: int
    read_committed: bool
    metadata_refresh_interval_ms: int  # streams: how often the topics, their partitions and ids are asked again
    # librdkafka settings (prefix stripped), secrets included: never print this field
    kafka_config: dict[str, str] = field(repr=False)
    # valueFormat/keyFormat other than binary: the reader schemas and registry settings (None: both binary)
    decoding: Decoding | None = field(default=None, repr=False)
    token_provider: sign_in.TokenProvider | None = None  # oauthProvider: what signs the clients in

    def client_config(self, **overrides: Any) -> dict[str, Any]:
        """librdkafka configuration for a client of ours: the user's kafka.* settings plus `overrides`, and the
        token provider as librdkafka's refresh callback (oauth_cb) where oauthProvider names one."""
        signed = sign_in.callback_setting(self.token_provider)
        return {**self.kafka_config, "bootstrap.servers": self.bootstrap_servers, **signed, **overrides}

    def fetch_config(self) -> FetchConfig:
        """What an executor needs to read this query's ranges."""
        return FetchConfig(
            self.client_config(),
            self.include_headers,
            self.fail_on_data_loss,
            self.poll_timeout_ms,
            self.group_id,
            self.read_path,
        )

    def start(self) -> OffsetSpec:
        """Where the read starts: for_stream() and for_batch() put in that read's default where none was given."""
        if self.starting is None:
            raise ValueError("the starting offsets of options not yet made a stream's or a batch read's")
        return self.starting

    def end(self) -> OffsetSpec:
        """Where a batch read ends: for_batch() puts in latest where none was given."""
        if self.ending is None:
            raise ValueError("the ending offsets of options not yet made a batch read's")
        return self.ending

    def for_stream(self) -> SourceOptions:
        """These options for a stream, which has no end; it starts, as the built-in source, at the group's commits
        if there is a group, else at latest."""
        if self.ending is not None:
            raise OptionError(
                "options endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch "
                "reads (spark.read); a stream has no end"
            )
        if self.starting is not None:
            return self
        return replace(self, starting=Committed(self.auto_offset_reset) if self.group_id else Latest())

    def for_batch(self) -> SourceOptions:
        """These options for a batch read, which reads from earliest to latest unless told otherwise."""
        return replace(
            self,
            starting=Earliest() if self.starting is None else self.starting,
            ending=Latest() if self.ending is None else self.ending,
        )


def _per_partition(name: str, raw: str, example: str) -> tuple[tuple[TopicPartition, int], ...]:
    """{"topic": {"0": 23, "1": -1}} -> ((("topic", 0), 23), (("topic", 1), -1))."""
    out = []
    for topic, parts in _json_object(name, raw).items():
        if not isinstance(parts, dict):
            raise OptionError(
                f"option {name} must map each topic to {{partition: value}}, like {example}; "
                f"got {parts!r} for topic {topic!r}"
            )
        for partition, value in parts.items():
            # JSON true would read as 1, 1.5 as 1
            if (
                type(value) is not int
                or not re.fullmatch(r"\d{1,10}", partition)
                or int(partition) > MAX_PARTITION
                or not -MAX_LONG <= value <= MAX_LONG
            ):
                raise OptionError(
                    f"option {name}: partition {shown_value(partition)} of topic {topic!r} must be a "
                    f"number mapped to a number, like {example}"
                )
            out.append(((topic, int(partition)), value))
    return tuple(out)


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = {
        name: raw
        for name in ("subscribe", "subscribePattern", "assign")
        if (raw := option_text(options, name)) is not None
    }
    chosen = list(given)
    if len(chosen) != 1:
        raise OptionError(
            "exactly one of the options subscribe, subscribePattern or assign must be set to say what "
            f"to read; {'none was' if not chosen else ' and '.join(chosen) + ' were'} given"
        )
    name = chosen[0]
    raw = given[name]
    if name == "subscribe":
        topics = tuple(t.strip() for t in raw.split(",") if t.strip())
        if not topics:
            raise OptionError(f"option subscribe must list topics separated by commas, got {shown_value(raw)}")
        for topic in topics:
            check_topic_name("subscribe", topic)
        return Subscribe(topics)
    if name == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise OptionError(
                f"option subscribePattern is not a valid regular expression ({exc}): {shown_value(raw)}"
            ) from None
        return SubscribePattern(raw)
    parts: list[TopicPartition] = []
    example = '{"orders": [0, 1]}'
    for topic, partitions in _json_object("assign", raw).items():
        if not isinstance(partitions, list) or not all(type(p) is int and 0 <= p <= MAX_PARTITION for p in partitions):
            raise OptionError(
                f"option assign must map each topic to a list of partition numbers, like {example}; "
                f"got {partitions!r} for topic {topic!r}"
            )
        parts.extend((topic, p) for p in partitions)
    if not parts:
        raise OptionError(f"option assign names no partitions; write it like {example}")
    return Assign(tuple(sorted(set(parts))))


def _starting_spec(options: Mapping[str, str], group_id: str | None, reset: AutoOffsetReset) -> OffsetSpec | None:
    """startingOffsets, startingTimestamp or startingOffsetsByTimestamp as a specification (None: not given)."""
    raw = _timestamps_or_offsets(options, "start", "startingTimestamp", "startingOffsetsByTimestamp", "startingOffsets")
    if not isinstance(raw, str):  # by timestamp, or not given
        return raw
    keyword = raw.lower()
    if keyword == "earliest":
        return Earliest()
    if keyword == "latest":
        return Latest()
    if keyword == "committed":
        if group_id is None:
            raise OptionError(
                "startingOffsets=committed needs kafka.group.id: the group whose committed offsets to start from"
            )
        return Committed(reset)
    if raw.startswith("{"):
        # a start outside the log follows kafka.auto.offset.reset, as Kafka does
        return SpecificOffsets(_json_offsets("startingOffsets", raw, lowest=EARLIEST), reset=reset)
    raise OptionError(
        f"option startingOffsets must be earliest, latest, committed, or JSON like "
        f'{{"orders": {{"0": 23}}}}; got {shown_value(raw)}'
    )


def _ending_spec(options: Mapping[str, str]) -> OffsetSpec | None:
    """endingOffsets, endingTimestamp or endingOffsetsByTimestamp as a specification (None: not given)."""
    raw = _timestamps_or_offsets(options, "end", "endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets")
    if not isinstance(raw, str):  # by timestamp, or not given
        return raw
    keyword = raw.lower()
    if keyword in ("earliest", "committed"):
        raise OptionError(f"option endingOffsets cannot be {keyword}; use latest or JSON offsets")
    if keyword == "latest":
        return Latest()
    if raw.startswith("{"):
        # an end outside the log is kept inside it, whatever kafka.auto.offset.reset says
        return SpecificOffsets(_json_offsets("endingOffsets", raw, lowest=LATEST), outside_log=OutsideLog.NEAREST_BOUND)
    raise OptionError(
        f'option endingOffsets must be latest, or JSON like {{"orders": {{"0": 23}}}}; got {shown_value(raw)}'
    )


def _timestamps_or_offsets(
    options: Mapping[str, str], verb: str, timestamp: str, by_timestamp: str, offsets: str
) -> Timestamps | str | None:
    """Where to start or end as given: by timestamp, or the raw value of the offsets option (None: not given);
    an error if more than one of the three options is set."""
    given = {
        name: raw for name in (timestamp, by_timestamp, offsets) if (raw := option_text(options, name)) is not None
    }
    if len(given) > 1:
        raise OptionError(f"options {' and '.join(given)} both say where to {verb}; set only one")
    if timestamp in given:
        return _timestamp_everywhere(timestamp, given[timestamp])
    if by_timestamp in given:
        return _timestamps_per_partition(by_timestamp, given[by_timestamp])
    return given.get(offsets)


def _timestamp_everywhere(name: str, raw: str) -> Timestamps:
    # Kafka reads the negative timestamps -1 and -2 as latest and earliest: never pass them on
    return Timestamps(everywhere=_whole_number(name, raw, 0, MAX_LONG, "milliseconds since the epoch"))


def _timestamps_per_partition(name: str, raw: str) -> Timestamps:
    example = '{"orders": {"0": 1700000000000}}'
    per_partition = _per_partition(name, raw, example)
    for (topic, partition), value in per_partition:
        if value < 0:
            raise OptionError(
                f"option {name}: timestamp {value} for {partition_name(topic, partition)} is negative; "
                f"give milliseconds since the epoch, like {example}"
            )
    return Timestamps(per_partition=per_partition)


def _json_offsets(name: str, raw: str, lowest: int) -> tuple[tuple[TopicPartition, int], ...]:
    """Offsets per partition, each >= 0 or one of the markers down to `lowest` (-2 earliest, -1 latest)."""
    offsets = _per_partition(name, raw, '{"orders": {"0": 23, "1": -2}}')
    markers = ", ".join(
        f"{marker} ({word})" for marker, word in ((EARLIEST, "earliest"), (LATEST, "latest")) if marker >= lowest
    )
    for (topic, partition), value in offsets:
        if value < lowest:
            raise OptionError(
                f"option {name}: offset {value} for {partition_name(topic, partition)} is not valid; "
                f"use an offset >= 0, {markers}"
            )
    return offsets


def _check_names(options: Mapping[str, str]) -> None:
    """Refuse option names the source does not know, suggesting the closest; note the built-in's ignored ones."""
    listing = (
        f"kafkasource's options are {', '.join(SOURCE_OPTIONS)}, kafka.<setting> for librdkafka, "
        "schema.registry.<setting> for the schema registry client and oauthProvider.<argument> for the token provider"
    )
    check_names(options, SOURCE_OPTIONS, listing, accepted=IGNORED_BUILTIN_OPTIONS)
    for name in options:
        if name in IGNORED_BUILTIN_OPTIONS:
            log.info("option %s has no effect on kafkasource: %s", name, IGNORED_BUILTIN_OPTIONS[name])
    strategy = option_text(options, "startingOffsetsByTimestampStrategy")
    if strategy is not None and strategy.lower() != "latest":
        raise OptionError(
            f"option startingOffsetsByTimestampStrategy={shown_value(strategy)} is not supported: a partition "
            "with no record at or after the timestamp starts at its log end (the built-in's 'latest' "
            "strategy); remove the option or set it to latest"
        )


def parse_options(raw_options: Mapping[str, str], streaming: bool | None = None) -> SourceOptions:
    """Validate the option map; raise OptionError naming the first bad option.

    The map means the same to a stream and a batch read; `streaming` (when the caller knows) also applies that
    read's defaults and refusals, as for_stream() and for_batch() do.
    """
    options = {str(k).lower(): v for k, v in raw_options.items()}
    _check_names(options)
    bootstrap = read_bootstrap_servers(options)
    subscription = _subscription(options)
    group_id = option_text(options, "kafka.group.id")
    reset = read_choice(options, "kafka.auto.offset.reset", get_args(AutoOffsetReset), "latest")
    kafka_config = kafka_settings.kafka_config(options)
    starting = _starting_spec(options, group_id, reset)
    ending = _ending_spec(options)
    commit_mode = _commit_mode(options, group_id)
    isolation = read_choice(
        options, "kafka.isolation.level", ("read_committed", "read_uncommitted"), "read_uncommitted"
    )
    max_per_trigger, min_per_trigger = _per_trigger_bounds(options)
    read_path = read_path_choice(options, "readPath")
    delay_raw = option_text(options, "maxTriggerDelay")
    max_trigger_delay_ms = parse_duration_ms("maxTriggerDelay", delay_raw) if delay_raw else 15 * 60_000

    parsed = SourceOptions(
        bootstrap_servers=bootstrap,
        subscription=subscription,
        group_id=group_id,
        starting=starting,
        ending=ending,
        auto_offset_reset=reset,
        commit_mode=commit_mode,
        commit_timeout_ms=_positive_int_or(options, "commitTimeoutMs", 60_000, high=MAX_TIMEOUT_MS),
        fail_on_data_loss=read_bool(options, "failOnDataLoss", True),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=max_trigger_delay_ms,
        min_partitions=_positive_int(options, "minPartitions", high=MAX_PARTITION),
        pack_records_per_task=_positive_int(options, "packRecordsPerTask"),
        include_headers=read_bool(options, "includeHeaders", False),
        read_path=read_path,
        poll_timeout_ms=_positive_int_or(options, "kafkaConsumer.pollTimeoutMs", 120_000, high=MAX_TIMEOUT_MS),
        read_committed=isolation == "read_committed",
        metadata_refresh_interval_ms=_whole_number_option(
            options, "metadataRefreshIntervalMs", DEFAULT_METADATA_REFRESH_INTERVAL_MS
        ),
        kafka_config=kafka_config,
        token_provider=sign_in.read_token_provider(options, bootstrap),
        # last: the only check that asks a server (the registry, for the reader schemas)
        # the decoding options with a value, as option_text reads them
        decoding=parse_decoding(
            {n: v for n in options if (v := option_text(options, n)) is not None}, subscription, read_path
        ),
    )
    if streaming is None:
        return parsed
    return parsed.for_stream() if streaming else parsed.for_batch()


def _commit_mode(options: Mapping[str, str], group_id: str | None) -> CommitMode:
    commit_mode = read_choice(options, "commitMode", get_args(CommitMode), "sync" if group_id else "none")
    if commit_mode != "none" and group_id is None:
        raise OptionError(
            f"commitMode={commit_mode} needs kafka.group.id: the consumer group to commit offsets to; "
            "set kafka.group.id or use commitMode=none"
        )
    return commit_mode


def _per_trigger_bounds(options: Mapping[str, str]) -> tuple[int | None, int | None]:
    """maxOffsetsPerTrigger and minOffsetsPerTrigger, the minimum no higher than the maximum."""
    max_per_trigger = _positive_int(options, "maxOffsetsPerTrigger")
    min_per_trigger = _positive_int(options, "minOffsetsPerTrigger")
    if max_per_trigger is not None and min_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise OptionError(
            f"option minOffsetsPerTrigger ({min_per_trigger}) is above maxOffsetsPerTrigger "
            f"({max_per_trigger}); lower the minimum or raise the maximum"
        )
    return max_per_trigger, min_per_trigger
