"""Write the sink tests' sample DataFrame with Spark's built-in Kafka sink and with kafkasource's, side by side in
one Spark session that loads the built-in connector's jars (bench/reference.py fetches them with Maven). The test
session has no such jars and a JVM takes its jars only at start, hence a process of its own.

    python -m tests.support.sink_reference_job BOOTSTRAP BUILTIN_A BUILTIN_B BUILTIN_C OURS_A OURS_B OURS_C

Each sink writes the sample once through its topic column (topics A and B) and once with the topic option C,
which must win over the column.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    bootstrap, builtin_a, builtin_b, builtin_c, ours_a, ours_b, ours_c = argv
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.sql import SparkSession

    import kafkasource
    from bench.reference import reference_jars
    from tests.support.sink_helpers import sample_frame, write_batch

    spark = (SparkSession.builder.master("local[2]").appName("kafkasource-sink-reference")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.jars", ",".join(str(j) for j in reference_jars())).getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    kafkasource.register(spark)
    try:
        sinks = (("kafka", (builtin_a, builtin_b, builtin_c)), ("kafkasource", (ours_a, ours_b, ours_c)))
        for source, (a, b, c) in sinks:
            frame = sample_frame(spark, a, b)
            write_batch(frame, {"kafka.bootstrap.servers": bootstrap}, source)
            write_batch(frame, {"kafka.bootstrap.servers": bootstrap, "topic": c}, source)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
