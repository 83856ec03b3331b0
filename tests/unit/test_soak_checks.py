"""The soak test's checks (bench/soak.py, bench/job_memory.py) fail on what they look for and pass on what is
right: exactly once in the sink, commits within the sink, memory flat, and which process is which kind.
Pure logic on made-up rows and samples: no broker, no Spark."""

from __future__ import annotations

from bench.job_memory import WARM_UP_S, RunMemory, flatness_problems, kind_of
from bench.soak import commits_within_sink, sink_check

ENDS = {0: 3, 1: 2}
ACKED = {(0, 0): "0:0", (0, 1): "0:1", (0, 2): "0:2", (1, 0): "1:0", (1, 1): "1:1"}
EXACT = [(p, o, value) for (p, o), value in ACKED.items()]


def test_sink_check_passes_every_offset_once_with_its_value():
    assert sink_check(EXACT, ENDS, ACKED) == []


def test_sink_check_names_missing_repeated_extra_and_altered_rows():
    rows = [row for row in EXACT if row[:2] != (0, 1)] + [(1, 0, "1:0"), (1, 2, "1:2")]
    rows = [(p, o, "0:9" if (p, o) == (0, 2) else value) for p, o, value in rows]

    assert sink_check(rows, ENDS, ACKED) == [
        "1 records missing from the sink (first [(0, 1)])",
        "1 records in the sink more than once (first [(1, 0)])",
        "1 rows in the sink for offsets beyond the log ends (first [(1, 2)])",
        "1 rows whose value is not the one produced at their offset (first [(0, 2)])"]


def test_sink_check_names_log_records_the_producer_never_saw_acknowledged():
    acked = {position: value for position, value in ACKED.items() if position != (1, 1)}

    assert sink_check(EXACT, ENDS, acked) == [
        "1 records in the log the producer never saw acknowledged (first [(1, 1)])"]


def test_commits_within_the_sink_pass_and_commits_ahead_name_what_the_sink_lacks():
    rows = [row for row in EXACT if row[:2] != (0, 1)]

    assert commits_within_sink({0: 1, 1: 2}, rows) == []
    assert commits_within_sink({0: 3, 1: 2}, rows) == [
        "partition 0 committed 3, the sink lacks 1 offsets below it (first [1])"]


def run_of(kind: str, mib_by_second: dict[float, int]) -> RunMemory:
    return RunMemory([(at, {kind: (1, mib * 1024)}) for at, mib in mib_by_second.items()])


def test_memory_is_flat_when_it_only_grows_during_warm_up():
    warming = run_of("workers", {10: 44, 20: 110, 10 + WARM_UP_S: 118, 10 + 3 * WARM_UP_S: 120})

    assert flatness_problems([warming, warming]) == []


def test_memory_growing_after_warm_up_within_a_run_is_named():
    leaking = run_of("driver", {0: 100, WARM_UP_S: 160, 3 * WARM_UP_S: 210})

    assert flatness_problems([leaking]) == ["run 1: driver grew from 160 to 210 MiB after warm-up"]


def test_memory_peaks_rising_from_run_to_run_are_named_and_runs_killed_during_warm_up_count_in_neither_half():
    killed_early = run_of("source runner", {0: 40, WARM_UP_S / 2: 47})
    steady = run_of("source runner", {0: 100, WARM_UP_S: 107, 2 * WARM_UP_S: 107})
    higher = run_of("source runner", {0: 100, WARM_UP_S: 150, 2 * WARM_UP_S: 150})

    assert flatness_problems([killed_early, steady, steady, steady]) == []
    assert flatness_problems([killed_early, steady, higher]) == [
        "source runner: peaks after warm-up rose across runs, from 107 MiB (earlier half) to 150 MiB (later half)"]


def test_process_kinds_from_command_lines():
    python = b"/usr/bin/python3"
    daemon = [python, b"-m", b"pyspark.daemon", b"pyspark.worker"]

    assert kind_of([python, b"/repo/jobs/ingest.py", b"--config", b"c.toml"], [b"java"]) == "driver"
    assert kind_of([python, b"-m", b"pyspark.sql.streaming.python_streaming_source_runner"], [b"java"]) \
        == "source runner"
    assert kind_of(daemon, [b"/usr/bin/java", b"-cp", b"x"]) == "worker daemon"
    assert kind_of(daemon, daemon) == "workers"
    assert kind_of([python, b"-m", b"pyspark.daemon", b"pyspark.sql.worker.plan_data_source_read"], [b"java"]) is None
    assert kind_of([b"/usr/bin/java", b"-cp", b"x"], [b"bash"]) is None
