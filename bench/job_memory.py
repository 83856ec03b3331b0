"""Resident memory of one spark-submit job's Python processes, by kind, over the job's life.

The kinds are the processes that run kafkasource's code: the job's driver (`jobs/ingest.py`), Spark's
driver-side process hosting the stream reader (`python -m pyspark.sql.streaming.python_streaming_source_runner`),
the executor daemon (`python -m pyspark.daemon pyspark.worker`, a child of the JVM) and the workers it forks,
which read Kafka and are reused from batch to batch. Spark's planning daemons (`pyspark.daemon
pyspark.sql.worker.*`) start and end around each query start and are left out. A kind's figure in a sample is
its largest process: workers are several, and one that starts late (small) would otherwise hide one that grows.

A kind warms up for WARM_UP_S from its first sample in a run (imports, consumers created, first batches;
Spark forks a worker only for a task, so a fresh worker is the daemon's size until its first task has run). A
run's memory is flat when, for each kind, its last sample after warm-up exceeds its first after warm-up by at
most the tolerance (TOLERANCE_MIB or TOLERANCE_SHARE of the first, the larger). Across runs, the kind's largest
sample after warm-up in the later half of the runs that have one may exceed that in the earlier half by at most
the same tolerance. Runs killed before a kind warmed up count in neither.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from dev.process import descendants, parents

KINDS = ("driver", "source runner", "worker daemon", "workers")
WARM_UP_S = 60
TOLERANCE_MIB = 32
TOLERANCE_SHARE = 0.25
_RSS = re.compile(r"VmRSS:\s+(\d+)")


def vm_rss_kb(pid: int) -> int | None:
    """The process's resident memory in kB; None once it has ended (or for a kernel thread)."""
    try:
        match = _RSS.search(Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return None
    return int(match.group(1)) if match else None


def command_line(pid: int) -> list[bytes]:
    """The process's argv ([] once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def kind_of(argv: list[bytes], parent_argv: list[bytes]) -> str | None:
    """Which of KINDS a process is, from its command line and its parent's; None for any other."""
    if not argv or not os.path.basename(argv[0]).startswith(b"python"):
        return None
    if b"pyspark.sql.streaming.python_streaming_source_runner" in argv:
        return "source runner"
    if b"pyspark.daemon" in argv:
        if b"pyspark.worker" not in argv:
            return None  # a planning daemon or one of its forks
        return "workers" if b"pyspark.daemon" in parent_argv else "worker daemon"  # forks keep the daemon's argv
    if len(argv) > 1 and argv[1].endswith(b".py"):
        return "driver"
    return None


def sample(root: int) -> dict[str, tuple[int, int]]:
    """kind -> (processes, largest RSS in kB) of the Python processes below `root` (spark-submit's pid)."""
    parent_of = parents()
    found: dict[str, tuple[int, int]] = {}
    for pid in descendants(root, parent_of):
        kind = kind_of(command_line(pid), command_line(parent_of.get(pid, 0)))
        rss = vm_rss_kb(pid) if kind else None
        if kind and rss is not None:
            count, largest = found.get(kind, (0, 0))
            found[kind] = (count + 1, max(largest, rss))
    return found


def _tolerance_kb(base_kb: int) -> float:
    return max(TOLERANCE_MIB * 1024, TOLERANCE_SHARE * base_kb)


@dataclass
class RunMemory:
    """The samples of one job run: (seconds since the run started, kind -> (processes, largest RSS kB))."""

    samples: list[tuple[float, dict[str, tuple[int, int]]]] = field(default_factory=list)

    def series(self, kind: str) -> list[tuple[float, int]]:
        return [(at, kinds[kind][1]) for at, kinds in self.samples if kind in kinds]

    def first_last_max(self, kind: str) -> tuple[int, int, int] | None:
        values = [kb for _, kb in self.series(kind)]
        return (values[0], values[-1], max(values)) if values else None

    def after_warm_up(self, kind: str) -> list[int]:
        """RSS kB of the kind's samples from WARM_UP_S after its first one in this run."""
        series = self.series(kind)
        return [kb for at, kb in series if at >= series[0][0] + WARM_UP_S] if series else []

    def most_processes(self, kind: str) -> int:
        return max((kinds[kind][0] for _, kinds in self.samples if kind in kinds), default=0)


def mib(kb: float) -> str:
    return f"{kb / 1024:.0f}"


def flatness_problems(runs: list[RunMemory]) -> list[str]:
    """What is not flat, in words: growth within a run after warm-up, or peaks rising from run to run."""
    problems = []
    for index, run in enumerate(runs, 1):
        for kind in KINDS:
            warm = run.after_warm_up(kind)
            if len(warm) >= 2 and warm[-1] - warm[0] > _tolerance_kb(warm[0]):
                problems.append(f"run {index}: {kind} grew from {mib(warm[0])} to {mib(warm[-1])} MiB after warm-up")
    for kind in KINDS:
        peaks = [max(warm) for run in runs if (warm := run.after_warm_up(kind))]
        earlier, later = peaks[:len(peaks) // 2], peaks[len(peaks) // 2:]
        if earlier and max(later) - max(earlier) > _tolerance_kb(max(earlier)):
            problems.append(f"{kind}: peaks after warm-up rose across runs, from {mib(max(earlier))} MiB "
                            f"(earlier half) to {mib(max(later))} MiB (later half)")
    return problems


def report(runs: list[RunMemory]) -> list[str]:
    """Lines: per kind, each run's first/last/max MiB (and its most processes at once), the samples after warm-up
    run by run (the trend the check looks at), and first/last/max over the whole soak."""
    lines = []
    for kind in KINDS:
        per_run = [(index, summary, run.most_processes(kind), run.after_warm_up(kind))
                   for index, run in enumerate(runs, 1) if (summary := run.first_last_max(kind))]
        if not per_run:
            lines.append(f"  {kind}: never sampled")
            continue
        lines.append(f"  {kind}, MiB first/last/max per run (processes):")
        lines.append("    " + "  ".join(f"#{i} {'/'.join(map(mib, s))} ({n})" for i, s, n, _ in per_run))
        warm = [f"#{i} {mib(w[0])}-{mib(w[-1])} (max {mib(max(w))})" for i, _, _, w in per_run if w]
        lines.append(f"    after warm-up, first-last per run: {', '.join(warm) or 'no run lasted past warm-up'}")
        lines.append(f"    whole soak: first {mib(per_run[0][1][0])}, last {mib(per_run[-1][1][1])}, "
                     f"max {mib(max(s[2] for _, s, _, _ in per_run))}")
    return lines
