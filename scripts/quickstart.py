"""The quick start: the ingest job end to end on this machine, as a user runs it.

1. starts a local Apache Kafka broker (a fresh one, on a free loopback port);
2. writes 10,000 JSON orders, and 3 records that are not JSON, to a 4-partition topic `orders`;
3. runs `spark-submit jobs/ingest.py --config conf/ingest.example.toml` (Trigger.AvailableNow), which
   reads from the group's committed offsets, writes Parquet and commits as batches complete;
4. prints the rows ingested per partition (read back from the Parquet output) and the group's
   committed offsets as Kafka's own kafka-consumer-groups reports them (lag 0);
5. runs the job again: nothing new, 0 rows; then stops the broker.
With --route, steps 3 to 5 run the route job instead (`jobs/route.py --config conf/route.example.toml`): the orders
of 100 or more, reshaped by its SQL, written exactly once to the topic `large-orders`, read back by a
read_committed consumer.
Everything lives under .cache/quickstart/ (replaced on every run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dev import broker as local_broker

REPO = Path(__file__).resolve().parent.parent
WORKDIR = REPO / ".cache" / "quickstart"
TOPIC, GROUP, PARTITIONS, ORDERS = "orders", "orders-ingest", 4, 10_000
ROUTED_TOPIC, ROUTE_GROUP = "large-orders", "orders-route"  # as conf/route.example.toml names them
NOT_JSON = [b"not json", b"{\"order_id\": ", b"\xff\xfe\x00"]


def spark_submit() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def produce(bootstrap: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10})
    for i in range(ORDERS):
        order = {"order_id": i, "customer": f"customer-{i % 50}", "amount": round(10 + (i % 97) * 1.25, 2)}
        producer.produce(TOPIC, key=order["customer"].encode(), value=json.dumps(order).encode(),
                         partition=i % PARTITIONS)
        if i % 1000 == 0:
            producer.poll(0)
    for i, value in enumerate(NOT_JSON):
        producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
    if producer.flush(30):
        raise RuntimeError("the sample orders were not all acknowledged within 30 s")


def run_job(job: str, env: dict[str, str]) -> float:
    started = time.monotonic()
    subprocess.run([spark_submit(), "--master", "local[2]", "--properties-file", "conf/spark-defaults.conf",
                    f"jobs/{job}.py", "--config", f"conf/{job}.example.toml"], cwd=REPO, env=env, check=True)
    return time.monotonic() - started


def summarize_routed(bootstrap: str) -> None:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "quickstart-reader", "log_level": 0,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(ROUTED_TOPIC, p, 0) for p in range(PARTITIONS)])
    values, ended, deadline = [], set(), time.monotonic() + 60
    while len(ended) < PARTITIONS and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.5):
            if msg.error() is not None and msg.error().code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition())
            elif msg.error() is None:
                values.append(msg.value())
    consumer.close()
    print(f"   a read_committed consumer reads {len(values):,} records from '{ROUTED_TOPIC}', "
          f"{len(set(values)):,} distinct; the first: {values[0].decode() if values else None}")


def summarize_output(path: Path) -> None:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(path, format="parquet", partitioning="hive").to_table(
        columns=["kafka_partition", "kafka_offset", "order_id", "_corrupt"])
    print(f"   {table.num_rows:,} rows in {path.relative_to(REPO)}, per partition:")
    for partition in range(PARTITIONS):
        rows = table.filter(pc.equal(table["kafka_partition"], partition))
        corrupt = rows.filter(pc.is_valid(rows["_corrupt"])).num_rows
        print(f"     partition {partition}: {rows.num_rows:,} rows, offsets {pc.min(rows['kafka_offset'])}.."
              f"{pc.max(rows['kafka_offset'])}" + (f" ({corrupt} not JSON, kept in _corrupt)" if corrupt else ""))


def main(argv: list[str] | None = None) -> int:
    route = "--route" in (sys.argv[1:] if argv is None else argv)
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True)
    started = time.monotonic()
    broker = local_broker.start(data_dir=WORKDIR / "broker")
    print(f"1. Kafka {local_broker.KAFKA_VERSION} broker up on {broker.bootstrap_servers} "
          f"in {time.monotonic() - started:.1f} s", flush=True)
    try:
        produce(broker.bootstrap_servers)
        print(f"2. produced {ORDERS:,} JSON orders and {len(NOT_JSON)} records that are not JSON to '{TOPIC}' "
              f"({PARTITIONS} partitions)", flush=True)
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers, "INGEST_DIR": str(WORKDIR),
               "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        job, group = ("route", ROUTE_GROUP) if route else ("ingest", GROUP)
        if route:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(ROUTED_TOPIC, PARTITIONS, 1)])[ROUTED_TOPIC].result(30)
            env["ROUTE_DIR"] = str(WORKDIR)
        print(f"3. spark-submit jobs/{job}.py --config conf/{job}.example.toml", flush=True)
        took = run_job(job, env)
        print(f"   (the job took {took:.0f} s)")
        print("4. what it wrote:")
        if route:
            summarize_routed(broker.bootstrap_servers)
        else:
            summarize_output(WORKDIR / "orders")
        print(f"   what Kafka's kafka-consumer-groups reports for group '{group}':")
        print("   " + broker.consumer_groups("--describe", "--group", group).strip().replace("\n", "\n   "))
        print("5. the same job again:", flush=True)
        run_job(job, env)
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
