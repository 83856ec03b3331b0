"""Records at the edges round-trip byte-exactly: null and empty keys and values, a 1 MiB value,
many headers, duplicate header keys, header values that are not UTF-8 or null."""

from __future__ import annotations

import os

from tests.support.kafka_helpers import Record
from tests.support.query_helpers import base_options, batch

MIB = 1024 * 1024


def edge_records() -> list[Record]:
    random_mib = os.urandom(MIB)
    return [
        Record(0, None, None),
        Record(0, b"", b""),
        Record(0, b"k", None),
        Record(0, None, b"v"),
        Record(0, b"\x00\xff\xfe", random_mib),  # a 1 MiB value that does not compress
        Record(0, b"many", b"h", headers=tuple((f"h{i}", bytes([i % 256]) * (i % 7)) for i in range(200))),
        Record(0, b"dup", b"d", headers=(("trace", b"1"), ("trace", b"2"), ("trace", None), ("trace", b""))),
        Record(0, b"bin", b"b",
               headers=(("raw", b"\xff\xfe\x00\x80"), ("", b"empty key"), ("ключ", "значение".encode()))),
    ]


def test_edge_records_round_trip_byte_exactly(spark, kafka, read_path):
    topic = kafka.create_topic(kafka.unique_name("edges"), partitions=1, config={"max.message.bytes": str(2 * MIB)})
    produced = kafka.produce(topic, edge_records(), **{"message.max.bytes": 2 * MIB, "compression.type": "none"})

    df = batch(spark, base_options(kafka, subscribe=topic, includeHeaders="true", readPath=read_path))
    rows = df.orderBy("offset").collect()

    assert [r.offset for r in rows] == [r.offset for r in produced] == list(range(len(produced)))
    for row, record in zip(rows, produced, strict=True):
        assert (row.key, row.value) == (record.key, record.value), f"offset {record.offset}"
        headers = tuple((h.key, h.value) for h in row.headers) if row.headers is not None else ()
        assert headers == record.headers, f"offset {record.offset}"
    assert len(rows[4].value) == MIB and len(rows[5].headers) == 200
