"""Property: every bad option map is refused by parse_options (what load() runs, once) with an
OptionError naming the bad option, never a bare Python error.

Each generated map is a valid base, a few valid extras in random letter case, and exactly one bad entry:
an unknown name, a wrong type, malformed or wrongly shaped JSON, a huge or negative number, a topic name
Kafka would refuse, unicode and control characters, a setting librdkafka does not know.
"""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkasource.errors import KafkaSourceError, OptionError
from kafkasource.options import IGNORED_BUILTIN_OPTIONS, SOURCE_OPTIONS, parse_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders"}
KNOWN = {name.lower() for name in SOURCE_OPTIONS} | set(IGNORED_BUILTIN_OPTIONS)

# any text, unicode and control characters included (but no lone surrogates, which no Spark string holds)
any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
# text Python prints as itself (so a message quoting it can be searched for it), quotes and backslashes aside
printable = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="'\"\\"),
                    min_size=1, max_size=40).filter(str.isprintable)


def random_case(name: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: "".join(c.upper() if u else c.lower() for c, u in zip(name, upper, strict=True)))


def is_whole_number_in(raw: str, low: int, high: int) -> bool:
    return re.fullmatch(r"\s*[-+]?\d{1,30}\s*", raw) is not None and low <= int(raw) <= high


def not_blank(text: str) -> bool:
    return text.strip() != ""  # a blank value counts as unset


# -- bad entries: (options, the option name the message must carry) -------------------------------------
unknown_names = printable.filter(lambda n: n.strip() and n.lower() not in KNOWN and not n.lower().startswith("kafka."))
bad_unknown = unknown_names.map(lambda n: ({n: "1"}, n.lower()[:40]))

NUMBERS = {"maxOffsetsPerTrigger": 2**63 - 1, "minOffsetsPerTrigger": 2**63 - 1, "minPartitions": 2**31 - 1,
           "commitTimeoutMs": 2**31 - 1, "kafkaConsumer.pollTimeoutMs": 2**31 - 1}
number_values = st.one_of(any_text, st.integers(max_value=0).map(str), st.integers(min_value=2**31).map(str),
                          st.just("9" * 5000), st.floats(allow_nan=True).map(str))
bad_number = st.sampled_from(sorted(NUMBERS)).flatmap(lambda name: number_values.filter(
    lambda v: not_blank(v) and not is_whole_number_in(v, 1, NUMBERS[name])).map(lambda v: ({name: v}, name)))

bad_bool = st.tuples(st.sampled_from(["failOnDataLoss", "includeHeaders"]), any_text).filter(
    lambda nv: not_blank(nv[1]) and nv[1].strip().lower() not in ("true", "false")).map(
    lambda nv: ({nv[0]: nv[1]}, nv[0]))

CHOICES = {"commitMode": ("sync", "async", "none"), "kafka.auto.offset.reset": ("earliest", "latest", "none"),
           "kafka.isolation.level": ("read_committed", "read_uncommitted")}
bad_choice = st.tuples(st.sampled_from(sorted(CHOICES)), any_text).filter(
    lambda nv: not_blank(nv[1]) and nv[1].strip().lower() not in CHOICES[nv[0]]).map(
    lambda nv: ({nv[0]: nv[1], "kafka.group.id": "g"}, nv[0]))

bad_duration = any_text.filter(lambda v: not_blank(v) and not re.fullmatch(r"\s*\d{1,15}\s*[a-z]*\s*", v)).map(
    lambda v: ({"maxTriggerDelay": v}, "maxTriggerDelay"))

# JSON that is malformed, or well formed in the wrong shape, or right in shape with values Kafka cannot hold
json_scalars = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.integers(), any_text)
wrong_shapes = st.one_of(
    json_scalars.map(json.dumps),
    st.lists(json_scalars, max_size=3).map(json.dumps),
    st.dictionaries(st.just("orders"), json_scalars.filter(lambda v: not isinstance(v, dict)),
                    min_size=1).map(json.dumps),
    st.dictionaries(st.just("orders"), st.dictionaries(any_text.filter(lambda k: not re.fullmatch(r"\d{1,10}", k)),
                                                        st.integers(), min_size=1), min_size=1).map(json.dumps),
    st.sampled_from(['{"orders": {"0": 1.5}}', '{"orders": {"0": true}}', '{"orders": {"0": "12"}}',
                     '{"orders": {"99999999999": 0}}', '{"orders": {"0": 99999999999999999999}}',
                     '{"b\\u00fcro": {"0": 1}}', '{"": {"0": 1}}', '{"' + "t" * 250 + '": {"0": 1}}',
                     "[" * 100_000 + "]" * 100_000, '{"orders": ' * 5000 + "{}" + "}" * 5000]),
    any_text.filter(lambda v: v.strip().lower() not in ("earliest", "latest", "committed")).map(lambda v: "{" + v),
)
JSON_OPTIONS = {"startingOffsets": True, "startingOffsetsByTimestamp": True, "endingOffsets": False,
                "endingOffsetsByTimestamp": False}
