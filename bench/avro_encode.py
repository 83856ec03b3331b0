"""The sink's Avro encoding, native against Python: µs per row of kafkasource.writing.encoded.encode_batch over
100,000 rows in batches of 10,000 (Spark's spark.sql.execution.arrow.maxRecordsPerBatch), for a flat record of 5
fields (long, string, double, boolean, timestamp) and a rich one (nested and nullable records, an array of
records, a map, decimals as bytes and fixed, timestamps, a date, an enum, bytes, fixed). No Spark, no broker:
the Arrow step alone, as each task runs it before its producer. Checks both give the same payloads first.

    python3 -m bench.avro_encode [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from decimal import Decimal

import pyarrow as pa

from kafkasource.formats.avro import native_encode as avro_encoding
from kafkasource.formats.encoding import ColumnEncoding, Encoding
from kafkasource.formats.registry import RegistrySchema
from kafkasource.writing.encoded import encode_batch

BATCH_ROWS = 10_000
UTC = datetime.UTC
AT = datetime.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)

FLAT = {"type": "record", "name": "Flat", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"}, {"name": "score", "type": "double"},
    {"name": "ok", "type": "boolean"}, {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
]}  # fmt: skip
FLAT_ARROW = pa.struct([("id", pa.int64()), ("name", pa.string()), ("score", pa.float64()), ("ok", pa.bool_()),
                        ("at", pa.timestamp("us", tz="UTC"))])  # fmt: skip

RICH = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "note", "type": ["string", "null"]},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "big", "type": ["null", {"type": "fixed", "name": "Big", "size": 9, "logicalType": "decimal",
                                      "precision": 20, "scale": 4}]},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "blob", "type": "bytes"},
    {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
    {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"]}]}]},
    {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "Item", "fields": [
        {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
    {"name": "counts", "type": {"type": "map", "values": "long"}},
]}  # fmt: skip
RICH_ARROW = pa.struct([
    ("id", pa.int64()), ("note", pa.string()), ("amount", pa.decimal128(10, 2)), ("big", pa.decimal128(20, 4)),
    ("at", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("status", pa.string()), ("blob", pa.binary()),
    ("digest", pa.binary()), ("address", pa.struct([("city", pa.string()), ("zip", pa.string())])),
    ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int32())]))),
    ("counts", pa.map_(pa.string(), pa.int64())),
])  # fmt: skip


def flat_row(i: int) -> dict:
    return {"id": i, "name": f"name-{i}", "score": i / 7, "ok": i % 2 == 0, "at": AT}


def rich_row(i: int) -> dict:
    return {
        "id": i, "note": None if i % 2 else f"note {i}", "amount": Decimal(i % 100000) / 100,
        "big": None if i % 3 == 0 else Decimal(-i) / 10000, "at": AT, "day": datetime.date(2024, 1, 1 + i % 28),
        "status": ("NEW", "PAID", "SHIPPED")[i % 3], "blob": bytes(i % 16), "digest": i.to_bytes(4, "big"),
        "address": None if i % 5 == 0 else {"city": "Oslo", "zip": None if i % 2 else "0150"},
        "items": [{"sku": f"s{j}", "qty": j} for j in range(i % 3)], "counts": [(f"k{j}", j) for j in range(i % 4)],
    }  # fmt: skip


def batches(rows: int, make, arrow) -> list[pa.RecordBatch]:
    return [
        pa.RecordBatch.from_arrays([pa.array([make(i) for i in range(s, min(s + BATCH_ROWS, rows))], arrow)], ["value"])
        for s in range(0, rows, BATCH_ROWS)
    ]


def per_row(data: list[pa.RecordBatch], encoding: Encoding, native: bool, repeat: int) -> float:
    """Median over `repeat` runs of µs per row."""
    rows = sum(b.num_rows for b in data)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for batch in data:
            encode_batch(batch, encoding, "t", native=native)
        times.append((time.perf_counter() - start) / rows * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not avro_encoding.available():
        raise SystemExit("kafkasource._native is not built here (or lacks encode_avro): nothing to compare")
    print(f"{args.rows:,} rows in batches of {BATCH_ROWS:,}, median of {args.repeat} runs")
    for name, schema, make, arrow in (("flat (5 fields)", FLAT, flat_row, FLAT_ARROW),
                                      ("rich", RICH, rich_row, RICH_ARROW)):  # fmt: skip
        encoding = Encoding((ColumnEncoding("value", "avro", RegistrySchema(1, "AVRO", json.dumps(schema))),), None, {})
        data = batches(args.rows, make, arrow)
        first = data[0]
        native_payloads = encode_batch(first, encoding, "t", native=True).column("value")
        python_payloads = encode_batch(first, encoding, "t", native=False).column("value")
        if not native_payloads.equals(python_payloads):
            raise SystemExit(f"{name}: the native and Python payloads differ")
        native = per_row(data, encoding, True, args.repeat)
        python = per_row(data, encoding, False, args.repeat)
        print(f"{name:16} native {native:7.2f} µs/row   python {python:7.2f} µs/row   ({python / native:.0f}x)")


if __name__ == "__main__":
    main()
