"""Driver-side planning of the stream reader, with small fakes of our own client and committer."""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable

import pytest

from kafkasource.errors import BrokerUnavailableError, DataLossError, KafkaSourceError
from kafkasource.options import parse_options
from kafkasource.planning.offsets import TOPIC_IDS_KEY
from kafkasource.runtime.spark_api import ReadAllAvailable, ReadMaxRows, ReadMinRows
from kafkasource.stream import KafkaStreamReader
from tests.support.fakes import FakeClock


class FakeClient:
    """The cluster as tables: topic -> [(log start, log end) per partition]; committed offsets."""

    def __init__(self, logs: dict[str, list[tuple[int, int]]], committed=None):
        self.logs = logs
        self.committed_offsets = committed or {}
        self.ids = {t: f"{t}-id-1" for t in logs}
        self.asked: list[str] = []  # the metadata and topic-id requests, in order

    def topics(self):
        self.asked.append("metadata")
        return {t: len(parts) for t, parts in self.logs.items()}

    def topic_ids(self, topics):
        self.asked.append("topic ids")
        return {t: self.ids[t] for t in topics}

    def beginning(self, partitions):
        return {(t, p): self.logs[t][p][0] for t, p in partitions}

    def end(self, partitions):
        unknown = [(t, p) for t, p in partitions if p >= len(self.logs.get(t, []))]
        if unknown:  # as the real client's ListOffsets fails for a partition the cluster no longer has
            raise KafkaSourceError(f"could not list latest offsets: Unknown topic or partition {unknown}")
        return {(t, p): self.logs[t][p][1] for t, p in partitions}

    def committed(self, partitions):
        return {tp: self.committed_offsets.get(tp) for tp in partitions}

    def for_times(self, timestamps):
        return {tp: None for tp in timestamps}

    def close(self):
        pass


class FakeCommitter:
    def __init__(self):
        self.commits = []
        self.final_commits = []
        self.restarts = []
        self.closed = 0

    def commit(self, positions):
        self.commits.append(dict(positions))

    def restart(self, partitions):
        self.restarts.append(sorted(partitions))

    def commit_final(self, positions):
        self.final_commits.append(dict(positions))

    def close(self):
        self.closed += 1


# the ids of the topic beside the positions, as every end the reader plans carries them (FakeClient's ids)
T_ID, T_ID2 = {TOPIC_IDS_KEY: {"t": "t-id-1"}}, {TOPIC_IDS_KEY: {"t": "t-id-2"}}


def reader(client, clock: Callable[[], float] = time.monotonic, **options) -> tuple[KafkaStreamReader, FakeCommitter]:
    # the tests below change the cluster between two triggers: each trigger asks its metadata, unless a test says
    opts = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "metadataRefreshIntervalMs": "0", **options}
    committer = FakeCommitter()
    return KafkaStreamReader(parse_options(opts), client=client, committer=committer, clock=clock), committer


def test_first_start_is_not_committed_then_each_completed_end_is():
    client = FakeClient({"t": [(0, 10), (0, 4)]}, committed={("t", 0): 3})
    stream, committer = reader(client, **{"kafka.group.id": "g", "kafka.auto.offset.reset": "earliest"})

    initial = stream.initialOffset()
    assert initial == {"t": {"0": 3, "1": 0}, **T_ID}
    end = stream.latestOffset(initial, ReadAllAvailable())
    assert end == {"t": {"0": 10, "1": 4}, **T_ID}
    assert committer.commits == []  # nothing has completed yet

    assert stream.latestOffset(end, ReadAllAvailable()) == end  # idle: same end, no new batch
    assert committer.commits == [{("t", 0): 10, ("t", 1): 4}]
    stream.commit(end)  # Spark's late signal for the same batch is passed on too; the committer dedupes
    assert committer.commits[-1] == {("t", 0): 10, ("t", 1): 4}


def test_available_now_stops_at_ends_fixed_at_start_and_ignores_new_partitions():
    client = FakeClient({"t": [(0, 10)]})
    stream, _ = reader(client, startingOffsets="earliest")
    start = stream.initialOffset()
    stream.prepareForTriggerAvailableNow()
    client.logs = {"t": [(0, 25), (0, 7)]}  # more records and a new partition after the run started

    end = stream.latestOffset(start, ReadMaxRows(6))
    assert end == {"t": {"0": 6, "1": 0}, **T_ID}
    end = stream.latestOffset(end, ReadMaxRows(6))
    assert end == {"t": {"0": 10, "1": 0}, **T_ID}
    assert stream.latestOffset(end, ReadMaxRows(6)) == end  # done: the run can stop
    assert stream.reportLatestOffset() == {"t": {"0": 25, "1": 7}}  # progress still shows the real log end


def test_progress_latest_offset_is_the_bare_map_of_the_log_ends_with_or_without_a_read_limit():
    client = FakeClient({"t": [(0, 10), (0, 4)]})
    stream, _ = reader(client, startingOffsets="earliest")
    start = stream.initialOffset()
    assert stream.reportLatestOffset() is None  # no log end looked at yet

    end = stream.latestOffset(start, ReadAllAvailable())  # the planned end is the log ends: its JSON is reused
    assert end == {"t": {"0": 10, "1": 4}, **T_ID}
    assert stream.reportLatestOffset() == {"t": {"0": 10, "1": 4}}
    assert end == {"t": {"0": 10, "1": 4}, **T_ID}  # the reused JSON is left as Spark was handed it

    client.logs = {"t": [(0, 30), (0, 9)]}
    limited = stream.latestOffset(end, ReadMaxRows(6))
    assert limited == {"t": {"0": 14, "1": 6}, **T_ID}
    assert stream.reportLatestOffset() == {"t": {"0": 30, "1": 9}}


def test_available_now_waits_for_the_final_commit_only_once_the_target_is_reached():
    client = FakeClient({"t": [(0, 10), (0, 4)]})
    stream, committer = reader(client, **{"kafka.group.id": "g", "kafka.auto.offset.reset": "earliest"})
    start = stream.initialOffset()
    stream.prepareForTriggerAvailableNow()

    first = stream.latestOffset(start, ReadMaxRows(8))
    second = stream.latestOffset(first, ReadMaxRows(8))  # the first batch completed: an ordinary commit
    assert second == {"t": {"0": 10, "1": 4}, **T_ID}
    assert committer.commits == [{("t", 0): 6, ("t", 1): 2}] and committer.final_commits == []

    assert stream.latestOffset(second, ReadMaxRows(8)) == second  # the run ends here
    assert committer.final_commits == [{("t", 0): 10, ("t", 1): 4}]
    assert len(committer.commits) == 1


def test_stop_flushes_and_closes_once():
    stream, committer = reader(FakeClient({"t": [(0, 5)]}), **{"kafka.group.id": "g"})
    stream.stop()
    stream.stop()  # should a later Spark call stop() after our SIGTERM path did, nothing runs twice
    assert committer.closed == 1


def test_new_partition_joins_at_its_log_start():
    client = FakeClient({"t": [(0, 5)]})
    stream, _ = reader(client, startingOffsets="earliest")
    start = stream.initialOffset()
    client.logs = {"t": [(0, 5), (3, 9)]}

    end = stream.latestOffset(start, ReadAllAvailable())

    assert end == {"t": {"0": 5, "1": 9}, **T_ID}
    ranges = [r for p in stream.partitions(start, end) for r in p.ranges]
    assert [(r.partition, r.start, r.until) for r in ranges] == [(0, 0, 5), (1, 3, 9)]


def test_max_rows_limit_and_min_rows_wait():
    client = FakeClient({"t": [(0, 30), (0, 10)]})
    stream, _ = reader(client, startingOffsets="earliest", maxOffsetsPerTrigger="60", minOffsetsPerTrigger="50",
                       maxTriggerDelay="1h")
    start = stream.initialOffset()
    assert stream.getDefaultReadLimit() == ReadMinRows(50)
    assert stream.latestOffset(start, ReadMinRows(50)) == start  # 40 < 50 records: wait
    assert stream.latestOffset(start, ReadMaxRows(20)) == {"t": {"0": 15, "1": 5}, **T_ID}  # shared by backlog
    assert stream.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 30, "1": 10}, **T_ID}
    client.logs = {"t": [(0, 100), (0, 10)]}
    assert stream.latestOffset(start, ReadMinRows(50)) == {"t": {"0": 54, "1": 6}, **T_ID}  # enough; capped by max 60


def test_min_rows_wait_ends_once_max_trigger_delay_has_passed_since_the_last_batch():
    clock = FakeClock()
    client = FakeClient({"t": [(0, 30)]})
    stream, _ = reader(client, clock, startingOffsets="earliest", minOffsetsPerTrigger="50", maxTriggerDelay="10s")
    start = stream.initialOffset()

    assert stream.latestOffset(start, ReadMinRows(50)) == start  # 30 < 50 records: wait
    clock.now = 9.5
    assert stream.latestOffset(start, ReadMinRows(50)) == start  # still within maxTriggerDelay
    clock.now = 10.0
    end = stream.latestOffset(start, ReadMinRows(50))
    assert end == {"t": {"0": 30}, **T_ID}  # the delay has passed: the records there are

    client.logs = {"t": [(0, 40)]}
    assert stream.latestOffset(end, ReadMinRows(50)) == end  # the delay counts again from that batch
    clock.now = 20.0
    assert stream.latestOffset(end, ReadMinRows(50)) == {"t": {"0": 40}, **T_ID}


def test_vanished_topic_is_reported():
    client = FakeClient({"t": [(0, 5)]})
    stream, _ = reader(client, startingOffsets="earliest")
    start = stream.initialOffset()
    client.logs = {}

    with pytest.raises(DataLossError, match=r"t-0 no longer exists in the cluster"):
        stream.latestOffset(start, ReadAllAvailable())

    lenient, _ = reader(client, startingOffsets="earliest", failOnDataLoss="false")
    assert lenient.latestOffset(start, ReadAllAvailable()) == {}


def test_deleted_topic_names_the_records_it_had_not_read(caplog):
    client = FakeClient({"t": [(0, 5)]})
    stream, _ = reader(client, startingOffsets="earliest", maxOffsetsPerTrigger="2", failOnDataLoss="false")
    start = stream.initialOffset()
    end = stream.latestOffset(start, ReadMaxRows(2))  # reads 0..1 of the 5 records it saw
    client.logs = {}

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        assert stream.latestOffset(end, ReadMaxRows(2)) == {}
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "t-0 no longer exists in the cluster (topic deleted?); at least 3 records the query had not read are lost "
        "(t-0 2..4) (failOnDataLoss=false: the query stops reading it)"]


def test_recreated_topic_is_read_again_from_its_new_start_or_fails(caplog):
    client = FakeClient({"t": [(0, 10)]})
    stream, _ = reader(client, startingOffsets="earliest", failOnDataLoss="false")
    start = stream.initialOffset()
    end = stream.latestOffset(start, ReadAllAvailable())
    client.logs = {"t": [(0, 12)]}  # 2 more records are seen, then the topic is recreated with 4 records
    stream.latestOffset(end, ReadMaxRows(1))  # a batch of 1 is planned: 10..10
    client.logs = {"t": [(0, 4)]}

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        again = stream.latestOffset({"t": {"0": 11}}, ReadAllAvailable())
    assert again == {"t": {"0": 4}, **T_ID}
    assert [(r.partition, r.start, r.until) for p in stream.partitions({"t": {"0": 11}}, again) for r in p.ranges] \
        == [(0, 0, 4)]
    assert caplog.records[-1].getMessage() == (
        "the log of t-0 now ends at 4, below the query's position 11 (topic recreated or truncated); at least 1 record "
        "the query had not read are lost (t-0 11..11) (failOnDataLoss=false: reading it again from its log start 0)")

    strict, _ = reader(client, startingOffsets="earliest")
    with pytest.raises(DataLossError, match=r"the log of t-0 now ends at 4, below the query's position 11 "):
        strict.latestOffset({"t": {"0": 11}}, ReadAllAvailable())


def test_a_log_that_went_back_is_committed_from_the_new_log_and_never_at_the_old_position():
    client = FakeClient({"t": [(0, 100)]})
    stream, committer = reader(client, startingOffsets="earliest", failOnDataLoss="false",
                               **{"kafka.group.id": "g"})
    first = stream.latestOffset(stream.initialOffset(), ReadAllAvailable())  # the batch 0..100
    client.logs = {"t": [(0, 30)]}  # recreated and refilled with 30 records while that batch ran

    second = stream.latestOffset(first, ReadAllAvailable())
    stream.commit(first)  # Spark's commit of the first batch, one batch late
    third = stream.latestOffset(second, ReadAllAvailable())

    assert (second, third) == ({"t": {"0": 30}, **T_ID}, {"t": {"0": 30}, **T_ID})
    assert committer.restarts == [[("t", 0)]]
    assert committer.commits == [{("t", 0): 30}]  # never 100 into the new log; 30 although it is lower


def test_a_topic_recreated_past_the_query_position_is_told_by_its_id(caplog):
    client = FakeClient({"t": [(0, 10)]})
    stream, committer = reader(client, startingOffsets="earliest", failOnDataLoss="false",
                               **{"kafka.group.id": "g"})
    first = stream.latestOffset(stream.initialOffset(), ReadAllAvailable())  # the batch 0..10
    client.logs, client.ids = {"t": [(0, 25)]}, {"t": "t-id-2"}  # recreated with 25 records: its log only grew

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        second = stream.latestOffset(first, ReadAllAvailable())
    assert second == {"t": {"0": 25}, **T_ID2}
    assert [(r.start, r.until) for p in stream.partitions(first, second) for r in p.ranges] == [(0, 25)]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "topic t was deleted and created again (its topic id changed from t-id-1 to t-id-2); it held no record the "
        "query had seen and not read (failOnDataLoss=false: reading it again from its log start)"]
    assert (committer.restarts, committer.commits) == ([[("t", 0)]], [])
    stream.latestOffset(second, ReadAllAvailable())
    assert committer.commits == [{("t", 0): 25}]

    strict, _ = reader(client, startingOffsets="earliest")
    start = strict.initialOffset()  # sees t-id-2
    client.ids = {"t": "t-id-3"}
    with pytest.raises(DataLossError, match=r"^topic t was deleted and created again \(its topic id changed from "
                                            r"t-id-2 to t-id-3\); .* set failOnDataLoss=false"):
        strict.latestOffset(start, ReadAllAvailable())


def test_a_topic_recreated_while_the_query_was_stopped_is_told_by_the_id_its_checkpoint_kept(caplog):
    client = FakeClient({"t": [(0, 10)]})
    first_run, _ = reader(client, startingOffsets="earliest", **{"kafka.group.id": "g"})
    checkpoint = first_run.latestOffset(first_run.initialOffset(), ReadAllAvailable())  # the batch 0..10
    assert checkpoint == {"t": {"0": 10}, **T_ID}
    client.logs, client.ids = {"t": [(0, 25)]}, {"t": "t-id-2"}  # while stopped: recreated, refilled with 25 records

    restarted, committer = reader(client, startingOffsets="earliest", failOnDataLoss="false",
                                  **{"kafka.group.id": "g"})
    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        end = restarted.latestOffset(checkpoint, ReadAllAvailable())
    assert end == {"t": {"0": 25}, **T_ID2}
    assert ranges_of(restarted, checkpoint, end) == [(0, 25)]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "topic t was deleted and created again (its topic id changed from t-id-1 to t-id-2); it held no record the "
        "query had seen and not read (failOnDataLoss=false: reading it again from its log start)"]
    assert (committer.restarts, committer.commits) == ([[("t", 0)]], [])  # never the old log's 10 into the new one
    restarted.latestOffset(end, ReadAllAvailable())
    assert committer.commits == [{("t", 0): 25}]

    strict, _ = reader(client, startingOffsets="earliest")
    with pytest.raises(DataLossError, match=r"^topic t was deleted and created again \(its topic id changed from "
                                            r"t-id-1 to t-id-2\); .* set failOnDataLoss=false"):
        strict.latestOffset(checkpoint, ReadAllAvailable())


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_an_available_now_run_restarted_over_a_recreated_topic_compares_the_ids_at_its_first_trigger(
        fail_on_data_loss, caplog):
    """prepareForTriggerAvailableNow asks the metadata, so the first trigger finds none due: it compares the ids the
    checkpoint kept with the cluster's all the same, with one DescribeTopics request and no second metadata one."""
    client, clock = FakeClient({"t": [(0, 50)]}), FakeClock()
    first_run, _ = reader(client, clock, startingOffsets="earliest", metadataRefreshIntervalMs="5000")
    start = first_run.initialOffset()
    first_run.prepareForTriggerAvailableNow()
    checkpoint = first_run.latestOffset(start, ReadAllAvailable())
    assert checkpoint == {"t": {"0": 50}, **T_ID}
    client.logs, client.ids = {"t": [(0, 80)]}, {"t": "t-id-2"}  # while stopped: recreated, refilled with 80 records

    client.asked.clear()
    restarted, committer = reader(client, clock, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                                  metadataRefreshIntervalMs="5000", **{"kafka.group.id": "g"})
    restarted.prepareForTriggerAvailableNow()
    if fail_on_data_loss == "true":
        with pytest.raises(DataLossError, match=r"^topic t was deleted and created again \(its topic id changed from "
                                                r"t-id-1 to t-id-2\); .* set failOnDataLoss=false"):
            restarted.latestOffset(checkpoint, ReadAllAvailable())
        assert client.asked == ["metadata", "topic ids"]
        assert (committer.commits, committer.final_commits) == ([], [])  # never the old log's 50 into the new one
        return

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        end = restarted.latestOffset(checkpoint, ReadAllAvailable())
    assert end == {"t": {"0": 80}, **T_ID2}  # the checkpoint's next entry carries the new id
    assert ranges_of(restarted, checkpoint, end) == [(0, 80)]  # the new log from its start, not 50..80
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "topic t was deleted and created again (its topic id changed from t-id-1 to t-id-2); it held no record the "
        "query had seen and not read (failOnDataLoss=false: reading it again from its log start)"]
    assert restarted.latestOffset(end, ReadAllAvailable()) == end  # the run is done
    assert client.asked == ["metadata", "topic ids"]  # once per run; later triggers within the interval ask neither
    assert (committer.restarts, committer.commits, committer.final_commits) == ([[("t", 0)]], [], [{("t", 0): 80}])


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_batch_replayed_from_the_checkpoint_over_a_recreated_topic_is_not_read_at_the_old_positions(
        fail_on_data_loss, caplog):
    """A run that stopped after planning a batch (offsets 25..50) and before completing it: the restarted run replays
    that batch first, with partitions() and no latestOffset before it. Its ids are compared there."""
    client, clock = FakeClient({"t": [(0, 50)]}), FakeClock()
    first_run, _ = reader(client, clock, startingOffsets="earliest", metadataRefreshIntervalMs="5000")
    first_run.prepareForTriggerAvailableNow()
    done = first_run.latestOffset(first_run.initialOffset(), ReadMaxRows(25))
    planned = first_run.latestOffset(done, ReadMaxRows(25))
    assert (done, planned) == ({"t": {"0": 25}, **T_ID}, {"t": {"0": 50}, **T_ID})
    client.logs, client.ids = {"t": [(0, 80)]}, {"t": "t-id-2"}  # while stopped: recreated, refilled with 80 records

    client.asked.clear()
    restarted, committer = reader(client, clock, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                                  metadataRefreshIntervalMs="5000", **{"kafka.group.id": "g"})
    restarted.prepareForTriggerAvailableNow()
    lost = ("topic t was deleted and created again (its topic id changed from t-id-1 to t-id-2) after the batch "
            "replayed from the checkpoint was planned; at least 25 records the query had not read are lost "
            "(t-0 25..49)")
    if fail_on_data_loss == "true":
        with pytest.raises(DataLossError) as raised:
            restarted.partitions(done, planned)
        assert str(raised.value).startswith(lost + ". Some data may have been lost. If this is expected, set "
                                            "failOnDataLoss=false")
        return

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        assert ranges_of(restarted, done, planned) == []  # nothing of the new log at the old log's offsets 25..49
        assert client.asked == ["metadata", "topic ids"]
        first = restarted.latestOffset(planned, ReadMaxRows(30))
        restarted.commit(planned)  # Spark's late commit of the replayed batch: the old log's 50
        assert (first, ranges_of(restarted, planned, first)) == ({"t": {"0": 30}, **T_ID2}, [(0, 30)])
        rest = restarted.latestOffset(first, ReadMaxRows(60))
        assert (rest, ranges_of(restarted, first, rest)) == ({"t": {"0": 80}, **T_ID2}, [(30, 80)])
        assert restarted.latestOffset(rest, ReadMaxRows(60)) == rest  # the run is done
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        lost + " (failOnDataLoss=false: the replayed batch skips it; the next batch reads it again from its log start)"]
    # the metadata as the run started; the ids at the replay, then at the next plan comparing them again; none since
    assert client.asked == ["metadata", "topic ids", "topic ids"]
    assert committer.restarts == [[("t", 0)]]
    # never the old log's 25 or 50 into the new one
    assert (committer.commits, committer.final_commits) == ([{("t", 0): 30}], [{("t", 0): 80}])


def test_a_checkpoint_without_topic_ids_resumes_without_data_loss_and_keeps_ids_from_then_on(caplog):
    client = FakeClient({"t": [(0, 25)]})
    restarted, _ = reader(client, startingOffsets="earliest")  # failOnDataLoss=true: any data loss would raise

    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        end = restarted.latestOffset({"t": {"0": 10}}, ReadAllAvailable())  # written before ids were kept
    assert end == {"t": {"0": 25}, **T_ID}
    assert ranges_of(restarted, {"t": {"0": 10}}, end) == [(10, 25)]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_metadata_and_topic_ids_are_asked_at_most_every_interval_and_new_partitions_join_within_it():
    client, clock = FakeClient({"t": [(0, 10)]}), FakeClock()
    stream, _ = reader(client, clock, startingOffsets="earliest", metadataRefreshIntervalMs="5000")
    start = stream.initialOffset()
    assert client.asked == ["metadata", "topic ids"]
    client.logs = {"t": [(0, 12), (0, 3)]}  # a partition added, and 2 records in t-0

    clock.now = 4.9
    end = stream.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 12}, **T_ID}  # the log ends are asked at every trigger, the metadata not yet
    assert client.asked == ["metadata", "topic ids"]

    clock.now = 5.0
    joined = stream.latestOffset(end, ReadAllAvailable())
    assert joined == {"t": {"0": 12, "1": 3}, **T_ID}  # within the interval: the new partition joins from its start
    assert ranges_of(stream, end, joined) == [(0, 3)]
    assert client.asked == ["metadata", "topic ids"] * 2


def test_a_topic_deleted_between_two_metadata_requests_is_found_at_the_next_trigger(caplog):
    client, clock = FakeClient({"t": [(0, 10)], "u": [(0, 5)]}), FakeClock()
    stream, _ = reader(client, clock, subscribe="t,u", startingOffsets="earliest", failOnDataLoss="false",
                       metadataRefreshIntervalMs="5000")
    end = stream.latestOffset(stream.initialOffset(), ReadAllAvailable())
    del client.logs["u"]  # the log ends of u-0 fail as the real ListOffsets does: the metadata is asked at once

    clock.now = 1.0
    with caplog.at_level(logging.WARNING, logger="kafkasource.stream"):
        after = stream.latestOffset(end, ReadAllAvailable())
    assert after == {"t": {"0": 10}, TOPIC_IDS_KEY: {"t": "t-id-1"}}
    assert client.asked == ["metadata", "topic ids"] * 2
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "u-0 no longer exists in the cluster (topic deleted?); it held no record the query had seen and not read "
        "(failOnDataLoss=false: the query stops reading it)"]


def test_a_trigger_builds_the_offsets_json_once_and_parses_what_spark_hands_back_once(monkeypatch):
    import kafkasource.planning.stream_plan as plan_module  # where the reader's offsets JSON is built and parsed

    calls = {"to_json_dict": 0, "from_json_dict": 0}
    for name in calls:
        original = getattr(plan_module, name)
        monkeypatch.setattr(plan_module, name, lambda *a, _f=original, _n=name: calls.__setitem__(_n, calls[_n] + 1)
                            or _f(*a))
    client = FakeClient({"t": [(0, 10), (0, 10)]})
    stream, committer = reader(client, startingOffsets="earliest", **{"kafka.group.id": "g"})
    start = json.loads(json.dumps(stream.initialOffset()))  # Spark hands the offsets back as new objects
    first = json.loads(json.dumps(stream.latestOffset(start, ReadAllAvailable())))
    stream.partitions(start, first)
    stream.commit(first)
    calls.update(to_json_dict=0, from_json_dict=0)
    client.logs = {"t": [(0, 11), (0, 10)]}

    second = json.loads(json.dumps(stream.latestOffset(first, ReadAllAvailable())))
    stream.partitions(first, second)
    stream.commit(second)
    assert calls == {"to_json_dict": 1, "from_json_dict": 0}  # one JSON built; the ones handed back known already
    # each completed batch's end, as Spark hands it over (latestOffset's start, then commit())
    assert committer.commits == [{("t", 0): 10, ("t", 1): 10}] * 2 + [{("t", 0): 11, ("t", 1): 10}]


