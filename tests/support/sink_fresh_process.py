"""An exactly-once write in a Spark application of its own, for tests/system/test_sink_recovery.py: a fresh process
has no producer kept from an earlier batch, so only what Kafka holds (the batch markers) decides what its tasks skip.

    python -m tests.support.sink_fresh_process SPEC

SPEC is a JSON file. {"mode": "copy", "master": ..., "bootstrap": ..., "source": {options}, "sink": {options},
"checkpoint": ...} copies the source (key, value, partition) into the sink under Trigger.AvailableNow, to its end.
{"mode": "batch-write", "master": ..., "bootstrap": ..., "rows": N, "partitions": P, "writes": [{options}, ...]}
writes values v0..v(N-1), in P Spark partitions, once per entry of "writes". Either prints one JSON line,
{"outcome": "ok"} or {"outcome": "failed", "error": "..."}, and exits 0; anything else exits 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# C1 alone compiles enough for these small writes and starts the JVM a third faster on a busy machine
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
OUTCOME = "outcome: "  # the line the test reads


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(spec["master"]).appName("kafkasource-fresh-process")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        copy(spark, spec) if spec["mode"] == "copy" else batch_write(spark, spec)
        outcome = {"outcome": "ok"}
    except Exception as exc:  # what the test asserts on
        outcome = {"outcome": "failed", "error": str(exc)}
    print(OUTCOME + json.dumps(outcome), flush=True)
    spark.stop()
    return 0


def copy(spark, spec: dict) -> None:
    df = spark.readStream.format("kafkasource").options(**{"kafka.bootstrap.servers": spec["bootstrap"],
                                                           **spec["source"]}).load()
    query = (df.selectExpr("key", "value", "partition").writeStream.format("kafkasource")
             .options(**{"kafka.bootstrap.servers": spec["bootstrap"], **spec["sink"]})
             .option("checkpointLocation", spec["checkpoint"]).trigger(availableNow=True).start())
    try:
        query.awaitTermination(300)
        if query.exception() is not None:
            raise query.exception()
    finally:
        query.stop()


def batch_write(spark, spec: dict) -> None:
    rows = [(f"v{i}",) for i in range(spec["rows"])]
    df = spark.createDataFrame(rows, "value string").repartition(spec["partitions"])
    for options in spec["writes"]:
        (df.write.format("kafkasource").mode("append")
         .options(**{"kafka.bootstrap.servers": spec["bootstrap"], **options}).save())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
