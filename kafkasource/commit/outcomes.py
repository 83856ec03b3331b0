"""Commit outcomes, from the process that commits to the one that exports metrics.

A stream reader commits in Spark's driver-side runner process for the source, not in the
driver's Python process where a StreamingQueryListener and the metrics exporter run. The channel
between them is one UDP datagram per outcome to a loopback port the exporter listens on; the
exporter puts the port into the session's Python environment (`ENV_ADDRESS`) before it registers
the source again, so the runner of every query started after that finds it (classic Spark only:
over Spark Connect the server registers the source with its own environment).

A datagram is sent with MSG_DONTWAIT and every error is dropped: a commit never waits for the
exporter, and an exporter that is gone, slow or full loses outcomes instead of holding a commit.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

ENV_ADDRESS = "KAFKASOURCE_METRICS_EVENTS"  # "127.0.0.1:<port>"
OUTCOMES = ("success", "failure", "retry")
MAX_DATAGRAM = 2048


@dataclass(frozen=True)
class CommitOutcome:
    group: str
    outcome: str  # success | failure | retry
    reason: str  # "" for a success, else Kafka's error name (REQUEST_TIMED_OUT, _TRANSPORT, ...)
    partitions: int  # how many partitions the commit covered
    mode: str  # the query's commitMode: sync | async

    def encode(self) -> bytes:
        return json.dumps(self.__dict__, separators=(",", ":")).encode()[:MAX_DATAGRAM]

    @classmethod
    def decode(cls, data: bytes) -> CommitOutcome | None:
        try:
            fields = json.loads(data)
            outcome = cls(
                str(fields["group"]),
                str(fields["outcome"]),
                str(fields["reason"]),
                int(fields["partitions"]),
                str(fields["mode"]),
            )
        except (ValueError, KeyError, TypeError):
            return None
        return outcome if outcome.outcome in OUTCOMES else None


class OutcomeSender:
    """The committing side: sends each outcome if an exporter's address is in the environment, else nothing."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        address = (os.environ if environ is None else environ).get(ENV_ADDRESS)
        self._target: tuple[str, int] | None = None
        self._socket: socket.socket | None = None
        if address:
            host, _, port = address.rpartition(":")
            try:
                self._target = (host, int(port))
                self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self._socket.setblocking(False)
            except (ValueError, OSError) as exc:
                log.warning("no commit outcomes to the metrics exporter at %s: %s", address, exc)
                self._target = None

    def send(self, outcome: CommitOutcome) -> None:
        if self._socket is None or self._target is None:
            return
        try:
            self._socket.sendto(outcome.encode(), socket.MSG_DONTWAIT, self._target)
        except OSError:  # nobody listening, buffer full: the outcome is lost, the commit goes on
            pass

    def __getstate__(self) -> dict:  # a socket cannot be pickled; executors never commit anyway
        return {"_target": None, "_socket": None}


class OutcomeReceiver:
    """The exporter's side: a UDP socket on 127.0.0.1 whose outcomes `receive` returns."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind((host, port))
        self.address = "{}:{}".format(*self._socket.getsockname())

    def receive(self, timeout: float) -> CommitOutcome | None:
        """The next outcome, or None after `timeout` seconds (or for a datagram that is not one)."""
        self._socket.settimeout(timeout)
        try:
            data = self._socket.recv(MAX_DATAGRAM)
        except (TimeoutError, OSError):
            return None
        return CommitOutcome.decode(data)

    def close(self) -> None:
        self._socket.close()
