"""A batch write with kafkasource's sink as a job on a cluster runs it, the package shipped with --py-files (so
the job registers the format itself). Run by tests/system/test_cluster.py:

    spark-submit --master spark://... --py-files kafkasource.zip tests/support/sink_cluster_job.py BOOTSTRAP TOPIC

The DataFrame has PARTITIONS Spark partitions of PER_PARTITION rows; the rows of Spark partition p name Kafka
partition p of TOPIC, so each Kafka partition receives one task's rows in order.
"""

from __future__ import annotations

import sys

PARTITIONS, PER_PARTITION = 4, 10
# row i: key k<i>, value v<i>, one header n=<i>, Kafka partition i // PER_PARTITION; built by Spark from a range,
# so no Python runs on the executors but the sink's writer
COLUMNS = ("concat('k', id) AS key", "CAST(concat('v', id) AS BINARY) AS value",
           "array(named_struct('key', 'n', 'value', CAST(CAST(id AS STRING) AS BINARY))) AS headers",
           f"CAST(id DIV {PER_PARTITION} AS INT) AS partition")


def expected_records() -> list[tuple]:
    """What the topic holds after the job: (partition, offset, key, value, headers), in position order."""
    return [(i // PER_PARTITION, i % PER_PARTITION, f"k{i}".encode(), f"v{i}".encode(), (("n", f"{i}".encode()),))
            for i in range(PARTITIONS * PER_PARTITION)]


def main(argv: list[str]) -> int:
    bootstrap, topic = argv
    from pyspark.sql import SparkSession

    import kafkasource

    spark = SparkSession.builder.appName("kafkasource-sink-on-a-cluster").getOrCreate()
    kafkasource.register(spark)  # Spark's own scan at startup finds no package inside a --py-files zip
    try:
        # a range's partitions hold contiguous ids: Spark partition p holds the rows that name Kafka partition p
        df = spark.range(0, PARTITIONS * PER_PARTITION, 1, PARTITIONS).selectExpr(*COLUMNS)
        (df.write.format("kafkasource").mode("append").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", topic).save())
        print(f"sink: {PARTITIONS * PER_PARTITION} rows written to {topic} with kafkasource from "
              f"{kafkasource.__file__}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
