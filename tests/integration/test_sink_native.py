"""The native producer (writePath=native) against the real broker, without Spark: Arrow batches written through the
task writer land exactly the records their columns say (sliced arrays, nulls, empty values, headers with null
values), and a record refused at once or failed on delivery is named with its topic, partition and row in the
task."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafkasource.errors import DeliveryError
from kafkasource.options.sink import parse_sink_options
from kafkasource.runtime import native_extension
from kafkasource.writing.rows import Columns
from kafkasource.writing.task import SinkCommitMessage, TaskInfo, write_task
from tests.support.sink_helpers import expected_records, read_topic

pytestmark = pytest.mark.skipif(not native_extension.available(),
                                reason=f"kafkasource's native extension {native_extension.why_unavailable()}")

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
ALL_COLUMNS = Columns(None, key=True, headers=True, partition=True)


def options(kafka, **more: str):
    return parse_sink_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "writePath": "native", **more},
                              streaming=False)


def arrow_batch(rows: list[tuple]):
    """rows of (topic, key, value, headers, partition), as sink_helpers.sample_rows, in one Arrow batch."""
    topics, keys, values, headers, partitions = zip(*rows, strict=True)
    return pa.record_batch({"topic": pa.array(topics), "key": pa.array(keys, pa.string()),
                            "value": pa.array(values, pa.binary()), "headers": pa.array(headers, HEADERS),
                            "partition": pa.array(partitions, pa.int32())})


def test_sliced_arrow_batches_with_nulls_land_exactly(kafka):
    topic = kafka.create_topic(kafka.unique_name("native-slices"), 3)
    rows = [(topic, None if i % 4 == 0 else f"key-{i % 5}",
             None if i % 6 == 5 else (b"" if i % 6 == 4 else f"value-{i}".encode()),
             None if i % 3 == 0 else ([] if i % 3 == 1 else [{"key": "h", "value": f"{i}".encode()},
                                                             {"key": "nothing", "value": None}]),
             i % 3 if i % 4 == 0 or i % 2 else None) for i in range(40)]
    batch = arrow_batch(rows)
    # two slices (offsets 5 and 23 into every column's buffers); the rows before 5 are never written
    slices = [batch.slice(5, 18), batch.slice(23)]

    message = write_task(options(kafka), ALL_COLUMNS, slices, TaskInfo(0, 0, None), streaming=False)

    assert message == SinkCommitMessage(0, 35)
    assert read_topic(kafka, topic, 3) == expected_records(rows[5:], topic)


def test_a_record_too_large_names_its_place_and_row_and_under_none_is_skipped(kafka):
    topics = {guarantee: kafka.create_topic(kafka.unique_name(f"native-large-{guarantee}"), 2)
              for guarantee in ("at-least-once", "none")}
    written = {}
    for guarantee, topic in topics.items():
        small = [(topic, f"k{i}", f"v{i}".encode(), None, 1) for i in range(6)]
        batches = [arrow_batch(small[:4]), arrow_batch([small[4], (topic, "big", b"x" * 20_000, None, 1), small[5]])]
        sink = options(kafka, deliveryGuarantee=guarantee, **{"kafka.message.max.bytes": "10000"})
        try:
            written[guarantee] = write_task(sink, ALL_COLUMNS, batches, TaskInfo(0, 0, None), streaming=False)
        except DeliveryError as exc:
            written[guarantee] = exc

    refused = str(written["at-least-once"])
    assert refused.startswith(
        f"a record of 20,003 bytes for topic {topics['at-least-once']} partition 1 is too large: Unable to produce "
        "message: Broker: Message size too large. The producer takes records up to kafka.message.max.bytes (10000 "
        "bytes now)")
    assert refused.endswith("(the record: record 5 of the task)")  # the second batch's second row
    # under none the large record is counted as failed and skipped, and the write goes on
    assert written["none"] == SinkCommitMessage(0, 6)
    assert [r[3] for r in read_topic(kafka, topics["none"], 2)] == [b"v0", b"v1", b"v2", b"v3", b"v4", b"v5"]


def test_a_partition_the_topic_lacks_is_named_with_the_records_row(kafka):
    topic = kafka.create_topic(kafka.unique_name("native-partition"), 3)
    rows = [(topic, None, b"fits", None, 2), (topic, None, b"nowhere", None, 7)]

    with pytest.raises(DeliveryError) as failed:
        write_task(options(kafka), ALL_COLUMNS, [arrow_batch(rows)], TaskInfo(0, 0, None), streaming=False)

    # refused at once where the producer knows the topic's partitions, else by its delivery report: either names
    # the partition and the row
    assert f"topic {topic} partition 7 does not exist: " in str(failed.value)
    assert "Local: Unknown partition. Write a partition number the topic has in the partition column" in \
        str(failed.value)
    assert str(failed.value).endswith("(the record: record 1 of the task)")
    assert [r[3] for r in read_topic(kafka, topic, 3)] == [b"fits"]
