"""parse_options(): every bad option is rejected at load() with a message naming it; no broker, no Spark."""

from __future__ import annotations

import pytest

from kafkasource.cluster.settings import UNSUPPORTED_KAFKA_SETTINGS
from kafkasource.errors import OptionError
from kafkasource.options import SourceOptions, parse_options
from kafkasource.planning.offsets import Committed, Earliest, Latest, OutsideLog, SpecificOffsets, Timestamps
from kafkasource.planning.subscription import Assign, Subscribe, SubscribePattern
from kafkasource.runtime.secrets import is_secret, redact
from tests.support.source_options import BASE, for_read, parse


def parse_raw(options: dict[str, str], streaming: bool = True) -> SourceOptions:
    return for_read(parse_options({**BASE, **options}), streaming)


def error_of(options: dict[str, str], streaming: bool = True, base: dict[str, str] | None = None) -> str:
    with pytest.raises(OptionError) as info:
        for_read(parse_options({**(BASE if base is None else base), **options}), streaming)
    return str(info.value)


# --- bootstrap servers and subscription ---------------------------------------------------------------

@pytest.mark.parametrize("options", [{"subscribe": "orders"},
                                     {"subscribe": "orders", "kafka.bootstrap.servers": "   "}])
def test_missing_bootstrap_servers(options):
    message = error_of(options, base={})
    assert "option kafka.bootstrap.servers is required" in message
    assert "host1:9092,host2:9092" in message


def test_bootstrap_servers_are_stripped_and_kept():
    opts = parse_options({"kafka.bootstrap.servers": " a:1,b:2 ", "subscribe": "t"})
    assert opts.bootstrap_servers == "a:1,b:2"
    assert opts.client_config() == {"bootstrap.servers": "a:1,b:2"}
    assert opts.client_config(**{"group.id": "g"}) == {"bootstrap.servers": "a:1,b:2", "group.id": "g"}


def test_no_subscription_option():
    message = error_of({}, base={"kafka.bootstrap.servers": "b:9092"})
    assert "exactly one of the options subscribe, subscribePattern or assign must be set" in message
    assert "none was given" in message


@pytest.mark.parametrize("options, named", [
    ({"subscribe": "a", "assign": '{"a": [0]}'}, "subscribe and assign were given"),
    ({"subscribe": "a", "subscribePattern": "a.*"}, "subscribe and subscribePattern were given"),
    ({"subscribePattern": "a.*", "assign": '{"a": [0]}'}, "subscribePattern and assign were given"),
    ({"subscribe": "a", "subscribePattern": "a.*", "assign": '{"a": [0]}'},
     "subscribe and subscribePattern and assign were given"),
])
def test_several_subscription_options(options, named):
    message = error_of(options, base={"kafka.bootstrap.servers": "b:9092"})
    assert "exactly one of the options subscribe, subscribePattern or assign" in message
    assert named in message


def test_subscribe_lists_topics():
    assert parse(subscribe=" a, b ,,c ").subscription == Subscribe(("a", "b", "c"))


def test_subscribe_with_only_commas():
    message = error_of({"subscribe": " , ,"})
    assert "option subscribe must list topics separated by commas" in message
    assert "got ', ,'" in message


def test_subscribe_pattern_is_kept():
    opts = parse_options({"kafka.bootstrap.servers": "b:9092", "subscribePattern": "orders-.*"})
    assert opts.subscription == SubscribePattern("orders-.*")


@pytest.mark.parametrize("pattern", ["(", "orders[", "*x"])
def test_bad_regex(pattern):
    message = error_of({"subscribePattern": pattern}, base={"kafka.bootstrap.servers": "b:9092"})
    assert message.startswith("option subscribePattern is not a valid regular expression")
    assert repr(pattern) in message


def test_assign_is_sorted_and_deduplicated():
    opts = parse_options({"kafka.bootstrap.servers": "b:9092", "assign": '{"t": [2, 0, 2], "a": [1]}'})
    assert opts.subscription == Assign((("a", 1), ("t", 0), ("t", 2)))


