"""The sink's plain JSON encoding: records/s of the native encoder (kafkasource._native's encode_json), the Python
encoder (kafkasource.formats.plain_json.json_text) and Spark's own `to_json`, over the same cached DataFrame of
400,000 orders of 12 fields (long, strings, double, int, timestamp, boolean, array<string>), in one run.

Spark's is timed as a noop write of `to_json(struct(...))` (the JVM reads the cached rows and writes each row's
JSON, nothing more); the encoders' as one call per Arrow batch of 10,000 rows (Spark's
spark.sql.execution.arrow.maxRecordsPerBatch), over the struct column taken from the DataFrame as Arrow beforehand,
the zone table of each batch included. Medians of --repeat rounds after an untimed one (the Python encoder: one
round, untimed round skipped, as it takes seconds). Figures and ratios only.

    python3 -m bench.json_encode [--rows 400000] [--repeat 3] [--time-zone America/Los_Angeles]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

BATCH_ROWS = 10_000
FIELDS = {
    "order_id": "id",
    "customer": "concat('customer-', cast(id % 9973 as string))",
    "sku": "concat('SKU-', lpad(cast(id % 500 as string), 5, '0'))",
    "status": "element_at(array('NEW', 'PAID', 'SHIPPED', 'CANCELLED'), cast(id % 4 as int) + 1)",
    "currency": "if(id % 3 = 0, 'EUR', 'USD')",
    "amount": "round((id % 100000) * 1.37 / 7, 2)",
    "quantity": "cast(id % 12 as int) + 1",
    "created_at": "timestamp_micros(1700000000000000 + id * 7777777)",
    "paid": "id % 2 = 0",
    "tags": "slice(array('gift', 'express', 'fragile', 'bulk'), 1, cast(id % 4 as int))",
    "region": "element_at(array('eu-west', 'us-east', 'ap-south'), cast(id % 3 as int) + 1)",
    "note": "if(id % 5 = 0, null, concat('leave at door \"', cast(id % 10 as string), '\"'))",
}


def timed(work, repeat: int, warm: bool = True) -> float:
    if warm:
        work()
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        rounds.append(time.perf_counter() - start)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--time-zone", default="America/Los_Angeles")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from kafkasource.formats.plain_json import native_encode

    spark = (SparkSession.builder.master("local[2]").appName("bench-json-encode")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.sql.session.timeZone", args.time_zone).getOrCreate())  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")
    orders = spark.range(args.rows).selectExpr(*(f"{expr} AS {name}" for name, expr in FIELDS.items())).cache()
    orders.count()
    value = F.struct(*FIELDS)

    def spark_to_json() -> None:
        orders.select(F.to_json(value).alias("value")).write.format("noop").mode("overwrite").save()

    column = orders.select(value.alias("value")).toArrow().column("value").combine_chunks()
    batches = [column.slice(start, BATCH_ROWS) for start in range(0, len(column), BATCH_ROWS)]

    def native() -> None:
        for batch in batches:
            native_encode.encode_native(batch, args.time_zone)

    def python() -> None:
        for batch in batches:
            native_encode.encode_python(batch, args.time_zone)

    spark_seconds = timed(spark_to_json, args.repeat)
    native_seconds = timed(native, args.repeat)
    python_seconds = timed(python, 1, warm=False)
    spark.stop()
    rate = {name: args.rows / seconds for name, seconds in
            (("native", native_seconds), ("python", python_seconds), ("spark", spark_seconds))}  # fmt: skip
    print(f"{args.rows:,} rows of {len(FIELDS)} fields, session time zone {args.time_zone}, batches of {BATCH_ROWS:,}")
    for name, label in (("native", "native encode_json"), ("python", "Python encoder"), ("spark", "Spark to_json")):
        print(f"{label:>20}: {rate[name]:>12,.0f} records/s")
    native_ratio, python_ratio = rate["native"] / rate["spark"], rate["python"] / rate["spark"]
    print(f"native / Spark: {native_ratio:.2f}x, Python / Spark: {python_ratio:.2f}x, "
          f"native / Python: {rate['native'] / rate['python']:.1f}x")


if __name__ == "__main__":
    main()
