"""Offset arithmetic for planning: batch ranges, minPartitions splitting, maxOffsetsPerTrigger sharing."""

from __future__ import annotations

import random

import pytest

from kafkasource.planning.ranges import OffsetRange, batch_ranges, pack_ranges, rate_limit, split_ranges

A0, A1, A2, B0 = ("a", 0), ("a", 1), ("a", 2), ("b", 0)


# --- batch_ranges -------------------------------------------------------------------------------------

def test_batch_ranges_skip_partitions_that_do_not_advance():
    start = {B0: 3, A1: 5, A0: 0}
    end = {B0: 4, A1: 5, A0: 10}
    assert batch_ranges(start, end) == [OffsetRange("a", 0, 0, 10), OffsetRange("b", 0, 3, 4)]


def test_batch_ranges_sorted_by_topic_and_partition():
    start = {("t", 10): 0, ("t", 2): 0, ("s", 0): 0}
    end = {("t", 10): 1, ("t", 2): 2, ("s", 0): 3}
    assert [(r.topic, r.partition, r.size) for r in batch_ranges(start, end)] == [
        ("s", 0, 3), ("t", 2, 2), ("t", 10, 1)]


def test_batch_ranges_nothing_new():
    assert batch_ranges({A0: 5}, {A0: 5}) == []
    assert batch_ranges({}, {}) == []


def test_offset_range_size():
    assert OffsetRange("a", 0, 40, 100).size == 60


# --- split_ranges -------------------------------------------------------------------------------------

RANGES = [OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 100, 102)]


@pytest.mark.parametrize("min_partitions", [None, 0, 1, 2])
def test_split_ranges_not_needed(min_partitions):
    assert split_ranges(RANGES, min_partitions) is RANGES


def test_split_ranges_in_proportion_to_size():
    # 12 records over 4 tasks: a-0 (10 records) gets ceil(10/12*4) = 4 parts, a-1 (2 records) ceil(2/12*4) = 1
    assert split_ranges(RANGES, 4) == [
        OffsetRange("a", 0, 0, 2), OffsetRange("a", 0, 2, 5), OffsetRange("a", 0, 5, 8), OffsetRange("a", 0, 8, 10),
        OffsetRange("a", 1, 100, 102)]


def test_split_ranges_even():
    assert split_ranges([OffsetRange("t", 0, 50, 62)], 3) == [
        OffsetRange("t", 0, 50, 54), OffsetRange("t", 0, 54, 58), OffsetRange("t", 0, 58, 62)]


def test_split_ranges_never_below_one_record():
    assert split_ranges([OffsetRange("t", 0, 7, 10)], 10) == [
        OffsetRange("t", 0, 7, 8), OffsetRange("t", 0, 8, 9), OffsetRange("t", 0, 9, 10)]


def test_split_ranges_empty_input():
    assert split_ranges([], 8) == []


def _random_ranges(rng: random.Random) -> list[OffsetRange]:
    count = rng.randint(1, 6)
    out = []
    for p in range(count):
        start = rng.choice([0, rng.randint(0, 10**12)])
        size = rng.choice([1, 2, 3, rng.randint(1, 50), rng.randint(1, 100_000)])
        out.append(OffsetRange(rng.choice("xyz"), p, start, start + size))
    return out


def test_split_ranges_properties():
    rng = random.Random(20240607)
    for _ in range(1500):
        ranges = _random_ranges(rng)
        min_partitions = rng.randint(1, 64)
        parts = split_ranges(ranges, min_partitions)
        # no empty ranges
        assert all(p.size > 0 for p in parts)
        # every offset exactly once, parts of one range contiguous and in order
        for r in ranges:
            mine = [p for p in parts if (p.topic, p.partition) == (r.topic, r.partition)]
            assert mine[0].start == r.start and mine[-1].until == r.until
            assert all(x.until == y.start for x, y in zip(mine, mine[1:], strict=False))  # neighbours: one pair fewer
        assert sum(p.size for p in parts) == sum(r.size for r in ranges)
        # at least min_partitions parts when there are enough records
        total = sum(r.size for r in ranges)
        assert len(parts) >= min(min_partitions, total)
        assert len(parts) >= len(ranges)


def test_split_ranges_deterministic():
    ranges = [OffsetRange("t", p, 0, 1000 + 37 * p) for p in range(5)]
    assert split_ranges(ranges, 17) == split_ranges(list(ranges), 17)


# --- rate_limit ---------------------------------------------------------------------------------------

def test_rate_limit_above_backlog_returns_latest():
    start, latest = {A0: 5, A1: 0}, {A0: 15, A1: 3}
    assert rate_limit(start, latest, 13) == latest
    assert rate_limit(start, latest, 1000) == latest


def test_rate_limit_proportional():
    assert rate_limit({A0: 0, A1: 0}, {A0: 300, A1: 100}, 40) == {A0: 30, A1: 10}
    assert rate_limit({A0: 1000, A1: 50}, {A0: 1600, A1: 250}, 80) == {A0: 1060, A1: 70}


def test_rate_limit_rounding_goes_to_the_largest_remainder():
    # exact shares 3.33.., 3.33.., 3.33..: one record left over, ties broken by name
    assert rate_limit({A0: 0, A1: 0, A2: 0}, {A0: 30, A1: 30, A2: 30}, 10) == {A0: 4, A1: 3, A2: 3}
    # exact shares 6.9 and 3.1: the leftover record goes to a-0
    assert rate_limit({A0: 0, A1: 0}, {A0: 69, A1: 31}, 10) == {A0: 7, A1: 3}


def test_rate_limit_tiny_backlog_still_advances():
    # exact shares 2.994, 0.003, 0.003: both single-record partitions still move
    assert rate_limit({A0: 0, A1: 0, A2: 0}, {A0: 1000, A1: 1, A2: 1}, 3) == {A0: 1, A1: 1, A2: 1}
    assert rate_limit({A0: 0, A1: 0, A2: 0}, {A0: 1000, A1: 1, A2: 1}, 4) == {A0: 2, A1: 1, A2: 1}
    assert rate_limit({A0: 0, B0: 7}, {A0: 1_000_000, B0: 9}, 100) == {A0: 99, B0: 8}


def test_rate_limit_below_the_number_of_backlogged_partitions():
    # 2 records for 3 backlogged partitions: the smallest shares go first, then by name
    assert rate_limit({A0: 0, A1: 0, A2: 0}, {A0: 1000, A1: 1, A2: 1}, 2) == {A0: 1, A1: 1, A2: 0}


def test_rate_limit_partitions_without_backlog_stay():
    assert rate_limit({A0: 4, A1: 9, B0: 0}, {A0: 4, A1: 9, B0: 100}, 10) == {A0: 4, A1: 9, B0: 10}


def test_rate_limit_properties():
    rng = random.Random(7)
    for _ in range(2000):
        count = rng.randint(1, 12)
        start = {("t", p): rng.randint(0, 10**9) for p in range(count)}
        latest = {tp: o + rng.choice([0, 0, 1, 2, rng.randint(0, 30), rng.randint(0, 10**6)])
                  for tp, o in start.items()}
        limit = rng.choice([1, 2, 3, count, rng.randint(1, 100), rng.randint(1, 10**6)])
        ends = rate_limit(start, latest, limit)
        backlog = {tp: latest[tp] - start[tp] for tp in start}
        taken = {tp: ends[tp] - start[tp] for tp in start}
        assert set(ends) == set(latest)
        # never beyond latest, never backwards
        assert all(0 <= taken[tp] <= backlog[tp] for tp in start)
        # never above the limit; exactly min(limit, backlog)
        assert sum(taken.values()) == min(limit, sum(backlog.values()))
        waiting = [tp for tp in start if backlog[tp] > 0]
        if limit >= len(waiting):
            assert all(taken[tp] >= 1 for tp in waiting)
        # a larger backlog never gets fewer records than a smaller one
        for x in waiting:
            for y in waiting:
                if backlog[x] > backlog[y]:
                    assert taken[x] >= taken[y]
        total = sum(backlog.values())
        if total > limit:
            if limit < len(waiting):
                # proportional share, rounded down or up
                for tp in waiting:
                    assert abs(taken[tp] - backlog[tp] * limit / total) < 1
            else:
                # one record each, the rest shared in proportion to what remains, rounded down or up
                budget, rest = limit - len(waiting), total - len(waiting)
                for tp in waiting:
                    assert abs(taken[tp] - 1 - (backlog[tp] - 1) * budget / rest) < 1
        # deterministic, whatever the order of the maps
        reversed_latest = dict(reversed(list(latest.items())))
        reversed_start = dict(reversed(list(start.items())))
        assert rate_limit(reversed_start, reversed_latest, limit) == ends


def test_rate_limit_repeated_triggers_drain_everything():
    start = {A0: 0, A1: 0, A2: 0}
    latest = {A0: 5000, A1: 3, A2: 1}
    steps = 0
    while start != latest:
        start = rate_limit(start, latest, 50)
        steps += 1
    assert steps == 101  # 5004 records at 50 per trigger


def ranges_of(*sizes: int) -> list[OffsetRange]:
    return [OffsetRange("t", p, 100, 100 + size) for p, size in enumerate(sizes)]


def test_pack_ranges_without_a_budget_gives_a_task_per_range():
    ranges = ranges_of(1, 5, 1000)
    assert pack_ranges(ranges, None) == [(r,) for r in ranges]


def test_pack_ranges_groups_small_ranges_up_to_the_budget():
    r = ranges_of(3, 4, 2, 10, 1, 6, 5)
    assert pack_ranges(r, 10) == [(r[3],), (r[0], r[1], r[2], r[4]), (r[5],), (r[6],)]


@pytest.mark.parametrize("seed", range(20))
def test_pack_ranges_keeps_every_range_once_and_respects_the_budget(seed):
    rng = random.Random(seed)
    ranges = ranges_of(*(rng.randint(1, 50) for _ in range(rng.randint(0, 300))))
    budget = rng.randint(1, 120)
    tasks = pack_ranges(ranges, budget)
    assert sorted((r for task in tasks for r in task), key=lambda r: r.partition) == ranges
    assert all(len(task) == 1 or sum(r.size for r in task) <= budget for task in tasks)
