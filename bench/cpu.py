"""CPU seconds a drain costs the machine, by process: the broker, Spark's JVM, and the Python processes
(those Spark starts, workers and each query's driver-side runner, and this one: the bare reader, py4j).

Wall time on this shared 2-core machine varies from drain to drain by more than the differences between
readers (the ceiling, which reads nothing, took 1.2 to 3.7 s for the same 1 KB drain in one run); the CPU a
drain used varies far less, and says what each reader costs the broker and Spark besides itself.

Each process's own user and system time, read from /proc every SAMPLE_S while the drain runs: a process
that ends meanwhile counts with its last reading. Not the time of reaped children: Spark ends idle Python
workers in ways that do not always hand their time to a parent, which made shares come out negative.
"""

from __future__ import annotations

import os
import threading
import time
from typing import NamedTuple

from dev.process import descendants, stat_fields

TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.25


class Cpu(NamedTuple):
    broker: float
    jvm: float
    python: float

    @property
    def total(self) -> float:
        return sum(self)


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, own user + system ticks) of every process readable now."""
    found = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            fields = stat_fields(pid)
        except OSError:  # gone meanwhile
            continue
        found[pid] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return found


class Meter:
    """Measures one drain at a time: `with meter.measuring() as used: ...`, then `used.cpu`."""

    def __init__(self, broker_pid: int, jvm_pid: int):
        self.broker_pid, self.jvm_pid = broker_pid, jvm_pid

    def measuring(self) -> Measurement:
        return Measurement(self)

    def pythons(self, processes: dict[int, tuple[int, int]]) -> set[int]:
        """This process and the JVM's descendants."""
        return {os.getpid()} | descendants(self.jvm_pid, {pid: parent for pid, (parent, _) in processes.items()})


class Measurement:
    def __init__(self, meter: Meter):
        self.meter = meter
        self.start: dict[int, int] = {}
        self.last: dict[int, int] = {}
        self.cpu: Cpu | None = None
        self._done = threading.Event()
        self._sampling_s = 0.0  # the sampler's own CPU, not the drain's

    def __enter__(self) -> Measurement:
        self.start = self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._done.set()
        self._thread.join()
        self._sample()
        used = {pid: (ticks - self.start.get(pid, 0)) / TICKS for pid, ticks in self.last.items()}
        broker, jvm = used.pop(self.meter.broker_pid, 0.0), used.pop(self.meter.jvm_pid, 0.0)
        self.cpu = Cpu(broker, jvm, sum(used.values()) - self._sampling_s)

    def _run(self) -> None:
        while not self._done.wait(SAMPLE_S):
            self._sample()
        self._sampling_s = time.thread_time()

    def _sample(self) -> dict[int, int]:
        processes = _processes()
        watched = self.meter.pythons(processes) | {self.meter.broker_pid, self.meter.jvm_pid}
        now = {pid: ticks for pid, (_, ticks) in processes.items() if pid in watched}
        self.last.update(now)
        return now
