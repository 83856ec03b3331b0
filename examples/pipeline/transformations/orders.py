"""The pipeline's tables: `orders_raw`, a streaming table of the topic's records as kafkasource reads them (the
same columns as Spark's built-in Kafka source), and `orders_per_partition`, a materialized view over it.

Where to read from comes from the environment, read when spark-pipelines loads this file:
KAFKA_BOOTSTRAP_SERVERS, ORDERS_TOPIC and ORDERS_GROUP (the consumer group, which starts from its committed offsets
and is committed as each batch completes, so lag tools follow the pipeline)."""

import os

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

spark = SparkSession.active()


@dp.table(comment="The topic's records, read by kafkasource; the group committed as each batch completes")
def orders_raw() -> DataFrame:
    return (
        spark.readStream.format("kafkasource")
        .option("kafka.bootstrap.servers", os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
        .option("subscribe", os.environ.get("ORDERS_TOPIC", "orders"))
        .option("kafka.group.id", os.environ.get("ORDERS_GROUP", "orders-pipeline"))
        .option("kafka.auto.offset.reset", "earliest")
        .load()
    )


@dp.materialized_view(comment="Records and the last offset read, per partition")
def orders_per_partition() -> DataFrame:
    return spark.read.table("orders_raw").groupBy("partition").agg(
        F.count("*").alias("records"), F.max("offset").alias("last_offset")
    )
