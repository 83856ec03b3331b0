"""What the pools of Kafka clients in a Python worker share (reading/consumers.py, writing/producer.py,
writing/transactional_pool.py): Spark reuses its Python workers across tasks and batches, so a client outlives the task
that made it, and each pool keeps idle clients for the next task of the same configuration.

ClientPool is that keeping: the worker's idle clients by key, each with the time it went idle, handed out again to
a task of the same key, closed after a failure, after IDLE_CLOSE_SECONDS idle, or beyond the pool's limits. What a
client is, how one is made and made ready for the next task, stays with the pool that uses it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

# an idle client unused this long is closed: its connections and threads are held for nothing, and a stream's next
# batch comes within seconds, a batch job's next write rarely within minutes
IDLE_CLOSE_SECONDS = 300

Key = TypeVar("Key", bound=Hashable)
Client = TypeVar("Client")


class ClientPool(Generic[Key, Client]):
    """Idle clients of this worker process, by key; safe to share between threads (the task's own, and any other
    thread of the worker that takes or gives back a client).

    `close` closes a client that leaves the pool. `per_key`:
    how many idle clients of one key are kept (the newest; None: all); `most_idle`: how many in all (the least
    recently given back are closed first; None: no limit). Clients are closed outside the lock, since librdkafka's
    close may wait on brokers."""

    def __init__(
        self, close: Callable[[Client], None], per_key: int | None = None, most_idle: int | None = None
    ) -> None:
        # the idle clients of a key, each with the monotonic time it went idle, oldest first
        self._idle: dict[Key, list[tuple[Client, float]]] = {}
        self._lock = threading.Lock()
        self._close = close
        self._per_key = per_key
        self._most_idle = most_idle

    def take(self, key: Key) -> Client | None:
        """The idle client of `key` that came back last, out of the pool; None where there is none. Clients idle for
        longer than IDLE_CLOSE_SECONDS are closed first."""
        cutoff = time.monotonic() - IDLE_CLOSE_SECONDS
        with self._lock:
            stale = self._remove_idle_since(cutoff)
            entries = self._idle.get(key)
            client = entries.pop()[0] if entries else None
            if entries == []:
                del self._idle[key]
        self._close_each(stale)
        return client

    def give_back(self, key: Key, client: Client, healthy: bool) -> None:
        """`client`, done with its task, kept for the next task of `key` when `healthy`, else closed (a client that
        saw any failure must not meet the next task)."""
        if not healthy:
            self._close(client)
            return
        with self._lock:
            self._idle.setdefault(key, []).append((client, time.monotonic()))
            dropped = self._remove_beyond_limits(key)
        self._close_each(dropped)

    def close_all(self) -> None:
        """Close every idle client: for a caller done with the pool."""
        with self._lock:
            idle, self._idle = self._idle, {}
        self._close_each([client for entries in idle.values() for client, _ in entries])

    def _remove_idle_since(self, cutoff: float) -> list[Client]:
        stale: list[Client] = []
        for key, entries in list(self._idle.items()):
            if entries[0][1] >= cutoff:  # oldest first: none of the key's clients is stale
                continue
            stale += [client for client, since in entries if since < cutoff]
            kept = [(client, since) for client, since in entries if since >= cutoff]
            if kept:
                self._idle[key] = kept
            else:
                del self._idle[key]
        return stale

    def _remove_beyond_limits(self, key: Key) -> list[Client]:
        dropped: list[Client] = []
        entries = self._idle[key]
        if self._per_key is not None and len(entries) > self._per_key:
            # two tasks of one key in one worker at once (never with Spark's one task per worker): keep the newer
            dropped += [client for client, _ in entries[: -self._per_key]]
            del entries[: -self._per_key]
        if self._most_idle is not None:
            while sum(len(each) for each in self._idle.values()) > self._most_idle:
                oldest = min(self._idle, key=lambda k: self._idle[k][0][1])
                dropped.append(self._idle[oldest].pop(0)[0])
                if not self._idle[oldest]:
                    del self._idle[oldest]
        return dropped

    def _close_each(self, clients: list[Client]) -> None:
        for client in clients:
            self._close(client)
