"""The runner of the driver's offset requests in lanes (LIST_OFFSETS_LANES clients asking at once): it keeps
results in call order and ends every call before it returns or raises. No broker."""

from __future__ import annotations

import threading
import time

import pytest

from kafkasource.cluster.client import in_parallel


def test_in_parallel_returns_results_in_call_order_and_runs_the_calls_at_once():
    meet = threading.Barrier(3, timeout=10)  # passes only while all three calls run at the same time

    def call(n):
        def run():
            meet.wait()
            return n * 10
        return run

    assert in_parallel([call(1), call(2), call(3)]) == [10, 20, 30]
    assert in_parallel([lambda: "alone"]) == ["alone"]


def test_in_parallel_raises_the_first_failure_only_after_every_call_has_ended():
    ended = []

    def slow():
        time.sleep(0.3)
        ended.append("slow")
        return 1

    def failing():
        raise ValueError("the first lane failed")

    with pytest.raises(ValueError, match="the first lane failed"):
        in_parallel([failing, slow])
    assert ended == ["slow"]  # the other lane had finished before the failure reached the caller
