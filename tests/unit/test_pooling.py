"""runtime/pooling.ClientPool, without Kafka: what the consumer, producer and transactional pools keep, hand out and
close."""

from __future__ import annotations

import threading

import pytest

from kafkasource.runtime import pooling
from kafkasource.runtime.pooling import ClientPool


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(pooling.time, "monotonic", ticking)
    return ticking


def pool_closing_into(closed: list, **limits) -> ClientPool[str, str]:
    return ClientPool(close=closed.append, **limits)


def test_a_healthy_client_comes_back_for_its_key_only_and_the_last_one_back_goes_out_first(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed)
    pool.give_back("a", "a1", True)
    pool.give_back("a", "a2", True)
    pool.give_back("b", "b1", True)

    assert pool.take("c") is None
    assert pool.take("a") == "a2"
    assert pool.take("a") == "a1"
    assert pool.take("a") is None
    assert pool.take("b") == "b1"
    assert closed == []


def test_a_client_that_failed_is_closed_not_kept(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed)
    pool.give_back("a", "a1", False)
    assert closed == ["a1"]
    assert pool.take("a") is None


def test_clients_idle_past_the_limit_are_closed_when_a_client_is_next_taken(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed)
    pool.give_back("a", "old", True)
    clock.now += 10
    pool.give_back("a", "newer", True)
    pool.give_back("b", "b1", True)
    clock.now += pooling.IDLE_CLOSE_SECONDS - 5  # "old" is idle past the limit, the others are not

    assert pool.take("c") is None
    assert closed == ["old"]
    clock.now += 10
    assert pool.take("a") is None
    assert sorted(closed) == ["b1", "newer", "old"]


def test_one_client_per_key_keeps_the_newer(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed, per_key=1)
    pool.give_back("a", "first", True)
    pool.give_back("a", "second", True)
    assert closed == ["first"]
    assert pool.take("a") == "second"


def test_beyond_the_most_idle_the_least_recently_given_back_is_closed(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed, per_key=1, most_idle=2)
    for key in ("a", "b"):
        pool.give_back(key, key, True)
        clock.now += 1
    assert pool.take("a") == "a"
    pool.give_back("a", "a", True)  # now b is the least recently used
    clock.now += 1
    pool.give_back("c", "c", True)
    assert closed == ["b"]
    assert (pool.take("a"), pool.take("b"), pool.take("c")) == ("a", None, "c")


def test_close_all_closes_every_idle_client(clock):
    closed: list[str] = []
    pool = pool_closing_into(closed)
    for client in ("a1", "a2", "b1"):
        pool.give_back(client[0], client, True)
    pool.close_all()
    assert sorted(closed) == ["a1", "a2", "b1"]
    assert pool.take("a") is None


def test_threads_taking_and_giving_back_at_once_never_share_a_client():
    pool: ClientPool[str, object] = ClientPool(close=lambda client: None)
    held: set[int] = set()
    shared: list[object] = []
    lock = threading.Lock()

    def task() -> None:
        for _ in range(2000):
            client = pool.take("a") or object()
            with lock:
                if id(client) in held:
                    shared.append(client)
                held.add(id(client))
            with lock:
                held.discard(id(client))
            pool.give_back("a", client, True)

    threads = [threading.Thread(target=task) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared == []
