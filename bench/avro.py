"""Avro decode rate in this process: the native decoder against the Python one (fastavro), on the same payloads.

`python3 -m bench.avro [--records N] [--rounds R] [--spark]`

The data set: an order record of 9 fields, one a nested address of 3 (~150 B encoded), in the schema-registry wire
format, written by two versions of its schema mixed half and half: v1 lacks two fields the reader has (their
defaults fill them) and writes `quantity` as an int the reader reads as long; v2 is the reader schema. Each
decoder decodes all the payloads as one Arrow binary array, `rounds` times after one untimed round; the median round
counts.

--spark adds Spark's own from_avro (spark-avro from Maven Central) over `substring(value, 6)` with the writer
schema, the usual workaround for the wire format, on the v2 payloads alone (one writer schema is all it can
take), against the native decoder on the same payloads: a cached DataFrame of the payloads, `local[1]` (the
decoders here use one core too), into the noop sink; CPU seconds of Spark's JVM, beside the same query
without from_avro (the scan and substring alone).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from bench.reference import spark_avro_jar
from kafkasource.formats.avro import decode as avro_decode
from kafkasource.formats.registry import RegistrySchema

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
               "sku": f"SKU-{rng.randrange(10**8):08d}-{rng.choice(words)}-{rng.choice(words)}",
               "quantity": rng.randrange(1, 100),
               "price": Decimal(rng.randrange(10**8)).scaleb(-2),
               "created": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
               + datetime.timedelta(milliseconds=rng.randrange(10**10)),
               "status": rng.choice(STATUS["symbols"]),
               "address": {"street": f"{rng.randrange(1, 999)} {rng.choice(words).title()} Street",
                           "city": f"{rng.choice(words).title()} City",
                           "zip": f"{rng.randrange(10**5):05d}-{rng.randrange(10**4):04d}"},
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
    writers = {i: RegistrySchema(i, "AVRO", json.dumps(schema)) for i, schema in WRITERS.items()}
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


def jvm_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def spark_rates(data: pa.BinaryArray, rounds: int) -> tuple[Rate, Rate]:
    """Spark's from_avro over the payloads, and the same query without it."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import expr, length

    spark = (SparkSession.builder.master("local[1]").appName("kafkasource-avro-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "2g").config("spark.ui.showConsoleProgress", "false")
             .config("spark.jars", str(spark_avro_jar())).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        frame = spark.createDataFrame(pa.table({"value": data})).cache()
        frame.count()
        body = expr("substring(value, 6)")
        queries = {"from_avro": frame.select(from_avro(body, json.dumps(V2)).alias("order")),
                   "scan": frame.select(length(body).alias("n"))}
        rates = {}
        for name, query in queries.items():
            wall, cpu = [], []
            for round_ in range(rounds + 1):
                start, start_cpu = time.perf_counter(), jvm_cpu_seconds(pid)
                query.write.format("noop").mode("overwrite").save()
                if round_:  # the first is untimed
                    wall.append(time.perf_counter() - start)
                    cpu.append(jvm_cpu_seconds(pid) - start_cpu)
            rates[name] = Rate(len(data) / statistics.median(wall), len(data) / statistics.median(cpu))
        return rates["from_avro"], rates["scan"]
    finally:
        spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spark", action="store_true", help="add Spark's from_avro on the v2 payloads")
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
    if args.spark:
        v2 = data.filter(pa.compute.equal(pa.compute.binary_slice(data, 4, 5), pa.scalar(b"\x02", pa.binary())))
        print(f"the {len(v2):,} v2 payloads alone:")
        native_v2, _ = rate(True, v2, args.rounds)
        spark_rate, scan_rate = spark_rates(v2, args.rounds)
        print(show("native", native_v2, size))
        print(show("Spark from_avro(substring(value, 6), v2 schema)", spark_rate, size))
        print(show("Spark, the same query without from_avro", scan_rate, size))
        print(f"native / Spark's from_avro: {native_v2.cpu / spark_rate.cpu:.1f}x per CPU second, "
              f"{native_v2.wall / spark_rate.wall:.1f}x elapsed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
