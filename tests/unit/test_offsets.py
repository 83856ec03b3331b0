"""Offset specifications resolved against an in-memory OffsetLookup: no broker."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest

from kafkasource.errors import NoCommittedOffsetError, OptionError
from kafkasource.planning.offsets import (
    EARLIEST,
    LATEST,
    TOPIC_IDS_KEY,
    Committed,
    Earliest,
    Latest,
    OutsideLog,
    SpecificOffsets,
    Timestamps,
    TopicPartition,
    describe,
    from_json_dict,
    nearest_in_log,
    to_json_dict,
    topic_ids_of,
    within_log,
)

A0, A1, A2, B0 = ("a", 0), ("a", 1), ("a", 2), ("b", 0)


class FakeLookup:
    """The four-method OffsetLookup over fixed tables; records every call so tests can check what was asked."""

    def __init__(self, begin: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                 committed: Mapping[TopicPartition, int] | None = None,
                 records: Mapping[TopicPartition, list[tuple[int, int]]] | None = None):
        self.begin = dict(begin)
        self.end_ = dict(end)
        self.committed_ = dict(committed or {})
        self.records = dict(records or {})  # tp -> [(offset, timestamp ms)] in offset order
        self.calls: list[tuple[str, tuple]] = []

    def committed(self, partitions):
        self.calls.append(("committed", tuple(partitions)))
        return {tp: self.committed_.get(tp) for tp in partitions}

    def beginning(self, partitions):
        self.calls.append(("beginning", tuple(partitions)))
        return {tp: self.begin[tp] for tp in partitions}

    def end(self, partitions):
        self.calls.append(("end", tuple(partitions)))
        return {tp: self.end_[tp] for tp in partitions}

    def for_times(self, timestamps):
        self.calls.append(("for_times", tuple(sorted(timestamps.items()))))
        return {tp: next((o for o, t in self.records.get(tp, []) if t >= ts), None) for tp, ts in timestamps.items()}


def lookup(**kwargs) -> FakeLookup:
    return FakeLookup(begin={A0: 10, A1: 0, A2: 5, B0: 100}, end={A0: 20, A1: 7, A2: 5, B0: 150}, **kwargs)


ALL = [A0, A1, A2, B0]


# --- earliest / latest --------------------------------------------------------------------------------

def test_earliest_and_latest():
    fake = lookup()
    assert Earliest().resolve(ALL, fake) == {A0: 10, A1: 0, A2: 5, B0: 100}
    assert Latest().resolve(ALL, fake) == {A0: 20, A1: 7, A2: 5, B0: 150}
    assert Earliest().resolve([B0], fake) == {B0: 100}


@pytest.mark.parametrize("spec", [Earliest(), Latest(), Committed("earliest"), Committed("none"),
                                  SpecificOffsets(((A0, 12),)), Timestamps(everywhere=5)])
def test_no_partitions_asks_nothing(spec):
    fake = lookup()
    assert spec.resolve([], fake) == {}
    assert fake.calls == []


def test_markers():
    assert (EARLIEST, LATEST) == (-2, -1)
    assert str(Earliest()) == "earliest" and str(Latest()) == "latest"


# --- committed ----------------------------------------------------------------------------------------

def test_committed_everywhere():
    fake = lookup(committed={A0: 15, A1: 7, A2: 5, B0: 100})
    for reset in ("earliest", "latest", "none"):
        assert Committed(reset).resolve(ALL, fake) == {A0: 15, A1: 7, A2: 5, B0: 100}


@pytest.mark.parametrize("reset, expected", [
    ("earliest", {A0: 12, A1: 0, A2: 5, B0: 100}),
    ("latest", {A0: 12, A1: 7, A2: 5, B0: 150}),
])
def test_committed_partial_follows_reset(reset, expected):
    fake = lookup(committed={A0: 12})
    assert Committed(reset).resolve(ALL, fake) == expected


def test_committed_partial_with_reset_none_names_the_partitions():
    fake = lookup(committed={A0: 12, A2: 5})
    with pytest.raises(NoCommittedOffsetError) as info:
        Committed("none").resolve(ALL, fake)
    message = str(info.value)
    assert message == ("the consumer group has no committed offset for a-1, b-0 and kafka.auto.offset.reset=none; "
                       "commit offsets for them first, or set kafka.auto.offset.reset to earliest or latest")
    assert "a-0" not in message and "a-2" not in message


def test_committed_none_with_nothing_committed_names_every_partition():
    with pytest.raises(NoCommittedOffsetError, match="no committed offset for a-0, a-1, a-2, b-0 and "):
        Committed("none").resolve(ALL, lookup())


def test_committed_at_the_log_bounds_is_kept():
    fake = lookup(committed={A0: 10, B0: 150})
    assert Committed("none").resolve([A0, B0], fake) == {A0: 10, B0: 150}


@pytest.mark.parametrize("reset, expected", [("earliest", {A0: 10, B0: 100}), ("latest", {A0: 20, B0: 150})])
def test_committed_outside_the_log_follows_reset(reset, expected):
    # A0 below the log start (retention removed it), B0 beyond the log end (topic recreated)
    fake = lookup(committed={A0: 3, B0: 900})
    assert Committed(reset).resolve([A0, B0], fake) == expected


def test_committed_outside_the_log_with_reset_none():
    fake = lookup(committed={A0: 3, A1: 4, B0: 900})
    with pytest.raises(NoCommittedOffsetError) as info:
        Committed("none").resolve([A0, A1, B0], fake)
    assert str(info.value) == (
        "committed offset outside the log for a-0 at 3 (log holds 10..20), b-0 at 900 (log holds 100..150) and "
        "kafka.auto.offset.reset=none; set kafka.auto.offset.reset to earliest or latest, or give startingOffsets "
        "explicitly")


def test_committed_str():
    assert str(Committed("earliest")) == "committed (kafka.auto.offset.reset=earliest)"
    assert Committed() == Committed("latest")


def test_within_log_empty_asks_nothing():
    fake = lookup()
    assert within_log({}, fake, "none", "offset") == {}
    assert fake.calls == []


# --- specific offsets ---------------------------------------------------------------------------------

def test_specific_offsets_with_markers_and_unnamed_partitions():
    spec = SpecificOffsets(((A0, 12), (A1, EARLIEST), (A2, LATEST), (("gone", 0), 5)))
    # B0 is not named: the default (latest); ("gone", 0) is not read and not asked about
    assert spec.resolve(ALL, lookup()) == {A0: 12, A1: 0, A2: 5, B0: 150}


def test_specific_offsets_default_earliest():
    spec = SpecificOffsets(((A0, LATEST),), default=Earliest())
    assert spec.resolve([A0, A1, B0], lookup()) == {A0: 20, A1: 0, B0: 100}


@pytest.mark.parametrize("reset, expected", [("earliest", {A0: 10, B0: 100}), ("latest", {A0: 20, B0: 150})])
def test_specific_offsets_outside_the_log_follow_reset(reset, expected):
    spec = SpecificOffsets(((A0, 2), (B0, 151)), reset=reset)
    assert spec.resolve([A0, B0], lookup()) == expected


def test_specific_offsets_outside_the_log_with_reset_none():
    spec = SpecificOffsets(((A0, 2), (B0, 120)), reset="none")
    with pytest.raises(NoCommittedOffsetError) as info:
        spec.resolve([A0, B0], lookup())
    assert str(info.value).startswith("offset outside the log for a-0 at 2 (log holds 10..20) and "
                                      "kafka.auto.offset.reset=none")


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_specific_offsets_kept_inside_the_log_whatever_the_reset(reset):
    spec = SpecificOffsets(((A0, 2), (A1, 4), (B0, 151)), reset=reset, outside_log=OutsideLog.NEAREST_BOUND)
    assert spec.resolve([A0, A1, B0], lookup()) == {A0: 10, A1: 4, B0: 150}


def test_specific_offsets_str_is_checkpoint_json():
    assert str(SpecificOffsets(((A1, 7), (A0, -2)))) == '{"a": {"0": -2, "1": 7}}'


# --- timestamps ---------------------------------------------------------------------------------------

RECORDS = {A0: [(10, 1000), (11, 1000), (12, 2000), (15, 3000)], A1: [(0, 500), (6, 4000)], A2: [],
           B0: [(100, 2500)]}


def test_timestamp_everywhere():
    fake = lookup(records=RECORDS)
    # A0: first record at >= 2000 is 12; A1: 6; B0: 100; A2 (empty) -> log end
    assert Timestamps(everywhere=2000).resolve(ALL, fake) == {A0: 12, A1: 6, A2: 5, B0: 100}
    # B0's only record is older than 3000 -> log end
    assert Timestamps(everywhere=3000).resolve(ALL, fake) == {A0: 15, A1: 6, A2: 5, B0: 150}


def test_timestamp_equal_to_a_record_time_starts_at_that_record():
    assert Timestamps(everywhere=1000).resolve([A0], lookup(records=RECORDS)) == {A0: 10}


def test_timestamp_with_no_matching_record_is_the_log_end():
    fake = lookup(records=RECORDS)
    assert Timestamps(everywhere=9_999_999).resolve(ALL, fake) == {A0: 20, A1: 7, A2: 5, B0: 150}


def test_timestamps_per_partition():
    spec = Timestamps(per_partition=((A0, 3000), (A1, 0), (B0, 2500), (("other", 0), 1)))
    assert spec.resolve([A0, A1, B0], lookup(records=RECORDS)) == {A0: 15, A1: 0, B0: 100}


def test_timestamps_per_partition_missing_a_partition():
    spec = Timestamps(per_partition=((A0, 3000),))
    with pytest.raises(OptionError) as info:
        spec.resolve([A0, A1, B0], lookup(records=RECORDS))
    assert str(info.value) == ("startingOffsetsByTimestamp/endingOffsetsByTimestamp names no timestamp for a-1, b-0; "
                               "give one for every partition the query reads")


def test_timestamps_str():
    assert str(Timestamps(everywhere=5)) == "timestamp 5"
    assert str(Timestamps(per_partition=((A0, 1),))) == "timestamps per partition"


# --- checkpoint JSON ----------------------------------------------------------------------------------

def test_to_json_dict_shape():
    assert to_json_dict({("topic", 0): 42}) == {"topic": {"0": 42}}
    assert json.dumps(to_json_dict({("topic", 0): 42})) == '{"topic": {"0": 42}}'


def test_to_json_dict_sorted_and_grouped():
    positions = {("t", 10): 1, ("t", 2): 7, ("a", 0): 3, ("t", 0): 42}
    data = to_json_dict(positions)
    assert data == {"a": {"0": 3}, "t": {"0": 42, "2": 7, "10": 1}}
    assert json.dumps(data) == '{"a": {"0": 3}, "t": {"0": 42, "2": 7, "10": 1}}'


def test_json_round_trip():
    positions = {("orders", 0): 42, ("orders", 1): 7, ("refunds", 3): 0}
    assert from_json_dict(json.loads(json.dumps(to_json_dict(positions)))) == positions


def test_from_json_dict():
    assert from_json_dict({"topic": {"0": 42, "1": 7}}) == {("topic", 0): 42, ("topic", 1): 7}
    assert from_json_dict({}) == {}


def test_topic_ids_sit_beside_the_built_in_map_under_a_key_no_topic_name_can_be():
    data = to_json_dict({("b", 0): 5, ("a", 1): 7, ("a", 0): 3}, {"a": "id-a", "b": "id-b", "gone": "id-gone"})

    # the built-in's topic -> partition -> offset map as it was, the ids of its topics (only) after it
    assert json.dumps(data) == '{"a": {"0": 3, "1": 7}, "b": {"0": 5}, "@topicIds": {"a": "id-a", "b": "id-b"}}'
    assert {t: parts for t, parts in data.items() if t != TOPIC_IDS_KEY} == to_json_dict(
        {("b", 0): 5, ("a", 1): 7, ("a", 0): 3})
    assert from_json_dict(json.loads(json.dumps(data))) == {("a", 0): 3, ("a", 1): 7, ("b", 0): 5}
    assert topic_ids_of(json.loads(json.dumps(data))) == {"a": "id-a", "b": "id-b"}
    assert topic_ids_of({"a": {"0": 3}}) == {}  # offsets written before ids were kept, or by the built-in source
    # Kafka's legal topic names (Topic.java: [a-zA-Z0-9._-]+) match a real name and never the key
    assert re.fullmatch(r"[a-zA-Z0-9._-]+", "orders.v2_eu-1") and not re.fullmatch(r"[a-zA-Z0-9._-]+", TOPIC_IDS_KEY)


def test_describe():
    assert describe([("b", 0), ("a", 3), ("a", 1)]) == "a-1, a-3, b-0"


def test_describe_names_twenty_partitions_and_counts_the_rest():
    wide = [("orders", p) for p in range(10_000)]
    assert describe(wide) == ", ".join(f"orders-{p}" for p in range(20)) + " and 9,980 more partitions"
    assert describe(wide[:20]) == ", ".join(f"orders-{p}" for p in range(20))


def test_nearest_in_log_moves_offsets_to_the_closest_bound():
    lookup = FakeLookup({A0: 5, A1: 5, A2: 5}, {A0: 10, A1: 10, A2: 10})
    assert nearest_in_log({A0: 2, A1: 7, A2: 40}, lookup) == {A0: 5, A1: 7, A2: 10}


def test_nearest_in_log_of_nothing_asks_nothing():
    fake = lookup()
    assert nearest_in_log({}, fake) == {}
    assert fake.calls == []
