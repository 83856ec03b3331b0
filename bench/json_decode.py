"""The source's plain JSON decoders alone, in process (no Spark, no Kafka): records/s of the native decoder
(kafkasource.formats.plain_json.native_decode over the extension's JsonDecoder) and of the Python decoder over the
same Arrow batches of 10,000 JSON orders (bench/json_e2e.py's), how many records the native one handed over to the
Python one, and a check that both give the same rows. Figures and ratios only: bench/JSON.md keeps them.

    python3 -m bench.json_decode [--records 100000]
"""

from __future__ import annotations

import argparse
import time

import pyarrow as pa

from bench.json_e2e import DDL, order

BATCH_ROWS = 10_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()

    from kafkasource.formats.plain_json.decode import PlainJsonDecoder
    from kafkasource.formats.plain_json.native_decode import NativePlainJsonDecoder
    from kafkasource.formats.plain_json.options import read_json_options
    from kafkasource.formats.plain_json.schema import read_schema

    payloads = pa.array([order(i) for i in range(args.records)], pa.binary())
    batches = [payloads.slice(start, BATCH_ROWS) for start in range(0, len(payloads), BATCH_ROWS)]
    schema, options = read_schema(DDL), read_json_options({})
    native, python = NativePlainJsonDecoder(schema, options), PlainJsonDecoder(schema, options)

    started = time.perf_counter()
    handed = sum(native.decode_counting(batch)[2] for batch in batches)
    native_rate = args.records / (time.perf_counter() - started)
    sample = batches[:2]  # the Python decoder is slow: two batches tell its rate
    started = time.perf_counter()
    python_values = [python.decode(batch)[0] for batch in sample]
    python_rate = sum(map(len, sample)) / (time.perf_counter() - started)
    if [native.decode(batch)[0] for batch in sample] != python_values:
        raise RuntimeError("the native and the Python decoder disagree")
    size = payloads.buffers()[2].size / len(payloads)
    print(f"{args.records:,} orders of {size:.0f} B in batches of {BATCH_ROWS:,}, same rows from both decoders")
    print(f"native: {native_rate:,.0f} records/s ({handed:,} handed over to Python); Python: {python_rate:,.0f} "
          f"records/s; native / Python: {native_rate / python_rate:.1f}x")


if __name__ == "__main__":
    main()