def tasks_after(partitions: int, ends: dict[int, int], **options) -> list:
    """The tasks a stream over topic t (`partitions` logs of 0..100, started at the latest offsets) plans for the
    trigger after the logs of the partitions in `ends` grew to those ends."""
    client = FakeClient({"t": [(0, 100)] * partitions})
    stream, _ = reader(client, startingOffsets="latest", **options)
    start = stream.initialOffset()
    client.logs = {"t": [(0, ends.get(p, 100)) for p in range(partitions)]}
    return stream.partitions(start, stream.latestOffset(start, ReadAllAvailable()))


@pytest.mark.parametrize("options, tasks", [({}, 1), ({"packRecordsPerTask": "2"}, 20), ({"readPath": "python"}, 1),
                                            ({"readPath": "native"}, 20), ({"minPartitions": "20"}, 20)],
                         ids=["packed-by-default", "packRecordsPerTask-below-the-ranges", "python", "native",
                              "minPartitions"])
def test_a_trigger_with_records_in_20_of_10000_partitions_makes_tasks_only_for_those(options, tasks):
    """20 ranges of 3 records: packed into one task unless packRecordsPerTask is below them, readPath=native asks
    for the native consumer, which reads one range a task, or minPartitions for at least 20 tasks."""
    moving = list(range(0, 10_000, 500))  # 20 partitions, 3 records each
    planned = tasks_after(10_000, {p: 103 for p in moving}, **options)
    assert len(planned) == tasks
    assert sorted((r.partition, r.start, r.until) for task in planned for r in task.ranges) == [
        (p, 100, 103) for p in moving]


@pytest.mark.parametrize("moving, tasks", [(7, [1] * 7), (8, [8])])
def test_a_stream_packs_its_thin_ranges_from_eight_of_them_on(moving, tasks):
    """Seven ranges of 3 records keep a task each (the native consumer reads them where built); eight share one."""
    planned = tasks_after(20, {p: 103 for p in range(moving)})
    assert [len(task.ranges) for task in planned] == tasks


def test_ranges_of_a_thousand_records_or_more_keep_a_task_each_beside_the_packed_ones():
    planned = tasks_after(10, {p: 1100 if p < 2 else 105 for p in range(10)})
    assert sorted(tuple((r.partition, r.size) for r in task.ranges) for task in planned) == [
        ((0, 1000),), ((1, 1000),), tuple((p, 5) for p in range(2, 10))]


def ranges_of(stream, start, end) -> list[tuple[int, int]]:
    return [(r.start, r.until) for p in stream.partitions(start, end) for r in p.ranges]


def test_a_new_log_that_ends_where_the_old_position_was_is_read_once_and_committed():
    client = FakeClient({"t": [(0, 1000)]})
    stream, committer = reader(client, startingOffsets="earliest", failOnDataLoss="false",
                               **{"kafka.group.id": "g"})
    start = stream.initialOffset()
    first = stream.latestOffset(start, ReadAllAvailable())  # 0..1000
    assert ranges_of(stream, start, first) == [(0, 1000)]
    client.ids = {"t": "t-id-2"}  # recreated and refilled with exactly 1000 records

    second = stream.latestOffset(first, ReadAllAvailable())
    stream.commit(first)  # Spark's late commit of the old log's 1000
    assert (second, ranges_of(stream, first, second)) == ({"t": {"0": 1000}, **T_ID2}, [(0, 1000)])
    client.logs = {"t": [(0, 1100)]}
    third = stream.latestOffset(second, ReadAllAvailable())
    assert ranges_of(stream, second, third) == [(1000, 1100)]  # never the new log's 0..1000 again
    assert committer.commits == [{("t", 0): 1000}]  # the new log's 1000, although the old one had the same offset


class FailingClient(FakeClient):
    """The cluster, until `fail` is set: then its metadata request fails as an unreachable broker's does."""

    fail = False

    def topics(self):
        if self.fail:
            raise BrokerUnavailableError("could not list topics: Kafka at 127.0.0.1:9 did not answer")
        return super().topics()


def test_a_completed_batch_is_committed_even_when_planning_the_next_one_fails():
    client = FailingClient({"t": [(0, 10)]})
    stream, committer = reader(client, startingOffsets="earliest", **{"kafka.group.id": "g"})
    first = stream.latestOffset(stream.initialOffset(), ReadAllAvailable())
    client.fail = True

    with pytest.raises(BrokerUnavailableError, match="could not list topics"):
        stream.latestOffset(first, ReadAllAvailable())
    assert committer.commits == [{("t", 0): 10}]