@pytest.mark.parametrize("raw, fragments", [
    ('{"t": [0', ["option assign is not valid JSON", "'{\"t\": [0'"]),
    ('["t", 0]', ['option assign must be a JSON object like {"topic": {"0": 42}}']),
    ('{"t": 0}', ['option assign must map each topic to a list of partition numbers, like {"orders": [0, 1]}',
                  "got 0 for topic 't'"]),
    ('{"t": [-1]}', ["option assign must map each topic to a list of partition numbers", "got [-1] for topic 't'"]),
    ('{"t": ["0"]}', ["option assign must map each topic to a list of partition numbers", "got ['0'] for topic 't'"]),
    ('{"t": [1.5]}', ["option assign must map each topic to a list of partition numbers"]),
    ('{"t": [true]}', ["option assign must map each topic to a list of partition numbers",
                       "got [True] for topic 't'"]),
    ('{"t": []}', ['option assign names no partitions; write it like {"orders": [0, 1]}']),
    ("{}", ["option assign names no partitions"]),
])
def test_bad_assign(raw, fragments):
    message = error_of({"assign": raw}, base={"kafka.bootstrap.servers": "b:9092"})
    for fragment in fragments:
        assert fragment in message


# --- option names are case-insensitive ----------------------------------------------------------------

def test_option_names_are_case_insensitive():
    opts = parse_options({"KAFKA.BOOTSTRAP.SERVERS": "b:9092", "SubscribePattern": "o.*",
                          "Kafka.Group.Id": "etl", "STARTINGOFFSETS": "earliest", "maxoffsetspertrigger": "10",
                          "MINPARTITIONS": "4", "CommitMode": "ASYNC", "Kafka.Client.Id": "Me",
                          "KAFKA.AUTO.OFFSET.RESET": "EARLIEST", "includeheaders": "TRUE"})
    assert opts.bootstrap_servers == "b:9092"
    assert opts.subscription == SubscribePattern("o.*")
    assert opts.group_id == "etl"
    assert opts.starting == Earliest()
    assert opts.max_offsets_per_trigger == 10
    assert opts.min_partitions == 4
    assert opts.commit_mode == "async"
    assert opts.auto_offset_reset == "earliest"
    assert opts.include_headers is True
    assert opts.kafka_config == {"client.id": "Me"}  # the name lower-cased, the value untouched


def test_lower_cased_names_as_spark_passes_them():
    opts = parse_options({"kafka.bootstrap.servers": "b:9092", "subscribepattern": "x", "startingoffsets": "latest",
                          "failondataloss": "false", "kafkaconsumer.polltimeoutms": "5000"})
    assert opts.subscription == SubscribePattern("x")
    assert opts.starting == Latest()
    assert opts.fail_on_data_loss is False
    assert opts.poll_timeout_ms == 5000


# --- defaults -----------------------------------------------------------------------------------------

def test_defaults_without_group():
    opts = parse()
    assert opts.group_id is None
    assert opts.starting == Latest()
    assert opts.ending is None
    assert opts.auto_offset_reset == "latest"
    assert opts.commit_mode == "none"
    assert opts.commit_timeout_ms == 60_000
    assert opts.fail_on_data_loss is True
    assert opts.max_offsets_per_trigger is None
    assert opts.min_offsets_per_trigger is None
    assert opts.max_trigger_delay_ms == 15 * 60_000
    assert opts.min_partitions is None
    assert opts.include_headers is False
    assert opts.poll_timeout_ms == 120_000
    assert opts.read_committed is False
    assert opts.kafka_config == {}


def test_defaults_with_group():
    opts = parse(**{"kafka.group.id": "etl"})
    assert opts.group_id == "etl"
    assert opts.starting == Committed("latest")
    assert opts.commit_mode == "sync"
    assert "group.id" not in opts.kafka_config


def test_committed_default_follows_auto_offset_reset():
    opts = parse(**{"kafka.group.id": "etl", "kafka.auto.offset.reset": "earliest"})
    assert opts.starting == Committed("earliest")
    assert opts.auto_offset_reset == "earliest"
    assert "auto.offset.reset" not in opts.kafka_config


def test_batch_defaults_without_group():
    opts = parse(streaming=False)
    assert opts.starting == Earliest()
    assert opts.ending == Latest()
    assert opts.commit_mode == "none"


def test_the_map_is_parsed_as_given_then_each_read_puts_in_its_defaults():
    parsed = parse_options({**BASE, "kafka.group.id": "etl", "kafka.auto.offset.reset": "earliest"})
    assert (parsed.starting, parsed.ending) == (None, None)
    assert (parsed.for_stream().starting, parsed.for_stream().ending) == (Committed("earliest"), None)
    assert (parsed.for_batch().starting, parsed.for_batch().ending) == (Earliest(), Latest())
    given = parse_options({**BASE, "startingOffsets": "latest", "endingOffsets": '{"orders": {"0": 5}}'}).for_batch()
    assert given.starting == Latest() and given.ending.offsets == ((("orders", 0), 5),)


