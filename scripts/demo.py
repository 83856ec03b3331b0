"""The quick-start demo, end to end on this machine.

Starts a local Apache Kafka broker, writes sample orders to a 4-partition topic, marks part of
them as already processed by the consumer group `orders-etl` (a committed offset), then runs a
kafkasource query with Trigger.AvailableNow that starts from the group's committed offsets, drains
the topic into Parquet and commits on batch completion. Finally it shows what the query read and
what Kafka's own kafka-consumer-groups tool reports for the group (lag 0 everywhere).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time

from dev import broker as local_broker

TOPIC, GROUP, PARTITIONS, RECORDS = "orders", "orders-etl", 4, 10_000


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    from pyspark.sql import SparkSession

    workdir = tempfile.mkdtemp(prefix="kafkasource-demo-")
    started = time.monotonic()
    broker = local_broker.start(data_dir=os.path.join(workdir, "broker"))
    bootstrap = broker.bootstrap_servers
    print(f"1. Kafka {local_broker.KAFKA_VERSION} broker up on {bootstrap} in {time.monotonic() - started:.1f} s")
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept referenced until its future resolves
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10})
        for i in range(RECORDS):
            order = {"order_id": i, "amount": round(10 + (i % 97) * 1.25, 2)}
            producer.produce(TOPIC, key=f"customer-{i % 50}".encode(), value=json.dumps(order).encode(),
                             partition=i % PARTITIONS)
            if i % 1000 == 0:
                producer.poll(0)
        producer.flush(30)
        del producer, admin  # closed now, so they do not log the broker's shutdown later
        # an earlier run of the pipeline already processed the first 1,000 records of each partition
        committer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
        committer.commit(offsets=[TopicPartition(TOPIC, p, 1000) for p in range(PARTITIONS)], asynchronous=False)
        committer.close()
        print(f"2. produced {RECORDS:,} orders to '{TOPIC}' ({PARTITIONS} partitions); group '{GROUP}' has "
              f"committed offset 1000 on each partition")

        spark = (SparkSession.builder.master("local[2]").appName("kafkasource-demo")
                 .config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        orders = (spark.readStream.format("kafkasource")  # registered by installing the package
                  .option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", TOPIC)
                  .option("kafka.group.id", GROUP)          # start from the group's committed offsets ...
                  .option("startingOffsets", "committed")
                  .option("commitMode", "sync")             # ... and commit back when each batch completes
                  .option("maxOffsetsPerTrigger", "4000")
                  .load())
        out = os.path.join(workdir, "orders-parquet")
        query = (orders.selectExpr("partition", "offset", "CAST(key AS STRING) AS customer",
                                   "CAST(value AS STRING) AS order_json", "timestamp")
                 .writeStream.format("parquet").option("path", out)
                 .option("checkpointLocation", os.path.join(workdir, "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        print(f"3. kafkasource query drained the topic in {len(batches)} micro-batches {batches} into {out}")

        written = spark.read.parquet(out)
        print("4. what it read, per partition:")
        for row in written.groupBy("partition").agg({"offset": "min", "*": "count"}).orderBy("partition").collect():
            print(f"     partition {row['partition']}: {row['count(1)']:,} records from offset {row['min(offset)']}")
        sample = written.orderBy("partition", "offset").first()
        print(f"   first record: partition {sample.partition}, offset {sample.offset}, "
              f"key {sample.customer}, value {sample.order_json}")
        spark.stop()

        print(f"5. what Kafka's kafka-consumer-groups reports for group '{GROUP}':")
        print("   " + broker.consumer_groups("--describe", "--group", GROUP).strip().replace("\n", "\n   "))
    finally:
        broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
