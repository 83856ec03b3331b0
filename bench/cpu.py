"""CPU seconds a drain costs the machine, by process: the broker, Spark's JVM, the Python processes Spark
starts (workers and each query's driver-side runner), and this process (the bare reader, py4j's calls).

Wall time on this shared 2-core machine varies from drain to drain by more than the differences between
readers (the ceiling, which reads nothing, took 1.2 to 3.7 s for the same 1 KB drain in one run); the CPU a
drain used varies far less, and says what each reader costs the broker and Spark besides itself.

Read from /proc: a process's own user and system time, plus that of its children once it has reaped them,
so a Python process that ends during a drain still counts (in its parent's share).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

TICKS = os.sysconf("SC_CLK_TCK")


class Cpu(NamedTuple):
    broker: float
    jvm: float
    python: float  # the JVM's descendants
    bench: float  # this process

    @property
    def total(self) -> float:
        return sum(self)

    def __sub__(self, earlier: "Cpu") -> "Cpu":
        return Cpu(*(now - then for now, then in zip(self, earlier)))


def _stat(pid: int) -> tuple[int, list[int]] | None:
    """(parent pid, [utime, stime, cutime, cstime]) in ticks, or None for a process that is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces
    return int(fields[1]), [int(f) for f in fields[11:15]]


def _all_processes() -> dict[int, tuple[int, list[int]]]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            stats[int(entry)] = stat
    return stats


class Meter:
    def __init__(self, broker_pid: int, jvm_pid: int):
        self.broker_pid, self.jvm_pid = broker_pid, jvm_pid

    def sample(self) -> Cpu:
        stats = _all_processes()

        def own(pid: int) -> int:
            return sum(stats[pid][1][:2]) if pid in stats else 0

        def reaped(pid: int) -> int:
            return sum(stats[pid][1][2:]) if pid in stats else 0

        python = reaped(self.jvm_pid) + sum(own(pid) + reaped(pid) for pid in self._descendants(stats, self.jvm_pid))
        return Cpu(broker=(own(self.broker_pid) + reaped(self.broker_pid)) / TICKS, jvm=own(self.jvm_pid) / TICKS,
                   python=python / TICKS, bench=own(os.getpid()) / TICKS)

    @staticmethod
    def _descendants(stats: dict[int, tuple[int, list[int]]], root: int) -> list[int]:
        children: dict[int, list[int]] = {}
        for pid, (parent, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        found, todo = [], [root]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found
