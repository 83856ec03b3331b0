"""A client call waited for at most a bound, for calls that librdkafka does not always end at their own timeout.

librdkafka's send_offsets_to_transaction() (the exactly-once batch marker) hands its request to the group
coordinator's lookup, whose own timeout librdkafka never checks (its issue 5456, open in 2.12.1 and 2.16.0): while
no coordinator can be found, the call waits for good. The call runs on a thread of its own, and the task waits for
it up to the bound. A call still running then is given up: the task fails with StuckCall, and the client is left
to the call's thread, which hands it to `abandon` if the call ever returns, since closing a client while one of its
calls runs is not safe.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from kafkasource.errors import DeliveryError

T = TypeVar("T")


class StuckCall(DeliveryError):
    """A client call did not return within its bound: the client is given up, and the task fails."""


def bounded(call: Callable[[], T], seconds: float, abandon: Callable[[], None], what: str) -> T:
    """`call`'s result or error, when it comes within `seconds`; else StuckCall naming `what`, and `abandon` is
    called on the call's thread once (if ever) the call returns."""
    outcome: dict[str, object] = {}
    lock = threading.Lock()
    finished = threading.Event()
    given_up = False

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting task below
            outcome["error"] = exc
        with lock:
            finished.set()
            late = given_up
        if late:
            abandon()

    threading.Thread(target=run, name=f"kafkasource-{what}", daemon=True).start()
    if not finished.wait(seconds):
        with lock:
            given_up = not finished.is_set()
        if given_up:
            raise StuckCall(
                f"{what} did not return within {seconds:.0f} s: librdkafka still waits for a coordinator it cannot "
                "find (is the cluster reachable, and its __consumer_offsets topic available?). The client is given "
                "up and the task fails, so that a retry of it starts with a new one"
            )
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
