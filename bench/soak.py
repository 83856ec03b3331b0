"""Soak test of the ingest job, outside CI: SIGKILLs and broker restarts at random moments for half an hour.

Starts a local broker (dev/broker.py) with a 4-partition topic, and a producer writing continuously (`--rate`
records per second, round-robin; partition p's values are "p:0", "p:1", ... in the order written). The ingest
job (jobs/ingest.py under pyspark's own spark-submit: processing time, Parquet file sink, checkpoint, the
group committed as batches complete) reads it for `--minutes`, while at random moments (seeded, `--seed`,
printed) its whole process tree is SIGKILLed and it is started again from its checkpoint, and the broker is
stopped and started again on the same port and data. Then the producer stops, the job drains to the log ends,
and the soak checks and prints:

- exactly once: every (partition, offset) in the log is in the Parquet files the sink's log lists as committed,
  exactly once, holding the value produced there, and nothing else is;
- commits never ahead: just before each kill, every offset below the group's committed offset was durable in
  the sink; after the drain, the committed offsets are the log ends;
- memory flat: the resident memory of the job's Python processes, by kind, per run and across runs
  (bench/job_memory.py says what flat means);
- the job ended only when killed, and the producer had no error;

and figures: records, kills, broker restarts, duration, rows/s. Exit 1 when a check fails.

    bash scripts/soak.sh [--minutes 30] [--seed N] [--rate 300] [--kill-every 90:300] [--restart-every 120:420]
    bash scripts/soak.sh --cluster [--node-every 120:300] ...   (bench/soak_cluster.py)
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench import job_memory
from bench.job_memory import RunMemory
from bench.soak_parts import PARTITIONS, TOPIC, GroupView, SequenceProducer, Sink, create_topic
from dev import broker as local_broker
from dev.submit import kill_group, start_job, write_config

GROUP = "soak-ingest"
SAMPLE_S = 5  # memory samples
BATCH_LINE = re.compile(r"INFO kafkasource\.jobs: batch \d+: ([\d,]+) rows, ([\d,]+) rows/s")
DRAIN_TIMEOUT_S = 900
# Broker restarts on a loaded 2-core machine take up to a minute or two: the job is to ride them out, so the
# source's broker waits and sync commits outlast them (their defaults, 120 s and 60 s, are the behaviour tested
# by tests/system/test_faults.py).
MAX_OFFSETS_PER_TRIGGER = 5000
SOURCE_SETTINGS = f'''maxOffsetsPerTrigger = {MAX_OFFSETS_PER_TRIGGER}
"kafkaConsumer.pollTimeoutMs" = 300000
commitTimeoutMs = 300000'''


def interval(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN:MAX in seconds, like 60:300") from None
    if not 0 < bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"{text!r}: want 0 < MIN <= MAX")
    return bounds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bash scripts/soak.sh", description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=30, help="how long the producer, kills and restarts go on")
    p.add_argument("--seed", type=int, help="the random moments' seed (default: from the clock; printed)")
    p.add_argument("--rate", type=int, default=300, help="records per second")
    p.add_argument("--kill-every", type=interval, default=(90, 300), metavar="MIN:MAX",
                   help="seconds from a job's start to its SIGKILL, drawn uniformly")
    p.add_argument("--restart-every", type=interval, default=(120, 420), metavar="MIN:MAX",
                   help="seconds between broker restarts, drawn uniformly")
    p.add_argument("--down", type=interval, default=(2, 10), metavar="MIN:MAX",
                   help="seconds the broker stays stopped, drawn uniformly")
    p.add_argument("--cluster", action="store_true",
                   help="a 3-node cluster instead of one broker, an exactly-once route job beside the ingest job, "
                        "random nodes SIGKILLed or stopped instead of broker restarts (bench/soak_cluster.py)")
    p.add_argument("--node-every", type=interval, default=(120, 300), metavar="MIN:MAX",
                   help="--cluster: seconds between two node outages, drawn uniformly")
    p.add_argument("--workdir", type=Path, help="where the broker, checkpoint, sink and logs go (default: a new "
                                                "folder under /tmp, removed when every check passes)")
    return p


class Clock:
    def __init__(self):
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def say(self, line: str) -> None:
        print(f"[{self.elapsed():6.0f} s] {line}", flush=True)


@dataclass
class Run:
    """One start of the job, to its kill (or its own end)."""

    index: int
    process: object
    started: float = field(default_factory=time.monotonic)
    memory: RunMemory = field(default_factory=RunMemory)
    ended: str = ""
    lived_s: float = 0.0


class Job:
    """A job under spark-submit (the ingest job unless `job` and `config` say otherwise), started again after each
    end, with its memory sampled meanwhile."""

    def __init__(self, workdir: Path, bootstrap: str, clock: Clock, job: str = "ingest", config: Path | None = None):
        self.clock, self.name = clock, job
        self.log_path = workdir / ("spark-submit.log" if job == "ingest" else f"spark-submit-{job}.log")
        self.config = config or write_config(workdir / "ingest.toml", bootstrap, TOPIC, GROUP, workdir,
                                             trigger="processingTime=1 second", value="text",
                                             extra_source=SOURCE_SETTINGS)
        # what a SIGKILL leaves, in workdir
        self.extra = ("--conf", f"spark.local.dir={workdir / f'spark-local-{job}'}")
        self.runs: list[Run] = []
        self.exits: list[str] = []  # ends the soak did not cause
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    @property
    def current(self) -> Run:
        return self.runs[-1]

    def start(self) -> Run:
        process = start_job(self.name, "--config", str(self.config), log_path=self.log_path, extra=self.extra)
        with self._lock:
            self.runs.append(Run(len(self.runs) + 1, process))
        if not self._sampler.is_alive():
            self._sampler.start()
        return self.current

    def exited(self) -> int | None:
        return self.current.process.poll()

    def end(self, how: str) -> None:
        """SIGKILL the whole application (a no-op on one that has exited) and close its run."""
        kill_group(self.current.process)
        run = self.current
        run.ended, run.lived_s = how, time.monotonic() - run.started
        self.clock.say(f"{self.name} run {run.index} ended ({how}) after {run.lived_s:.0f} s; memory MiB "
                       "first/last/max: "
                       + "; ".join(f"{kind} {'/'.join(map(job_memory.mib, summary))}" for kind in job_memory.KINDS
                                   if (summary := run.memory.first_last_max(kind))))

    def note_exit(self) -> None:
        """The job ended by itself: record how, with the end of its log, and start it again."""
        code = self.exited()
        tail = self.log_path.read_text(errors="replace").splitlines()[-15:]
        self.exits.append(f"{self.name} run {self.current.index} exited with {code} after "
                          f"{time.monotonic() - self.current.started:.0f} s; its log ended:\n    "
                          + "\n    ".join(tail))
        self.end(f"exited by itself with {code}")
        self.clock.say(self.exits[-1])
        self.start()

    def close(self) -> None:
        self._stop.set()
        if self.runs and self.exited() is None:
            kill_group(self.current.process)

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            with self._lock:
                run = self.current
            if run.process.poll() is None:
                found = job_memory.sample(run.process.pid)
                if found:
                    run.memory.samples.append((time.monotonic() - run.started, found))


@dataclass
class Figures:
    kills: int = 0
    restarts: list[float] = field(default_factory=list)  # seconds each broker restart kept it from answering
    ahead: list[str] = field(default_factory=list)  # commits ahead of the sink, in words
    commit_samples: int = 0


def commits_within_sink(committed: dict[int, int], rows: list[tuple[int, int, str]]) -> list[str]:
    """For each partition, the offsets below its committed offset that the sink does not hold (first few)."""
    durable: dict[int, set[int]] = {}
    for partition, offset, _ in rows:
        durable.setdefault(partition, set()).add(offset)
    problems = []
    for partition, offset in sorted(committed.items()):
        missing = [o for o in range(offset) if o not in durable.get(partition, set())]
        if missing:
            problems.append(f"partition {partition} committed {offset}, the sink lacks {len(missing)} offsets below "
                            f"it (first {missing[:5]})")
    return problems


def sink_check(rows: list[tuple[int, int, str]], ends: dict[int, int], acked: dict[tuple[int, int], str]) -> list[str]:
    """Exactly once: every offset below the log ends once, with the value produced there, and nothing else."""
    counts = Counter((partition, offset) for partition, offset, _ in rows)
    expected = {(p, o) for p, end in ends.items() for o in range(end)}
    missing = sorted(expected - counts.keys())
    twice = sorted(position for position, count in counts.items() if count > 1)
    unexpected = sorted(counts.keys() - expected)
    wrong = sorted((p, o) for p, o, value in rows if (p, o) in acked and value != acked[(p, o)])
    unacknowledged = sorted(expected - acked.keys())
    problems = [f"{len(found):,} {what} (first {found[:5]})" for found, what in [
        (missing, "records missing from the sink"), (twice, "records in the sink more than once"),
        (unexpected, "rows in the sink for offsets beyond the log ends"),
        (wrong, "rows whose value is not the one produced at their offset"),
        (unacknowledged, "records in the log the producer never saw acknowledged")] if found]
    return problems


def batch_rates(log_path: Path) -> list[tuple[int, int]]:
    """(rows, rows/s) of every micro-batch the job's runs logged ("batch 7: 5,000 rows, 4,065 rows/s, ...")."""
    return [(int(rows.replace(",", "")), int(rate.replace(",", "")))
            for rows, rate in BATCH_LINE.findall(log_path.read_text(errors="replace"))]


