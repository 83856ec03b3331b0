"""The registry formats' Python decoders on one batch, and the wire-format prefix as they read it.

`python3 -m bench.formats [--records N] [--rounds R] [--root DIR]`

avro: the Python Avro decoder (fastavro) on bench/avro.py's order records, two writer versions alternating; json:
the JSON Schema decoder (jsonschema's validation, then the reader's type) on an order of 7 properties, one a
$ref; prefix: the schema id (and for Protobuf the message indexes) of each payload, by hand as the decoders read
it until confluent-kafka's SchemaId did, and with SchemaId. CPU seconds of this process for each of `rounds`
decodes after an untimed one (decoding is one thread; CPU time is steadier than elapsed on a shared machine).

--root times the kafkasource of another checkout (`git archive <commit> kafkasource | tar -x -C DIR`): the
same payloads decoded by the code before a change.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import random
import struct
import sys
import time


def json_order(count: int):
    import pyarrow as pa

    schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "price": {"type": "number"}, "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}}, "address": {"$ref": "#/definitions/Address"},
        "note": {"type": ["null", "string"]}}, "required": ["id", "name"],
        "definitions": {"Address": {"type": "object", "properties": {"street": {"type": "string"},
                                                                    "city": {"type": "string"}}}}}
    rng = random.Random(1)
    rows = [json.dumps({"id": n, "name": f"n{rng.randrange(10**6)}", "price": rng.random() * 100, "ok": n % 3 == 0,
                        "tags": ["a", "b"][: n % 3], "address": {"street": f"{n} Main", "city": "X"},
                        "note": None if n % 2 else "hi"}).encode() for n in range(count)]
    return schema, pa.array([b"\x00\x00\x00\x00\x03" + row for row in rows], pa.binary())


def decoders(count: int) -> dict:
    """name -> (decode, payloads, writer schemas)."""
    from bench import avro as avro_bench
    from kafkasource.formats.avro import decode as avro
    from kafkasource.formats.json_schema import decode as json_schema
    from kafkasource.formats.registry import RegistrySchema

    schema, payloads = json_order(count)
    return {
        "avro": (avro.AvroDecoder(json.dumps(avro_bench.V2), native=False).decode, avro_bench.payloads(count),
                 {i: RegistrySchema(i, "AVRO", json.dumps(s)) for i, s in avro_bench.WRITERS.items()}),
        "json": (json_schema.JsonSchemaDecoder(json.dumps(schema)).decode, payloads,
                 {3: RegistrySchema(3, "JSON", json.dumps(schema))})}


# ---- the prefix by hand, as the decoders read it before SchemaId ----

def id_by_hand(payload: bytes) -> int | None:
    if len(payload) < 5 or payload[:1] != b"\x00":
        return None
    return int.from_bytes(payload[1:5], "big")


def zigzag_by_hand(data: bytes, at: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("cut short")
        byte = data[at]
        result |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), at
        shift += 7


def indexes_by_hand(payload: bytes) -> tuple[list[int], int]:
    count, at = zigzag_by_hand(payload, 5)
    if count == 0:
        return [0], at
    indexes = []
    for _ in range(count):
        index, at = zigzag_by_hand(payload, at)
        indexes.append(index)
    return indexes, at


def prefix_readers(count: int) -> dict:
    """name -> a loop over `count` payloads reading what that decoder reads of each before its record."""
    from confluent_kafka.schema_registry.serde import SchemaId
    from confluent_kafka.serialization import SerializationError

    errors = (struct.error, ValueError, EOFError, SerializationError)
    plain = [b"\x00" + (i % 7 + 1).to_bytes(4, "big") + b"x" * 140 for i in range(count)]
    indexed = [b"\x00" + (i % 7 + 1).to_bytes(4, "big") + b"\x02\x02" + b"x" * 140 for i in range(count)]

    def with_schema_id(payloads, schema_type, rest):
        for payload in payloads:
            wire, body = SchemaId(schema_type), io.BytesIO(payload)
            try:
                wire.from_bytes(body)
            except errors:
                pass
            rest(body)

    def avro_by_hand():
        for payload in plain:
            id_by_hand(payload)
            io.BytesIO(payload[5:])

    def json_by_hand():
        for payload in plain:
            id_by_hand(payload)
            payload[5:]

    def protobuf_by_hand():
        for payload in indexed:
            id_by_hand(payload)
            payload[indexes_by_hand(payload)[1]:]

    return {"avro, by hand": avro_by_hand, "avro, SchemaId": lambda: with_schema_id(plain, "AVRO", lambda b: None),
            "json, by hand": json_by_hand, "json, SchemaId": lambda: with_schema_id(plain, "JSON", io.BytesIO.read),
            "protobuf, by hand": protobuf_by_hand,
            "protobuf, SchemaId": lambda: with_schema_id(indexed, "PROTOBUF", io.BytesIO.read)}


def cpu_seconds(run, rounds: int) -> list[float]:
    run()
    times = []
    for _ in range(rounds):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--root", help="the checkout whose kafkasource to time (default: this one)")
    args = parser.parse_args(argv)
    if args.root:
        sys.path.insert(0, args.root)
        for name in [n for n in sys.modules if n == "kafkasource" or n.startswith("kafkasource.")]:
            del sys.modules[name]
    import kafkasource

    print(f"kafkasource from {kafkasource.__file__}; {args.records:,} records; CPU s of {args.rounds} rounds")
    for name, (decode, payloads, writers) in decoders(args.records).items():
        assert decode(payloads, writers)[1].null_count == len(payloads), "every record decodes"
        times = cpu_seconds(functools.partial(decode, payloads, writers), args.rounds)
        print(f"{name}: {' '.join(f'{t:.2f}' for t in times)} (best {min(times) * 1e6 / args.records:.0f} µs a record)")
    if not args.root:
        for name, run in prefix_readers(args.records).items():
            times = cpu_seconds(run, max(args.rounds, 5))
            print(f"prefix, {name}: best {min(times) * 1e6 / args.records:.2f} µs a record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