bad_offsets_json = st.tuples(st.sampled_from(sorted(JSON_OPTIONS)), wrong_shapes).filter(
    lambda nv: not_blank(nv[1])).map(lambda nv: ({nv[0]: nv[1]}, nv[0]))

bad_assign = wrong_shapes.filter(lambda v: v.strip() and not v.strip().startswith('{"orders": {')).map(
    lambda v: ({"assign": v, "subscribe": None}, "assign"))

topic_names = st.one_of(
    printable.filter(lambda t: "," not in t and t.strip() and not re.fullmatch(r"[a-zA-Z0-9._-]{1,249}", t.strip())),
    st.just("t" * 250), st.just(".."))
bad_topic = topic_names.map(lambda t: ({"subscribe": f"orders,{t}"}, "subscribe"))


def invalid_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return True
    return False


bad_pattern = st.one_of(any_text, st.sampled_from(["orders-([", "*", "(?<", "a{2,1}"])).filter(invalid_regex).map(
    lambda p: ({"subscribePattern": p, "subscribe": None}, "subscribePattern"))

bad_timestamp = st.one_of(st.integers(max_value=-1).map(str), any_text).filter(
    lambda v: not_blank(v) and not is_whole_number_in(v, 0, 2**63 - 1)).map(
    lambda v: ({"startingTimestamp": v}, "startingTimestamp"))

# settings librdkafka does not know (a prefix no librdkafka property has), and values with a NUL in them
bad_kafka_setting = st.one_of(
    st.text(string.ascii_lowercase + "._", min_size=1, max_size=20).map(lambda n: (f"kafka.zz{n}", "1")),
    any_text.map(lambda v: ("kafka.client.id", f"a\x00{v}")),
    st.sampled_from(["lots", "-5", "9" * 40, "ünïcödé"]).map(lambda v: ("kafka.fetch.max.bytes", v)),
).map(lambda nv: ({nv[0]: nv[1]}, nv[0]))

bad_entries = st.one_of(bad_unknown, bad_number, bad_bool, bad_choice, bad_duration, bad_offsets_json, bad_assign,
                        bad_topic, bad_pattern, bad_timestamp, bad_kafka_setting)

# valid extras that never conflict with each other or with a bad entry's option
VALID_EXTRAS = {"failOnDataLoss": st.sampled_from(["true", "false", " TRUE "]),
                "includeHeaders": st.sampled_from(["true", "false"]),
                "kafka.client.id": st.text(string.ascii_letters + string.digits + "-", min_size=1, max_size=20),
                "kafka.fetch.wait.max.ms": st.integers(1, 1000).map(str)}
valid_extras = st.lists(st.sampled_from(sorted(VALID_EXTRAS)), unique=True, max_size=3).flatmap(
    lambda names: st.tuples(*[st.tuples(random_case(n), VALID_EXTRAS[n]) for n in names]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(bad=bad_entries, extras=valid_extras)
def test_every_bad_option_map_is_refused_naming_the_option(bad, extras):
    entry, named = bad
    options = {**BASE, **{name: value for name, value in extras if name.lower() not in {k.lower() for k in entry}}}
    options.update(entry)
    options = {k: v for k, v in options.items() if v is not None}  # None: drop the base's subscription
    try:
        parse_options(options)
    except OptionError as error:
        message = str(error)
    except KafkaSourceError as error:  # pragma: no cover - a failure below shows which
        raise AssertionError(f"{type(error).__name__} instead of OptionError: {error}") from None
    else:
        raise AssertionError(f"accepted a bad map: {options!r}")
    assert named.lower() in message.lower(), (named, message)
    assert "\n" not in message and "Traceback" not in message, message


def test_the_generated_valid_extras_alone_are_accepted():
    """The extras carry no bad value: every failure above comes from the bad entry."""
    parsed = parse_options({**BASE, "FAILONDATALOSS": " TRUE ", "includeheaders": "false", "kafka.client.id": "a-1",
                            "Kafka.Fetch.Wait.Max.Ms": "10"})
    assert parsed.fail_on_data_loss is True and parsed.kafka_config == {"client.id": "a-1", "fetch.wait.max.ms": "10"}


def test_a_refused_value_with_a_line_break_stays_on_one_line_escaped():
    """librdkafka quotes a refused value as given; a line break in it is shown escaped (hypothesis found one)."""
    with pytest.raises(OptionError) as refused:
        parse_options({**BASE, "kafka.isolation.level": "0\n"})
    assert str(refused.value).startswith(
        "librdkafka rejected kafka.isolation.level='0\\n': Invalid value \"0\\n\" for configuration property "
        "\"isolation.level\". Options prefixed with kafka. are passed to librdkafka")
