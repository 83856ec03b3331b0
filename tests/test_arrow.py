"""The Python path's column builders: the same Arrow arrays as pa.array, faster, whatever the values."""

from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from kafkasource.arrow import binary_array, timestamp_types
from kafkasource.fetch import collector_paused


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