def test_streaming_argument_applies_that_reads_defaults():
    for streaming in (True, False):
        parsed = parse_options({**BASE, "kafka.group.id": "etl"})
        assert parse_options({**BASE, "kafka.group.id": "etl"}, streaming=streaming) == for_read(parsed, streaming)


def test_blank_group_id_counts_as_unset():
    opts = parse(**{"kafka.group.id": "  "})
    assert opts.group_id is None
    assert opts.commit_mode == "none"
    assert opts.starting == Latest()


# --- kafka.auto.offset.reset, commitMode --------------------------------------------------------------

@pytest.mark.parametrize("value", ["smallest", "largest", "error", "nothing"])
def test_bad_auto_offset_reset(value):
    message = error_of({"kafka.auto.offset.reset": value})
    assert message == f"option kafka.auto.offset.reset must be one of earliest, latest, none, got {value!r}"


@pytest.mark.parametrize("value", ["earliest", "latest", "none"])
def test_auto_offset_reset_values(value):
    opts = parse(**{"kafka.group.id": "g", "kafka.auto.offset.reset": value.upper()})
    assert opts.auto_offset_reset == value
    assert opts.starting == Committed(value)


@pytest.mark.parametrize("mode", ["sync", "async", "SYNC"])
def test_commit_mode_without_group_is_an_error(mode):
    message = error_of({"commitMode": mode})
    assert f"commitMode={mode.lower()} needs kafka.group.id" in message
    assert "set kafka.group.id or use commitMode=none" in message


@pytest.mark.parametrize("mode", ["sync", "async", "none"])
def test_commit_mode_with_group(mode):
    assert parse(**{"kafka.group.id": "g", "commitMode": mode}).commit_mode == mode


def test_commit_mode_none_without_group():
    assert parse(commitMode="none").commit_mode == "none"


def test_bad_commit_mode():
    message = error_of({"kafka.group.id": "g", "commitMode": "eventually"})
    assert message == "option commitMode must be one of sync, async, none, got 'eventually'"


# --- numbers, durations, booleans ---------------------------------------------------------------------

NUMBER_OPTIONS = ["maxOffsetsPerTrigger", "minOffsetsPerTrigger", "minPartitions", "kafkaConsumer.pollTimeoutMs",
                  "commitTimeoutMs"]


@pytest.mark.parametrize("name", NUMBER_OPTIONS)
@pytest.mark.parametrize("value", ["0", "-1", "-500"])
def test_non_positive_numbers(name, value):
    assert error_of({name: value}) == f"option {name} must be a positive number, got {value}"


@pytest.mark.parametrize("name", NUMBER_OPTIONS)
@pytest.mark.parametrize("value", ["ten", "1.5", "1e3"])
def test_non_numbers(name, value):
    assert error_of({name: value}) == f"option {name} must be a whole number, got {value!r}"


def test_number_options_are_read():
    opts = parse(maxOffsetsPerTrigger="1000", minOffsetsPerTrigger=" 10 ", minPartitions="8",
                 commitTimeoutMs="2500", **{"kafkaConsumer.pollTimeoutMs": "700"})
    assert (opts.max_offsets_per_trigger, opts.min_offsets_per_trigger, opts.min_partitions,
            opts.commit_timeout_ms, opts.poll_timeout_ms) == (1000, 10, 8, 2500, 700)


def test_min_above_max_per_trigger():
    message = error_of({"minOffsetsPerTrigger": "11", "maxOffsetsPerTrigger": "10"})
    assert message == ("option minOffsetsPerTrigger (11) is above maxOffsetsPerTrigger (10); "
                       "lower the minimum or raise the maximum")


def test_min_equal_to_max_per_trigger_is_fine():
    opts = parse(minOffsetsPerTrigger="10", maxOffsetsPerTrigger="10")
    assert (opts.min_offsets_per_trigger, opts.max_offsets_per_trigger) == (10, 10)


@pytest.mark.parametrize("raw, ms", [("500ms", 500), ("30s", 30_000), ("15m", 900_000), ("1h", 3_600_000),
                                     ("2 minutes", 120_000), ("250", 250), ("10 SEC", 10_000), ("3hours", 10_800_000)])
