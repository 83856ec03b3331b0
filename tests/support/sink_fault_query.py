"""Kafka-to-Kafka queries in a process of their own, for tests/system/test_sink_faults.py to SIGKILL: kafkasource
reads the source topic, and kafkasource's sink copies key, value and partition into a target topic (same partition
numbers), with a checkpoint. The test runs one query per process: two queries of one Spark application starting at once
made Spark's Python workers miss their connect-back (below) at nearly every start on the busy test machine.

    python -m tests.support.sink_fault_query CONFIG TRIGGER

CONFIG is a JSON file: {"bootstrap": ..., "source": ..., "queries": [{"guarantee": ..., "target": ...,
"checkpoint": ..., "prefix": ...}, ...]} (prefix: the transactionalIdPrefix, exactly-once only). TRIGGER
`processing` runs small batches every 500 ms until the process is killed; `available-now` runs what each
checkpoint left unfinished and the rest of the source to its end in one more batch, then exits 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

MAX_OFFSETS_PER_TRIGGER = "90"  # small batches, of a few tasks' transactions each (processing only)
PROCESSING_INTERVAL = "500 milliseconds"
# C1 alone compiles enough for these small batches and starts the JVM a third faster on a busy machine
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Spark gives a Python worker it starts (a query's planner, a task's worker) a fixed 10 s to connect back, which a busy
# machine sometimes misses: the query, or its start, fails. Such a query is started again from its checkpoint and
# the log says so (the test counts RESTARTED); any other failure ends the process with 1.
CONNECT_BACK = "Python worker failed to connect back"
RESTARTED = "connect-back restart"
MAX_RESTARTS = 3  # per process


def main(argv: list[str]) -> int:
    config_path, trigger = argv
    config = json.loads(Path(config_path).read_text())
    os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                       "SPARK_LOCAL_IP": "127.0.0.1"})
    from pyspark.errors import StreamingQueryException
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("kafkasource-sink-faults")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS).getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    restarts = 0
    specs = {spec["guarantee"]: spec for spec in config["queries"]}
    running = {name: start(spark, config, spec, trigger) for name, spec in specs.items()}
    while running:
        try:
            spark.streams.awaitAnyTermination()
        except StreamingQueryException:
            pass  # told below, query by query
        spark.streams.resetTerminated()
        for name, query in list(running.items()):
            if query.isActive:
                continue
            failure = query.exception()
            if failure is not None and CONNECT_BACK in str(failure) and restarts < MAX_RESTARTS:
                restarts += 1
                print(f"query {query.id} ({name}) failed before Spark's Python worker connected back: restarted "
                      f"from its checkpoint ({RESTARTED})", flush=True)
                running[name] = start(spark, config, specs[name], trigger)
            elif failure is not None:
                print(f"query {query.id} ({name}) failed: {failure}", file=sys.stderr, flush=True)
                return 1
            else:  # available-now: at the source's end
                del running[name]
    spark.stop()
    return 0


def start(spark, config: dict, spec: dict, trigger: str):
    for attempt in range(MAX_RESTARTS + 1):
        try:
            return start_once(spark, config, spec, trigger)
        except Exception as exc:
            if CONNECT_BACK not in str(exc) or attempt == MAX_RESTARTS:
                raise
            print(f"the start of the {spec['guarantee']} query failed before Spark's Python worker connected back: "
                  f"started again ({RESTARTED})", flush=True)
    raise AssertionError("unreachable")


def start_once(spark, config: dict, spec: dict, trigger: str):
    reader = (spark.readStream.format("kafkasource").option("kafka.bootstrap.servers", config["bootstrap"])
              .option("subscribe", config["source"]).option("startingOffsets", "earliest"))
    if trigger == "processing":
        reader = reader.option("maxOffsetsPerTrigger", MAX_OFFSETS_PER_TRIGGER)
    writer = (reader.load().selectExpr("key", "value", "partition").writeStream.format("kafkasource")
              .option("kafka.bootstrap.servers", config["bootstrap"]).option("topic", spec["target"])
              .option("deliveryGuarantee", spec["guarantee"]).option("checkpointLocation", spec["checkpoint"]))
    if spec["guarantee"] == "exactly-once":
        writer = writer.option("transactionalIdPrefix", spec["prefix"])
    if trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=PROCESSING_INTERVAL)
    query = writer.start()
    print(f"query {query.id} ({spec['guarantee']}) started", flush=True)
    return query


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