def restart_broker(broker: local_broker.Broker, down_s: float, clock: Clock) -> float:
    """Stop the broker (SIGTERM: it flushes and closes its logs), keep it down `down_s`, start it again on the
    same port and data; the seconds from the stop to its answering again."""
    began = time.monotonic()
    broker.stop()
    time.sleep(down_s)  # the outage itself: a length of time, not a wait for the machine
    broker.restart(timeout=300)
    took = time.monotonic() - began
    clock.say(f"broker restarted: not answering for {took:.1f} s (kept down {down_s:.1f} s)")
    return took


def drain(job: Job, group: GroupView, sink: Sink, ends: dict[int, int], clock: Clock) -> bool:
    """Wait (bounded) until the sink holds every offset below the log ends and the group has committed them."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    total = sum(ends.values())
    while time.monotonic() < deadline:
        if job.exited() is not None:
            job.note_exit()
        if len({(p, o) for p, o, _ in sink.rows()}) >= total and group.committed() == ends:
            return True
        time.sleep(2)
    clock.say(f"not drained within {DRAIN_TIMEOUT_S} s")
    return False


def stop_and_drain(producer: SequenceProducer, group: GroupView, clock: Clock,
                   drained: Callable[[dict[int, int]], bool]) -> tuple[float, dict[int, int], bool, float]:
    """Stop the producer, then wait for the drain (`drained`, given the log ends); (seconds producing, the log
    ends, whether it drained, seconds draining)."""
    produced_for = clock.elapsed()
    producer.stop()
    ends = group.log_ends()
    clock.say(f"producer stopped: {sum(ends.values()):,} records in the log {ends}; draining")
    began = time.monotonic()
    done = drained(ends)
    return produced_for, ends, done, time.monotonic() - began


def soak(args: argparse.Namespace, workdir: Path, clock: Clock) -> bool:
    moments = random.Random(args.seed)
    broker = local_broker.start(data_dir=workdir / "broker")
    producer = job = None
    try:
        clock.say(f"broker up on {broker.bootstrap_servers}")
        create_topic(broker.bootstrap_servers)
        producer = SequenceProducer(broker.bootstrap_servers, args.rate)
        producer.start()
        group, sink = GroupView(broker.bootstrap_servers, GROUP), Sink(workdir / "out")
        job, figures = Job(workdir, broker.bootstrap_servers, clock), Figures()
        job.start()
        ends_at = clock.started + args.minutes * 60
        next_kill = job.current.started + moments.uniform(*args.kill_every)
        next_restart = time.monotonic() + moments.uniform(*args.restart_every)
        while (now := time.monotonic()) < ends_at:
            if job.exited() is not None:
                job.note_exit()
                next_kill = job.current.started + moments.uniform(*args.kill_every)
            elif now >= next_kill:
                committed = group.committed()  # before the sink's rows: the sink only grows meanwhile
                rows = sink.rows()
                ahead = commits_within_sink(committed, rows)
                figures.commit_samples += 1
                figures.ahead += [f"kill {figures.kills + 1}: {problem}" for problem in ahead]
                figures.kills += 1
                job.end(f"kill {figures.kills}")
                clock.say(f"kill {figures.kills}: committed {sum(committed.values()):,}, durable {len(rows):,} "
                          f"({'commits ahead of the sink!' if ahead else 'commits within the sink'})")
                job.start()
                next_kill = job.current.started + moments.uniform(*args.kill_every)
            elif now >= next_restart:
                figures.restarts.append(restart_broker(broker, moments.uniform(*args.down), clock))
                next_restart = time.monotonic() + moments.uniform(*args.restart_every)
            else:
                time.sleep(min(1.0, max(0.0, min(next_kill, next_restart, ends_at) - now)))
        produced_for, ends, drained, drain_s = stop_and_drain(
            producer, group, clock, lambda ends: drain(job, group, sink, ends, clock))
        job.end("stopped after the drain")
        rows, committed = sink.rows(), group.committed()
        return report(args, figures, job, producer, rows, ends, committed, drained, produced_for, drain_s, clock)
    finally:
        try:
            if job is not None:
                job.close()
            if producer is not None:
                producer.stop()
        finally:
            broker.stop()


def report(args, figures: Figures, job: Job, producer: SequenceProducer, rows, ends, committed, drained: bool,
           produced_for: float, drain_s: float, clock: Clock) -> bool:
    total = clock.elapsed()
    exactly_once = sink_check(rows, ends, producer.acked)
    final_commit = [] if committed == ends else [f"after the drain the group committed {committed}, the log ends "
                                                 f"are {ends}"]
    memory = job_memory.flatness_problems([run.memory for run in job.runs])
    checks = [
        ("exactly once in the sink", exactly_once),
        (f"commits never ahead of the sink ({figures.commit_samples} samples, one before each kill)",
         figures.ahead + final_commit),
        ("memory flat", memory),
        ("the job ended only when killed", job.exits),
        ("the producer had no error", producer.errors),
    ]
    restarts = figures.restarts
    print(f"\nsoak {time.strftime('%Y-%m-%d %H:%M')}, seed {args.seed}: {total / 60:.1f} min in all "
          f"({produced_for / 60:.1f} min producing, killing and restarting; {drain_s:.0f} s to drain)")
    print(f"  records: {sum(ends.values()):,} produced ({args.rate}/s asked, "
          f"{sum(ends.values()) / produced_for:.0f}/s written) to {PARTITIONS} partitions; {len(rows):,} rows in the "
          f"sink, {len(rows) / total:.0f} rows/s over the whole soak")
    batches = batch_rates(job.log_path)
    full = [rate for rows, rate in batches if rows == MAX_OFFSETS_PER_TRIGGER]
    print(f"  batches: {len(batches):,}; "
          + (f"{len(full):,} full ones ({MAX_OFFSETS_PER_TRIGGER:,} rows: catching up "
             f"after a restart) at a median {sorted(full)[len(full) // 2]:,} rows/s, "
             f"at most {max(full):,}" if full else "none full (never behind)"))
    print(f"  kills: {figures.kills} (SIGKILL of the whole job; {len(job.runs)} runs, "
          f"lived {min(r.lived_s for r in job.runs):.0f}-{max(r.lived_s for r in job.runs):.0f} s)")
    print(f"  broker restarts: {len(restarts)}" + (f" (not answering {min(restarts):.0f}-{max(restarts):.0f} s each)"
                                                   if restarts else ""))
    print(f"  drained: {'yes' if drained else 'NO'}; group committed {committed}")
    print("  memory of the job's Python processes (largest process of each kind, sampled every "
          f"{SAMPLE_S} s):")
    print("\n".join(job_memory.report([run.memory for run in job.runs])))
    for name, problems in checks:
        print(f"  {'FAIL' if problems else 'ok  '} {name}" + "".join(f"\n         {p}" for p in problems))
    return drained and not any(problems for _, problems in checks)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1_000_000)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kafkasource-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    clock.say(f"soak: {args.minutes:g} min, seed {args.seed} (--seed {args.seed} draws the same moments), "
              f"{args.rate} records/s to {PARTITIONS} partitions, kills every {args.kill_every[0]:g}-"
              f"{args.kill_every[1]:g} s, "
              + (f"node outages every {args.node_every[0]:g}-{args.node_every[1]:g} s on a 3-node cluster"
                 if args.cluster else
                 f"broker restarts every {args.restart_every[0]:g}-{args.restart_every[1]:g} s")
              + f"; working in {workdir}")
    if args.cluster:
        from bench import soak_cluster  # it builds on this module

        passed = soak_cluster.soak(args, workdir, clock)
    else:
        passed = soak(args, workdir, clock)
    if passed and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"kept {workdir} (spark-submit.log, broker/, out/, ck/)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