def test_max_trigger_delay(raw, ms):
    assert parse(maxTriggerDelay=raw).max_trigger_delay_ms == ms


@pytest.mark.parametrize("raw", ["soon", "-5s", "5 fortnights", "1.5h", "m15", "10 s s"])
def test_bad_max_trigger_delay(raw):
    assert error_of({"maxTriggerDelay": raw}) == (
        f"option maxTriggerDelay must be a duration such as 500ms, 30s, 15m or 1h, got {raw!r}")


@pytest.mark.parametrize("name, field", [("failOnDataLoss", "fail_on_data_loss"),
                                         ("includeHeaders", "include_headers")])
def test_booleans(name, field):
    assert getattr(parse(**{name: "False"}), field) is False
    assert getattr(parse(**{name: "TRUE"}), field) is True
    assert error_of({name: "yes"}) == f"option {name} must be true or false, got 'yes'"


def test_isolation_level():
    opts = parse(**{"kafka.isolation.level": "read_committed"})
    assert opts.read_committed is True
    assert opts.kafka_config == {"isolation.level": "read_committed"}
    assert parse(**{"kafka.isolation.level": "READ_COMMITTED"}).read_committed is True
    assert parse(**{"kafka.isolation.level": "read_uncommitted"}).read_committed is False
    message = error_of({"kafka.isolation.level": "serializable"})
    assert "kafka.isolation.level='serializable'" in message


# --- kafka.* settings ---------------------------------------------------------------------------------

def test_other_kafka_options_reach_librdkafka_with_prefix_stripped():
    opts = parse(**{"kafka.group.id": "g", "kafka.auto.offset.reset": "earliest", "kafka.enable.auto.commit": "false",
                    "kafka.client.id": "etl-1", "kafka.fetch.min.bytes": "1024",
                    "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
                    "kafka.sasl.username": "alice", "kafka.sasl.password": "hunter2",
                    "kafka.socket.keepalive.enable": "true"})
    assert opts.kafka_config == {"client.id": "etl-1", "fetch.min.bytes": "1024",
                                 "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                 "sasl.username": "alice", "sasl.password": "hunter2",
                                 "socket.keepalive.enable": "true"}
    assert opts.client_config(**{"group.id": "x"}) == {**opts.kafka_config, "bootstrap.servers": "broker:9092",
                                                       "group.id": "x"}


def test_non_kafka_options_do_not_reach_librdkafka():
    opts = parse(maxOffsetsPerTrigger="5", failOnDataLoss="false", commitMode="none")
    assert opts.kafka_config == {}


def test_unknown_options_are_refused_naming_the_closest_known_one():
    assert error_of({"startingOffset": "earliest"}).startswith(
        "unknown option 'startingoffset': did you mean startingOffsets? kafkasource's options are subscribe, ")
    assert error_of({"path": "/tmp/x"}).startswith("unknown option 'path': kafkasource's options are subscribe, ")


@pytest.mark.parametrize("name", ["fetchOffset.numRetries", "fetchOffset.retryIntervalMs", "groupIdPrefix"])
def test_builtin_options_without_meaning_here_are_accepted(name):
    assert parse(**{name: "3"}).kafka_config == {}


def test_starting_offsets_by_timestamp_strategy_latest_is_what_we_do():
    assert parse(startingOffsetsByTimestampStrategy="latest").starting == Latest()
    assert error_of({"startingOffsetsByTimestampStrategy": "error"}) == (
        "option startingOffsetsByTimestampStrategy='error' is not supported: a partition with no record at or after "
        "the timestamp starts at its log end (the built-in's 'latest' strategy); remove the option or set it to latest")


@pytest.mark.parametrize("setting", sorted(UNSUPPORTED_KAFKA_SETTINGS))
def test_java_only_settings_are_rejected_with_a_hint(setting):
    message = error_of({f"kafka.{setting}": "some-value"})
    assert message == (f"option kafka.{setting} is a Java client setting that librdkafka does not support: "
                       f"{UNSUPPORTED_KAFKA_SETTINGS[setting]}")
    assert "some-value" not in message


