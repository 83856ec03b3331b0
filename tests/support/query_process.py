"""A streaming query in a Spark of its own, for tests/system/test_sink_cluster.py's rolling restart, into
kafkasource's sink on 1 s triggers: a Kafka-to-Kafka copy (kafkasource's source, key, value and partition) or a
file stream (Spark's text source, one line a record).

Its Spark runs as a cluster's does in one respect the tests' shared session cannot: a failed task is run again
(`local[N,F]`: F attempts, spark.task.maxFailures' default of 4), where `local[N]` fails the query at a task's first
failure. And with one core (`local[1,F]`) a single Python worker runs every sink task, so it keeps its transactional
producer from batch to batch, the case where a producer's cached coordinators go stale while a node restarts (in a
session of more cores a task goes to whichever idle worker Spark hands out first, and the producer moves between
workers).

    python -m tests.support.query_process CONFIG

CONFIG is a JSON file: {"master", "source": "kafka" or "files", "read": {option: value} (kafkasource's options, or
{"path": folder}), "write": {option: value}, "checkpoint", "progress", "stop"}. Each new progress of the query is
appended to `progress` as a JSON line. Once the file `stop` exists, the query is stopped and the process exits 0; a
query that fails ends it with 1, its error on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# C1 alone compiles enough for these small batches and starts the JVM a third faster on a busy machine
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[0]).read_text())
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(config["master"]).appName("kafkasource-query-process")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS).getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    if config["source"] == "files":
        df = spark.readStream.text(config["read"]["path"]).selectExpr("CAST(value AS BINARY) AS value")
    else:
        df = spark.readStream.format("kafkasource").options(**config["read"]).load().selectExpr(
            "key", "value", "partition")
    query = (df.writeStream.format("kafkasource").options(**config["write"])
             .option("checkpointLocation", config["checkpoint"]).trigger(processingTime="1 second").start())
    seen: set[int] = set()
    stop = Path(config["stop"])
    with open(config["progress"], "a") as progress:
        while query.isActive and not stop.exists():
            for update in query.recentProgress:
                if update["batchId"] not in seen:
                    seen.add(update["batchId"])
                    progress.write(update.json + "\n")
                    progress.flush()
            time.sleep(0.5)
    failure = query.exception()
    query.stop()
    if failure is not None:
        print(f"the query failed: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
