"""Avro decode rate in this process: the native decoder against the Python one (fastavro), on the same payloads.

`python3 -m bench.avro [--records N] [--rounds R]`

The data set: an order record of 9 fields, one a nested address of 3 (~150 B encoded), in the schema-registry wire format, written by two
versions of its schema mixed half and half: v1 lacks two fields the reader has (their defaults fill them) and
writes `quantity` as an int the reader reads as long; v2 is the reader schema. Each decoder decodes all the
payloads as one Arrow binary array, `rounds` times after one untimed round; the median round counts.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import time
from typing import Iterator, NamedTuple

import pyarrow as pa

from kafkasource import avro_decode

STATUS = {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"]}
ADDRESS = {"type": "record", "name": "Address",
           "fields": [{"name": "street", "type": "string"}, {"name": "city", "type": "string"},
                      {"name": "zip", "type": "string"}]}
V1_FIELDS = [
    {"name": "order_id", "type": "long"},
    {"name": "customer", "type": "string"},
    {"name": "sku", "type": "string"},
    {"name": "quantity", "type": "int"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "status", "type": STATUS},
    {"name": "address", "type": ADDRESS},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
]
V2_FIELDS = [*V1_FIELDS[:3], {"name": "quantity", "type": "long"}, *V1_FIELDS[4:],
             {"name": "coupon", "type": ["null", "string"], "default": None},
             {"name": "priority", "type": "boolean", "default": False}]
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": V1_FIELDS}
V2 = {"type": "record", "name": "Order", "namespace": "shop", "fields": V2_FIELDS}
WRITERS = {1: V1, 2: V2}


def rows(count: int, seed: int = 26) -> Iterator[tuple[int, dict]]:
    """`count` generated orders as (schema version, record), versions 1 and 2 alternating."""
    import datetime
    from decimal import Decimal

    rng = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    for n in range(count):
        schema_version = 1 + n % 2
        first, last = rng.choice(words), rng.choice(words)
        row = {"order_id": rng.randrange(2**40), "customer": f"{first}.{last}-{rng.randrange(10**4)}@example.org",
               "sku": f"SKU-{rng.randrange(10**8):08d}-{rng.choice(words)}-{rng.choice(words)}", "quantity": rng.randrange(1, 100),
               "price": Decimal(rng.randrange(10**8)).scaleb(-2),
               "created": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
               + datetime.timedelta(milliseconds=rng.randrange(10**10)),
               "status": rng.choice(STATUS["symbols"]),
               "address": {"street": f"{rng.randrange(1, 999)} {rng.choice(words).title()} Street",
                           "city": f"{rng.choice(words).title()} City", "zip": f"{rng.randrange(10**5):05d}-{rng.randrange(10**4):04d}"},
               "tags": rng.sample(words, rng.randrange(2, 5))}
        if schema_version == 2:
            row.update(coupon=rng.choice([None, f"SAVE{rng.randrange(100)}"]), priority=rng.random() < 0.1)
        yield schema_version, row


def payloads(count: int, seed: int = 26) -> pa.BinaryArray:
    """The rows in the wire format, with the schema version as the writer schema id."""
    import fastavro

    parsed = {i: fastavro.parse_schema(schema, _write_hint=False) for i, schema in WRITERS.items()}
    out = []
    for schema_id, row in rows(count, seed):
        body = io.BytesIO()
        fastavro.schemaless_writer(body, parsed[schema_id], row)
        out.append(b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue())
    return pa.array(out, pa.binary())


class Rate(NamedTuple):
    wall: float  # records per second of elapsed time
    cpu: float  # records per CPU second of this process: steadier on a shared machine (decoding is one thread)


def rate(native: bool, data: pa.BinaryArray, rounds: int) -> tuple[Rate, pa.Array]:
    """Median rates over the timed rounds, and the values decoded."""
    writers = {i: json.dumps(schema) for i, schema in WRITERS.items()}
    decoder = avro_decode.AvroDecoder(json.dumps(V2), native=native)
    values, reasons = decoder.decode(data, writers)  # untimed: plans made, caches warm
    assert reasons.null_count == len(data), "every record decodes"
    wall, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        decoder.decode(data, writers)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return Rate(len(data) / statistics.median(wall), len(data) / statistics.median(cpu)), values


def show(name: str, r: Rate, size: float) -> str:
    return (f"{name}: {r.cpu:,.0f} records per CPU second ({r.cpu * size / 1e6:.1f} MB/s of Avro); "
            f"{r.wall:,.0f} records/s elapsed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    data = payloads(args.records)
    size = (len(data.buffers()[2]) - 5 * len(data)) / len(data)
    print(f"{len(data):,} records, {size:.0f} B Avro each on average (plus the 5-byte prefix), "
          f"schema versions 1 and 2 alternating; median of {args.rounds} rounds after one untimed")
    native_rate, native_values = rate(True, data, args.rounds)
    python_rate, python_values = rate(False, data, max(1, args.rounds // 2))
    assert native_values.equals(python_values), "both decoders give the same values"
    print(show("native", native_rate, size))
    print(show("python (fastavro)", python_rate, size))
    print(f"native / python: {native_rate.cpu / python_rate.cpu:.1f}x per CPU second, "
          f"{native_rate.wall / python_rate.wall:.1f}x elapsed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