@pytest.mark.parametrize("setting, hint", [
    ("key.deserializer", "keys are always returned as binary; decode them in Spark (CAST, from_json, from_avro)"),
    ("value.deserializer", "values are always returned as binary"),
    ("sasl.jaas.config", "librdkafka takes credentials as kafka.sasl.username and kafka.sasl.password"),
    ("ssl.truststore.location", "give the CA certificate in PEM form as kafka.ssl.ca.location"),
    ("max.poll.records", "use maxOffsetsPerTrigger to bound a micro-batch"),
])
def test_java_only_hints(setting, hint):
    message = error_of({f"KAFKA.{setting.upper()}": "x"})
    assert f"option kafka.{setting} is a Java client setting that librdkafka does not support" in message
    assert hint in message


def test_jaas_config_value_is_never_echoed():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="hunter2";'
    message = error_of({"kafka.sasl.jaas.config": jaas})
    assert "hunter2" not in message
    assert "kafka.sasl.username and kafka.sasl.password" in message


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes"])
def test_enable_auto_commit_true_is_rejected(value):
    message = error_of({"kafka.enable.auto.commit": value})
    assert "option kafka.enable.auto.commit cannot be true" in message
    assert "use commitMode (sync, async or none)" in message


@pytest.mark.parametrize("value", ["false", "False", " false "])
def test_enable_auto_commit_false_is_accepted(value):
    opts = parse(**{"kafka.enable.auto.commit": value})
    assert opts.kafka_config == {}


@pytest.mark.parametrize("setting", ["enable.auto.offset.store", "enable.partition.eof"])
def test_managed_settings_are_rejected(setting):
    assert error_of({f"kafka.{setting}": "true"}) == f"option kafka.{setting} is managed by the source; remove it"


def test_unknown_kafka_setting_rejected_by_librdkafka_without_its_value():
    message = error_of({"kafka.no.such.setting": "some-value"})
    assert message.startswith('librdkafka rejected kafka.no.such.setting: No such configuration property: '
                              '"no.such.setting". Options prefixed with kafka. are passed to librdkafka; see its '
                              'CONFIGURATION.md')
    assert "some-value" not in message


@pytest.mark.parametrize("typo, meant", [("sasl.pasword", "sasl.password"), ("ssl.key.pasword", "ssl.key.password"),
                                         ("sasl.oauthbearer.client.secrett", "sasl.oauthbearer.client.secret"),
                                         ("fetch.max.byte", "fetch.max.bytes")])
def test_a_misspelled_setting_names_the_closest_real_one_and_never_echoes_its_value(typo, meant):
    secret = "Tr0ub4dor&3-horse"
    message = error_of({f"kafka.{typo}": secret})
    assert message == (f'librdkafka rejected kafka.{typo}: No such configuration property: "{typo}". Did you mean '
                       f"kafka.{meant}? Options prefixed with kafka. are passed to librdkafka; see its "
                       "CONFIGURATION.md for the names it accepts")
    assert secret not in message
    # the same search finds the value where librdkafka knows the setting and the value is no secret
    assert secret in error_of({"kafka.security.protocol": secret})


def test_every_setting_name_kafkasource_suggests_is_known_to_the_installed_librdkafka():
    from confluent_kafka import Consumer, KafkaException

    from kafkasource.cluster.known_settings import SETTINGS

    unknown = []
    for name in sorted(SETTINGS):
        try:
            Consumer({"group.id": "g", "log_level": 0, name: "\x01"}).close()
        except KafkaException as exc:
            if "No such configuration property" in exc.args[0].str():
                unknown.append(name)
        except (TypeError, ValueError):  # a known setting that wants another kind of value
            pass
    assert len(SETTINGS) > 150 and "sasl.password" in SETTINGS
    assert unknown == []


def test_bad_enum_value_rejected_by_librdkafka():
    message = error_of({"kafka.security.protocol": "carrier-pigeon"})
    assert message.startswith("librdkafka rejected kafka.security.protocol='carrier-pigeon': ")
    assert 'Invalid value "carrier-pigeon" for configuration property "security.protocol"' in message


def test_bad_number_rejected_by_librdkafka():
    message = error_of({"kafka.fetch.min.bytes": "lots"})
    assert message.startswith("librdkafka rejected kafka.fetch.min.bytes='lots': ")


