"""What one machine's kafkasource reads and decodes, as JSON, so two architectures can be compared:
scripts/check_aarch64_wheel.py runs it on this machine and under arm64 emulation.

    python -m scripts.arch_probe <bootstrap servers> <topic> <partition>:<end> ...

Prints the machine, whether the native extension loaded and its librdkafka, the rows of each partition's
[0, end) read through the native path and through the Python path, and the values and reasons of Avro
records decoded by the native decoder and by the Python one (records generated from a fixed seed, so every
machine decodes the same bytes). Bytes are given as hex, timestamps as microseconds.
"""

from __future__ import annotations

import datetime
import io
import json
import platform
import random
import sys
from decimal import Decimal

AVRO_SCHEMA = {"type": "record", "name": "Order", "namespace": "probe", "fields": [
    {"name": "id", "type": "long"},
    {"name": "customer", "type": ["null", "string"]},
    {"name": "total", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
    {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "counts", "type": {"type": "map", "values": "int"}},
    {"name": "ratio", "type": ["null", "int", "double"]},
]}


def plain(value: object) -> object:
    """A value as JSON can hold it, alike on every machine."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1_000_000)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def read(bootstrap: str, topic: str, ends: dict[int, int], read_path: str) -> list:
    import pyarrow as pa

    from kafkasource.planning.ranges import OffsetRange
    from kafkasource.reading.consumers import ConsumerPool, FetchConfig
    from kafkasource.reading.task_reader import read_ranges
    from kafkasource.records.schema import arrow_schema

    config = FetchConfig({"bootstrap.servers": bootstrap}, include_headers=True, fail_on_data_loss=True,
                         poll_timeout_ms=30_000, read_path=read_path)
    pool, rows = ConsumerPool(), []
    for partition, end in sorted(ends.items()):
        batches = list(read_ranges((OffsetRange(topic, partition, 0, end),), config, pool))
        rows += pa.Table.from_batches(batches, schema=arrow_schema(True)).to_pylist()
    pool.close_all()
    return plain(rows)


def avro_frames(count: int) -> list[bytes]:
    import fastavro

    rng = random.Random(7)
    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    frames = []
    for i in range(count):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, {
            "id": rng.randrange(-2**62, 2**62), "customer": rng.choice([None, "", f"c{i}", "Ærøskøbing"]),
            "total": Decimal(rng.randrange(-10**11, 10**11)) / 100, "status": rng.choice(["NEW", "PAID", "SHIPPED"]),
            "at": rng.randrange(0, 4 * 10**15), "tags": [f"t{rng.randrange(9)}"] * rng.randrange(3),
            "counts": {f"k{j}": rng.randrange(-2**31, 2**31) for j in range(rng.randrange(3))},
            "ratio": rng.choice([None, rng.randrange(-99, 99), rng.uniform(-1, 1)])})
        frames.append(b"\x00" + (1).to_bytes(4, "big") + out.getvalue())
    return frames + [b"\x00\x00\x00\x00\x01\x02", b"no prefix"]  # a record cut short, one without the prefix


def decode(native: bool) -> dict:
    import pyarrow as pa

    from kafkasource.formats.avro.decode import AvroDecoder
    from kafkasource.formats.registry import RegistrySchema

    text = json.dumps(AVRO_SCHEMA)
    values, reasons = AvroDecoder(text, native=native).decode(pa.array(avro_frames(300), pa.binary()),
                                                              {1: RegistrySchema(1, "AVRO", text)})
    return {"values": plain(values.to_pylist()), "reasons": reasons.to_pylist()}


def probe(bootstrap: str, topic: str, ends: dict[int, int]) -> dict:
    import kafkasource
    from kafkasource.runtime import native_extension
    return {"machine": platform.machine(), "package": kafkasource.__file__, "native": native_extension.available(),
            "load_error": native_extension.LOAD_ERROR,
            "librdkafka": native_extension.librdkafka_version(),
            "rows": {path: read(bootstrap, topic, ends, path) for path in ("native", "python")},
            "avro": {"native": decode(True), "python": decode(False)}}


def main(argv: list[str]) -> int:
    bootstrap, topic, *ranges = argv
    ends = {int(p): int(e) for p, e in (spec.split(":") for spec in ranges)}
    json.dump(probe(bootstrap, topic, ends), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
