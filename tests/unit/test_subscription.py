"""Which topic-partitions each subscription reads, given the cluster's topics (name -> partition count)."""

from __future__ import annotations

import re

import pytest

from kafkasource.planning.subscription import INTERNAL_TOPICS, Assign, Subscribe, SubscribePattern

CLUSTER = {"orders": 3, "orders-eu": 2, "reorders": 1, "refunds": 1, "ORDERS": 1, "__consumer_offsets": 50,
           "__transaction_state": 50, "__orders_internal": 1, "empty": 0}


# --- subscribe ----------------------------------------------------------------------------------------

def test_subscribe_every_partition_of_the_named_topics_in_order():
    assert Subscribe(("refunds", "orders")).partitions(CLUSTER) == [
        ("refunds", 0), ("orders", 0), ("orders", 1), ("orders", 2)]


def test_subscribe_topic_that_does_not_exist_yet_has_no_partitions():
    assert Subscribe(("missing", "refunds")).partitions(CLUSTER) == [("refunds", 0)]
    assert Subscribe(("missing",)).partitions(CLUSTER) == []
    assert Subscribe(("empty",)).partitions(CLUSTER) == []


def test_subscribe_names_are_exact():
    assert Subscribe(("order",)).partitions(CLUSTER) == []
    assert Subscribe(("ORDERS",)).partitions(CLUSTER) == [("ORDERS", 0)]


def test_subscribe_internal_topic_by_name():
    # naming an internal topic explicitly reads it, as with the built-in source
    assert len(Subscribe(("__consumer_offsets",)).partitions(CLUSTER)) == 50


def test_subscribe_same_topic_twice_reads_it_once():
    assert Subscribe(("refunds", "refunds")).partitions(CLUSTER) == [("refunds", 0)]


def test_subscribe_picks_up_new_partitions():
    sub = Subscribe(("refunds",))
    assert sub.partitions({"refunds": 1}) == [("refunds", 0)]
    assert sub.partitions({"refunds": 3}) == [("refunds", 0), ("refunds", 1), ("refunds", 2)]


def test_subscribe_describe():
    assert Subscribe(("a", "b")).describe() == "subscribe=a,b"


# --- subscribePattern ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, topics", [
    # find semantics: a match anywhere in the name
    ("orders", ["__orders_internal", "orders", "orders-eu", "reorders"]),
    ("ord", ["__orders_internal", "orders", "orders-eu", "reorders"]),
    ("^orders", ["orders", "orders-eu"]),
    ("orders$", ["orders", "reorders"]),
    ("^orders$", ["orders"]),
    ("-eu", ["orders-eu"]),
    ("re(orders|funds)", ["refunds", "reorders"]),
    ("(?i)^orders$", ["ORDERS", "orders"]),
    ("nothing", []),
])
def test_pattern_find_semantics(pattern, topics):
    got = SubscribePattern(pattern).partitions(CLUSTER)
    assert sorted({t for t, _ in got}) == sorted(topics)
    # same topics as Python's re.search over the non-internal names
    assert sorted({t for t, _ in got}) == sorted(t for t in CLUSTER if t not in INTERNAL_TOPICS
                                                 and re.search(pattern, t) and CLUSTER[t] > 0)


def test_pattern_partitions_sorted_by_topic():
    assert SubscribePattern("orders").partitions(CLUSTER) == [
        ("__orders_internal", 0), ("orders", 0), ("orders", 1), ("orders", 2), ("orders-eu", 0), ("orders-eu", 1),
        ("reorders", 0)]


@pytest.mark.parametrize("pattern", [".*", "_", "^__", "offsets", "consumer", "transaction_state",
                                     "__consumer_offsets", "^__transaction_state$"])
def test_pattern_never_matches_internal_topics(pattern):
    topics = {t for t, _ in SubscribePattern(pattern).partitions(CLUSTER)}
    assert "__consumer_offsets" not in topics
    assert "__transaction_state" not in topics


def test_pattern_matches_other_double_underscore_topics():
    assert SubscribePattern("^__").partitions(CLUSTER) == [("__orders_internal", 0)]


def test_pattern_sees_new_topics():
    sub = SubscribePattern("^logs-")
    assert sub.partitions({"logs-a": 1}) == [("logs-a", 0)]
    assert sub.partitions({"logs-a": 1, "logs-b": 2, "other": 1}) == [("logs-a", 0), ("logs-b", 0), ("logs-b", 1)]


def test_pattern_describe():
    assert SubscribePattern("orders-.*").describe() == "subscribePattern=orders-.*"


# --- assign -------------------------------------------------------------------------------------------

def test_assign_only_existing_partitions():
    sub = Assign((("orders", 0), ("orders", 2), ("orders", 3), ("missing", 0), ("refunds", 0), ("empty", 0)))
    assert sub.partitions(CLUSTER) == [("orders", 0), ("orders", 2), ("refunds", 0)]


def test_assign_partition_appears_when_created():
    sub = Assign((("t", 1),))
    assert sub.partitions({"t": 1}) == []
    assert sub.partitions({"t": 2}) == [("t", 1)]


def test_assign_internal_topic_explicitly():
    assert Assign((("__consumer_offsets", 7),)).partitions(CLUSTER) == [("__consumer_offsets", 7)]


def test_assign_describe():
    assert Assign((("a", 0), ("a", 1), ("b", 3))).describe() == "assign=a-0,a-1,b-3"