# --- secrets ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, named", [
    ({"kafka.no.such.setting": "x"}, "librdkafka rejected kafka.no.such.setting: "),
    ({"kafka.security.protocol": "bogus"}, "librdkafka rejected kafka.security.protocol='bogus': "),
    ({"maxOffsetsPerTrigger": "0"}, "option maxOffsetsPerTrigger must be a positive number, got 0"),
    ({"startingOffsets": "soonest"}, "got 'soonest'"),
    ({"kafka.sasl.jaas.config": "x"}, "option kafka.sasl.jaas.config is a Java client setting"),
    ({"commitMode": "sync"}, "commitMode=sync needs kafka.group.id"),
])
def test_secret_is_not_shown_when_another_option_is_bad(bad, named):
    options = {"kafka.sasl.username": "alice", "kafka.sasl.password": "hunter2", "kafka.sasl.mechanism": "PLAIN", **bad}
    message = error_of(options)
    assert named in message  # the bad option's own error, values shown where it shows them
    assert "hunter2" not in message
    # nothing of the password is in it, not even transformed: another password gives the same message
    assert error_of({**options, "kafka.sasl.password": "correct-horse"}) == message


@pytest.mark.parametrize("options, named, shown", [
    # an unknown setting whose name says it holds a secret; a known setting that is none shows a value it rejects
    ({"kafka.my.secret.password": "hunter2"}, "librdkafka rejected kafka.my.secret.password: ",
     {"kafka.fetch.min.bytes": "hunter2"}),
    # a PEM key librdkafka cannot parse; a certificate (no secret) it cannot parse is shown
    ({"kafka.security.protocol": "ssl", "kafka.ssl.key.pem": "hunter2"}, "librdkafka rejected kafka.ssl.key.pem",
     {"kafka.security.protocol": "ssl", "kafka.ssl.certificate.pem": "hunter2"}),
])
def test_invalid_secret_value_is_not_echoed(options, named, shown):
    message = error_of(options)
    assert named in message
    assert "hunter2" not in message
    # the same search finds the same value in the same kind of error when the setting holds no secret
    assert "='hunter2': " in error_of(shown)


@pytest.mark.parametrize("name", ["sasl.password", "ssl.key.password", "ssl.keystore.password", "ssl.key.pem",
                                  "sasl.oauthbearer.client.secret", "sasl.jaas.config",
                                  "sasl.oauthbearer.assertion.private.key.pem",
                                  "sasl.oauthbearer.assertion.private.key.passphrase",
                                  "sasl.oauthbearer.client.credentials.client.secret", "SASL.PASSWORD"])
