"""The Python path's column builders: the same Arrow arrays as pa.array, faster, whatever the values."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from confluent_kafka import Message

from kafkasource.reading.arrow import binary_array, repeated_int32, repeated_string, timestamp_types, to_record_batch
from kafkasource.reading.python_rows import collector_paused


@pytest.mark.parametrize("values", [
    [b"a", b"", b"\x00\xffccc"],  # no null: joined with offsets of our own
    [None, b"x", b""],  # a null: pa.array builds it
    [None, None],
    [b""],
    [],
], ids=["bytes", "null-first", "all-null", "one-empty", "none"])
def test_binary_array_equals_what_pa_array_builds(values):
    built = binary_array(values)
    built.validate(full=True)
    assert built.type == pa.binary()
    assert built.to_pylist() == values
    assert built.equals(pa.array(values, pa.binary()))


def test_timestamp_types_map_librdkafka_ids_to_kafkas():
    assert timestamp_types([1, 1, 1]).to_pylist() == [0, 0, 0]  # CreateTime
    assert timestamp_types([2, 2]).to_pylist() == [1, 1]  # LogAppendTime
    assert timestamp_types([1, 2, 0]).to_pylist() == [0, 1, -1]  # mixed, and none
    assert timestamp_types([]).to_pylist() == []
    assert timestamp_types([0]).type == pa.int32()


@pytest.mark.parametrize("count", [0, 1, 3])
def test_repeated_columns_equal_what_pa_repeat_builds(count):
    for topic in ("orders", "ümlaut-主題"):
        built = repeated_string(topic, count)
        built.validate(full=True)
        assert built.equals(pa.repeat(pa.scalar(topic, pa.string()), count))
    assert repeated_int32(-7, count).equals(pa.repeat(pa.scalar(-7, pa.int32()), count))


def test_a_record_batch_holds_every_field_of_the_messages():
    messages = [Message(topic="t", partition=4, offset=2**40, key=b"k", value=b"v1", timestamp=(1, 1_700_000_000_123)),
                Message(topic="t", partition=4, offset=2**40 + 3, key=b"", value=None, timestamp=(2, 5)),
                Message(topic="t", partition=4, offset=2**40 + 4, key=b"k3", value=b"", timestamp=(0, -1))]
    batch = to_record_batch(messages, "t", 4, include_headers=False)
    batch.validate(full=True)
    assert batch.to_pydict() == {
        "key": [b"k", b"", b"k3"], "value": [b"v1", None, b""], "topic": ["t"] * 3, "partition": [4] * 3,
        "offset": [2**40, 2**40 + 3, 2**40 + 4],
        "timestamp": pa.array([1_700_000_000_123_000, 5_000, -1_000], pa.timestamp("us", tz="UTC")).to_pylist(),
        "timestampType": [0, 1, -1]}


def test_building_batches_never_imports_pandas():
    """Converting a Python object makes pyarrow import pandas, which Spark's workers otherwise never load."""
    script = textwrap.dedent("""
        import sys
        from types import SimpleNamespace
        from confluent_kafka import Message
        from kafkasource.reading.arrow import to_record_batch
        from kafkasource.reading.native_arrow import taken_batch

        messages = [Message(topic="t", partition=0, offset=o, value=b"v", timestamp=(1, 1000 + o)) for o in range(3)]
        python_path = to_record_batch(messages, "t", 0, include_headers=False)
        taken = SimpleNamespace(  # what the native consumer's take() hands over: 2 null keys, values "v" and ""
            rows=2, keys=SimpleNamespace(validity=b"\\x00", offsets=bytes(12), data=b""),
            values=SimpleNamespace(validity=b"\\x03", offsets=(0).to_bytes(4, "little") + (1).to_bytes(4, "little") * 2,
                                   data=b"v"),
            offsets=bytes(16), timestamps_us=bytes(16), timestamp_types=bytes(8), headers=None)
        native_path = taken_batch(taken, "t", 0, include_headers=False)
        assert python_path.num_rows == 3 and native_path.num_rows == 2, (python_path, native_path)
        print("pandas" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_collector_paused_restores_the_collectors_state_even_on_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            assert not gc.isenabled()
            raise RuntimeError("boom")
    assert gc.isenabled()

    gc.disable()  # a caller that had switched it off keeps it off
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
