"""Run the stream reader's stop() when Spark ends the driver-side process that hosts it.

Spark runs a Python stream reader's driver-side methods (initialOffset, latestOffset, partitions,
commit) in a process of its own, started as `python -m pyspark.sql.streaming.python_streaming_source_runner`.
Measured on pyspark 4.3: Spark never calls the reader's stop(), neither when an AvailableNow run
ends nor on query.stop(); it sends that process SIGTERM. The runner calls `reader.stop()` in a
`finally` block that runs only when its request loop ends by an exception, and Python's default
SIGTERM action ends the process without running it, so pending async commits and open clients
would be dropped.

Spark also closes the runner's socket at about the same moment, so the runner may already be in
stop() (its request loop ended by EOF) when the signal arrives, and it sends SIGTERM twice, a few
milliseconds apart. So in that process only, on the first SIGTERM:
- if stop() is already running, it is left to finish: its waits are bounded;
- otherwise SystemExit is raised: the request loop unwinds and the runner's `finally` calls stop().
Further SIGTERMs within a second of the first are Spark's duplicate; a later one is never
swallowed: it goes to the handler that was there before (by default, the process ends at once).
The handler does no Kafka work itself: it may interrupt a client call, and work done on the way
out of the stack is safer than work done inside it. Code that changes state in several steps (the
committer marking positions sent and queueing them) runs inside `signal_deferred()`, which holds
the SystemExit back until the block is done, so the flush never sees half of a change. Executor
Python workers (which only call read()) are left alone.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"
SIGTERM_EXIT_CODE = 128 + signal.SIGTERM
DUPLICATE_WINDOW_S = 1.0  # Spark's second SIGTERM follows its first within milliseconds
CLOSE_SECONDS = 5.0  # long enough for a broker that answers; a shutdown never hangs on one that went away

_installed = False
_stopping = False
_deferring = 0  # how many signal_deferred() blocks the main thread is in
_deferred = False  # a SIGTERM arrived inside such a block: exit when it ends


def in_stream_runner() -> bool:
    """True in the process Spark starts to host a Python stream reader on the driver."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec is not None and spec.name == RUNNER_MODULE


def exit_on_sigterm() -> bool:
    """Turn the first SIGTERM into SystemExit, once per process; returns whether the handler is in place.

    Only possible from the main thread (a limit of Python's signal module)."""
    global _installed
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    previous = signal.getsignal(signal.SIGTERM)
    if previous is None:  # a handler set from C: the default action is the closest we can restore
        previous = signal.SIG_DFL

    first_at: list[float] = []

    def on_sigterm(signum, _frame):
        if first_at:
            if time.monotonic() - first_at[0] > DUPLICATE_WINDOW_S:  # not Spark's duplicate: never swallowed
                signal.signal(signal.SIGTERM, previous)
                signal.raise_signal(signum)
            return
        first_at.append(time.monotonic())
        if _stopping:
            log.info("SIGTERM while stopping: finishing the bounded flush")
            return
        if _deferring:
            global _deferred
            _deferred = True
            return
        _exit()

    signal.signal(signal.SIGTERM, on_sigterm)
    _installed = True
    return True


def stopping() -> None:
    """Say that stop() has begun: a SIGTERM from now on lets it finish instead of interrupting it."""
    global _stopping
    _stopping = True


def _exit() -> None:
    log.info("SIGTERM: flushing pending commits and closing Kafka clients before exit")
    raise SystemExit(SIGTERM_EXIT_CODE)


@contextmanager
def signal_deferred() -> Iterator[None]:
    """Run a block whole: a SIGTERM arriving inside it ends the process only once the block is done."""
    global _deferring, _deferred
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _deferred and not _stopping:
            _deferred = False
            _exit()


def close_within(client, what: str, seconds: float = CLOSE_SECONDS) -> None:
    """client.close(), waiting at most `seconds`: librdkafka's close waits for outstanding requests, which a
    broker that went away can hold up long after the process was told to end."""
    closer = threading.Thread(target=client.close, name=f"kafkasource-close-{what}", daemon=True)
    closer.start()
    closer.join(seconds)
    if closer.is_alive():
        log.warning("closing the %s did not finish within %.1f s; leaving it to end with the process", what, seconds)