def test_secret_names(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", ["sasl.username", "client.id", "security.protocol", "ssl.ca.location"])
def test_non_secret_names(name):
    assert not is_secret(name)


def test_redact():
    assert redact({"sasl.username": "alice", "sasl.password": "hunter2", "ssl.key.pem": "KEY"}) == {
        "sasl.username": "alice", "sasl.password": "*****", "ssl.key.pem": "*****"}


def test_repr_never_shows_kafka_config():
    opts = parse(**{"kafka.sasl.username": "alice", "kafka.sasl.password": "hunter2",
                    "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN"})
    assert opts.kafka_config["sasl.password"] == "hunter2"
    text = repr(opts)
    assert "kafka_config" not in text
    assert "hunter2" not in text
    assert "alice" not in text
    assert "bootstrap_servers='broker:9092'" in text
    assert "hunter2" not in str(opts)


# --- startingOffsets / endingOffsets ------------------------------------------------------------------

def test_starting_offsets_keywords():
    assert parse(startingOffsets="EARLIEST").starting == Earliest()
    assert parse(startingOffsets="latest").starting == Latest()
    assert parse(**{"startingOffsets": "committed", "kafka.group.id": "g",
                    "kafka.auto.offset.reset": "none"}).starting == Committed("none")


def test_starting_offsets_committed_without_group():
    message = error_of({"startingOffsets": "committed"})
    assert message == ("startingOffsets=committed needs kafka.group.id: the group whose committed offsets to "
                       "start from")


def test_unknown_starting_offsets():
    with pytest.raises(OptionError) as info:
        parse_options({**BASE, "startingOffsets": "newest"})
    assert str(info.value) == ("option startingOffsets must be earliest, latest, committed, or JSON like "
                               "{\"orders\": {\"0\": 23}}; got 'newest'")


def test_unknown_ending_offsets():
    message = error_of({"endingOffsets": "forever"}, streaming=False)
    assert message == "option endingOffsets must be latest, or JSON like {\"orders\": {\"0\": 23}}; got 'forever'"


@pytest.mark.parametrize("value, word", [("earliest", "earliest"), ("committed", "committed")])
def test_ending_offsets_cannot_be_earliest_or_committed(value, word):
    message = error_of({"endingOffsets": value, "kafka.group.id": "g"}, streaming=False)
    assert message == f"option endingOffsets cannot be {word}; use latest or JSON offsets"


@pytest.mark.parametrize("option, value", [("endingOffsets", "latest"), ("endingOffsets", '{"orders": {"0": 5}}'),
                                           ("endingTimestamp", "1700000000000"),
                                           ("endingOffsetsByTimestamp", '{"orders": {"0": 1700000000000}}')])
def test_ending_options_rejected_for_streaming(option, value):
    message = error_of({option: value})
    assert message == ("options endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch reads "
                       "(spark.read); a stream has no end")


def test_ending_offsets_for_batch():
    assert parse(streaming=False, endingOffsets="latest").ending == Latest()
    opts = parse(streaming=False, endingOffsets='{"orders": {"0": 5, "1": -1}}')
    assert opts.ending == SpecificOffsets(((("orders", 0), 5), (("orders", 1), -1)), default=Latest(),
                                          outside_log=OutsideLog.NEAREST_BOUND)
    # kafka.auto.offset.reset governs starts only: an end outside the log is moved to its nearest bound
    lenient = parse(streaming=False, endingOffsets='{"orders": {"0": 5}}', **{"kafka.auto.offset.reset": "earliest"})
    assert lenient.ending.outside_log is OutsideLog.NEAREST_BOUND


def test_json_starting_offsets():
    opts = parse(startingOffsets='{"orders": {"0": 23, "1": -2, "2": -1}, "refunds": {"4": 0}}',
                 **{"kafka.auto.offset.reset": "earliest"})
    assert opts.starting == SpecificOffsets(
        ((("orders", 0), 23), (("orders", 1), -2), (("orders", 2), -1), (("refunds", 4), 0)),
        default=Latest(), reset="earliest", outside_log=OutsideLog.FOLLOW_RESET)
    assert str(opts.starting) == '{"orders": {"0": 23, "1": -2, "2": -1}, "refunds": {"4": 0}}'


@pytest.mark.parametrize("raw, fragments", [
    ('{"orders": {"0": -3}}', ["option startingOffsets: offset -3 for orders-0 is not valid; use an offset >= 0, "
                               "-2 (earliest), -1 (latest)"]),
    ('{"orders": {"x": 5}}', ["option startingOffsets: partition 'x' of topic 'orders' must be a number mapped to a "
                              'number, like {"orders": {"0": 23, "1": -2}}']),
    ('{"orders": {"0": "five"}}', ["option startingOffsets: partition '0' of topic 'orders' must be a number"]),
    ('{"orders": {"0": null}}', ["option startingOffsets: partition '0' of topic 'orders' must be a number"]),
    ('{"orders": {"0": [1]}}', ["option startingOffsets: partition '0' of topic 'orders' must be a number"]),
    ('{"orders": {"0": 1.5}}', ["option startingOffsets: partition '0' of topic 'orders' must be a number"]),
    ('{"orders": {"0": true}}', ["option startingOffsets: partition '0' of topic 'orders' must be a number"]),
    ('{"orders": [0, 1]}', ['option startingOffsets must map each topic to {partition: value}, like '
                            '{"orders": {"0": 23, "1": -2}}', "got [0, 1] for topic 'orders'"]),
    ('{"orders": {"0": 1}', ["option startingOffsets is not valid JSON", "'{\"orders\": {\"0\": 1}'"]),
])
def test_bad_json_starting_offsets(raw, fragments):
    message = error_of({"startingOffsets": raw})
    for fragment in fragments:
        assert fragment in message


def test_ending_offsets_reject_earliest_marker():
    message = error_of({"endingOffsets": '{"orders": {"0": -2}}'}, streaming=False)
    assert message == "option endingOffsets: offset -2 for orders-0 is not valid; use an offset >= 0, -1 (latest)"


def test_starting_timestamp():
    assert parse(startingTimestamp="1700000000000").starting == Timestamps(everywhere=1_700_000_000_000)
    assert parse(streaming=False, endingTimestamp="1700000000001").ending == Timestamps(everywhere=1_700_000_000_001)


@pytest.mark.parametrize("value", ["yesterday", "2024-01-01", "1.5"])
def test_bad_starting_timestamp(value):
    assert error_of({"startingTimestamp": value}) == (
        f"option startingTimestamp must be milliseconds since the epoch, got {value!r}")


def test_starting_offsets_by_timestamp():
    opts = parse(startingOffsetsByTimestamp='{"orders": {"0": 1700000000000, "1": 1700000000500}}')
    assert opts.starting == Timestamps(per_partition=((("orders", 0), 1_700_000_000_000),
                                                      (("orders", 1), 1_700_000_000_500)))


def test_bad_starting_offsets_by_timestamp():
    message = error_of({"startingOffsetsByTimestamp": '{"orders": {"0": "noon"}}'})
    assert message == ("option startingOffsetsByTimestamp: partition '0' of topic 'orders' must be a number mapped "
                       'to a number, like {"orders": {"0": 1700000000000}}')


@pytest.mark.parametrize("options, named", [
    ({"startingOffsets": "earliest", "startingTimestamp": "1"}, "options startingTimestamp and startingOffsets"),
    ({"startingOffsetsByTimestamp": '{"t": {"0": 1}}', "startingTimestamp": "1"},
     "options startingTimestamp and startingOffsetsByTimestamp"),
])
def test_only_one_starting_option(options, named):
    assert error_of(options) == f"{named} both say where to start; set only one"


def test_only_one_ending_option():
    message = error_of({"endingOffsets": "latest", "endingTimestamp": "1"}, streaming=False)
    assert message == "options endingTimestamp and endingOffsets both say where to end; set only one"


def test_option_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse_options({"subscribe": "x"})


# --- readPath --------------------------------------------------------------------------------------------

def test_read_path_defaults_to_auto_and_takes_any_case():
    assert parse().read_path == "auto"
    assert parse(readPath="Python").read_path == "python"


def test_bad_read_path():
    assert error_of({"readPath": "rust"}) == "option readPath must be one of auto, native, python, got 'rust'"


def test_read_path_native_needs_the_extension(monkeypatch):
    from kafkasource.runtime import native_extension
    monkeypatch.setattr(native_extension, "EXTENSION", None)  # as installed without a Rust toolchain
    assert error_of({"readPath": "native"}).startswith(
        "option readPath is native, but kafkasource's native extension is not built here: install kafkasource "
        "where a Rust toolchain is present (pip install builds it), or set readPath to auto")
    # accepted without the extension: the executors then read with confluent-kafka
    assert parse(readPath="auto").fetch_config().wants_native() is False


# --- one parse per load() -------------------------------------------------------------------------------

@pytest.mark.parametrize("make_reader", ["streamReader", "reader"])
def test_a_load_checks_the_options_with_librdkafka_once(monkeypatch, make_reader):
    """Spark builds the DataSource once per load() and pickles it to where a reader is made; neither reader
    parses the options again (a parse builds a throwaway librdkafka client)."""
    import pickle

    from pyspark.sql.types import StructType

    from kafkasource.cluster import settings as kafka_settings
    from kafkasource.source import KafkaDataSource

    checked = []
    check = kafka_settings._check_librdkafka_accepts
    monkeypatch.setattr(kafka_settings, "_check_librdkafka_accepts", lambda config: checked.append(check(config)))

    source = KafkaDataSource({**BASE, "kafka.group.id": "etl", "kafka.client.id": "c"})
    source.schema()
    shipped = pickle.loads(pickle.dumps(source))
    made = getattr(shipped, make_reader)(StructType())

    assert len(checked) == 1
    assert made.options.starting == (Committed("latest") if make_reader == "streamReader" else Earliest())


def test_a_stream_refuses_an_end_when_its_reader_is_made():
    from pyspark.sql.types import StructType

    from kafkasource.source import KafkaDataSource

    source = KafkaDataSource({**BASE, "endingOffsets": "latest"})
    assert source.reader(StructType()).options.ending == Latest()
    with pytest.raises(OptionError, match=r"^options endingOffsets, endingTimestamp and endingOffsetsByTimestamp "
                                          r"are for batch reads \(spark.read\); a stream has no end$"):
        source.streamReader(StructType())


def test_a_nul_in_the_bootstrap_servers_is_refused_naming_the_option():
    assert error_of({"kafka.bootstrap.servers": "127.0.0.1:9\x00092"}) == (
        "option kafka.bootstrap.servers holds a NUL character (\\x00); remove it")
