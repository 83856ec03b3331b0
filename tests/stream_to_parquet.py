"""A spark-submit application for the crash tests: kafkasource -> Parquet file sink, processing time.

    spark-submit tests/stream_to_parquet.py BOOTSTRAP TOPIC GROUP OUTPUT CHECKPOINT

Runs until killed. The file sink lists the files of every completed batch in OUTPUT/_spark_metadata,
which is what makes it exactly-once across crashes.
"""

import sys

from pyspark.sql import SparkSession

import kafkasource

bootstrap, topic, group, output, checkpoint = sys.argv[1:6]
spark = SparkSession.builder.appName("kafkasource-crash-test").getOrCreate()
kafkasource.register(spark)
(spark.readStream.format("kafkasource")
 .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
 .option("kafka.group.id", group).option("kafka.auto.offset.reset", "earliest")
 .option("maxOffsetsPerTrigger", "200")
 .load().selectExpr("partition", "offset", "value")
 .writeStream.format("parquet").option("path", output).option("checkpointLocation", checkpoint)
 .trigger(processingTime="500 milliseconds").start()
 .awaitTermination())