def test_reader_pickles_without_its_clients():
    stream, _ = reader(FakeClient({"t": [(0, 5)]}), **{"kafka.group.id": "g", "kafka.sasl.password": "hunter2"})
    stream.initialOffset()  # the client and committer are in use
    shipped = pickle.dumps(stream)
    assert b"FakeClient" not in shipped and b"FakeCommitter" not in shipped
    assert "hunter2" not in repr(pickle.loads(shipped).options)


class FakeTransactionalClient(FakeClient):
    """Under read_committed, `end` answers the last stable offsets (the `logs` table) and `high_watermarks` the log
    ends above them (`high`: topic -> [high watermark per partition])."""

    def __init__(self, logs, high):
        super().__init__(logs)
        self.high = high
        self.high_watermark_requests = 0

    def high_watermarks(self, partitions):
        self.high_watermark_requests += 1
        return {(t, p): self.high[t][p] for t, p in partitions}


def held_back_warnings(caplog) -> list[str]:
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    caplog.clear()
    return messages


def held_back(partition: str, offset: int, seconds: int, end: int) -> str:
    return (f"an open transaction holds back {partition}: its last stable offset has stayed at {offset} "
            f"for {seconds} s "
            f"while the log ends at {end}; under kafka.isolation.level=read_committed the query reads nothing from "
            f"offset {offset} on until the transaction commits or aborts (the brokers abort it once its producer's "
            "transaction.timeout.ms has passed; kafka-transactions.sh find-hanging lists transactions that never end)")


def test_a_partition_an_open_transaction_holds_back_is_reported_after_a_minute_then_once_a_minute(caplog):
    clock = FakeClock()
    client = FakeTransactionalClient({"t": [(0, 5), (0, 4)]}, high={"t": [12, 4]})  # t-0 held at 5, t-1 not held
    stream, _ = reader(client, clock, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
    start = stream.initialOffset()

    def trigger_at(seconds: float) -> list[str]:
        clock.now = seconds
        with caplog.at_level(logging.WARNING, logger="kafkasource.planning.held_back"):
            assert stream.latestOffset(end, ReadAllAvailable()) == end  # nothing more to read meanwhile
        return held_back_warnings(caplog)

    end = stream.latestOffset(start, ReadAllAvailable())
    assert end == {"t": {"0": 5, "1": 4}, **T_ID}  # up to the last stable offset
    assert trigger_at(59.9) == []
    assert trigger_at(60.0) == [held_back("t-0", 5, 60, 12)]
    assert trigger_at(61.0) == trigger_at(119.9) == []  # at most once a minute
    assert trigger_at(120.0) == [held_back("t-0", 5, 120, 12)]

    client.logs, client.high = {"t": [(0, 8), (0, 4)]}, {"t": [14, 4]}  # the stable offset moved: counted anew
    clock.now = 130.0
    end = stream.latestOffset(end, ReadAllAvailable())
    assert end == {"t": {"0": 8, "1": 4}, **T_ID}
    assert trigger_at(189.9) == []
    assert trigger_at(190.0) == [held_back("t-0", 8, 60, 14)]

    client.logs = {"t": [(0, 14), (0, 4)]}  # the transaction ended: nothing is held back any more
    clock.now = 200.0
    end = stream.latestOffset(end, ReadAllAvailable())
    assert end == {"t": {"0": 14, "1": 4}, **T_ID}
    assert trigger_at(400.0) == []
    client.logs, client.high = {"t": [(0, 14), (0, 4)]}, {"t": [20, 9]}  # another one, on both partitions
    assert trigger_at(401.0) == trigger_at(460.9) == []
    assert trigger_at(461.0) == [held_back("t-0", 14, 60, 20), held_back("t-1", 4, 60, 9)]


def test_high_watermarks_are_asked_for_only_under_read_committed():
    for isolation, requests in (("read_uncommitted", 0), ("read_committed", 2)):
        client = FakeTransactionalClient({"t": [(0, 5)]}, high={"t": [9]})
        stream, _ = reader(client, startingOffsets="earliest", **{"kafka.isolation.level": isolation})
        end = stream.latestOffset(stream.initialOffset(), ReadAllAvailable())
        stream.latestOffset(end, ReadAllAvailable())
        assert client.high_watermark_requests == requests, isolation
