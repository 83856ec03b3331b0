"""The ingest job's one line for a table format's jar built for another Spark: it names the jar, the Spark and the
jar that fits, from the failure's text; any other failure is left as it is. Pure logic: the texts are the JVM's
own, captured from Delta 4.1.0 on pyspark 4.1.4 (tests/system/test_lakehouse_jobs.py meets the same through
spark-submit)."""

from __future__ import annotations

from kafkasource.jobs import table_jars

# the head of what pyspark 4.1.4 raised when a session with Delta 4.1.0 read back a table past its first checkpoint
DELTA_410_ON_SPARK_414 = """An error occurred while calling o99.count.
: java.lang.NoSuchMethodError: 'void org.apache.spark.sql.execution.datasources.parquet.ParquetToSparkSchemaConverter\
.<init>(boolean, boolean, boolean, boolean, boolean, boolean, boolean)'
	at org.apache.spark.sql.delta.Snapshot$.getParquetFileSchemaAndRowCount(Snapshot.scala:885)
	at org.apache.spark.sql.delta.CheckpointProvider$.$anonfun$getParquetSchema$1(CheckpointProvider.scala:195)
"""
MISSING = ("java.lang.NoSuchMethodError: 'void org.apache.spark.sql.execution.datasources.parquet."
           "ParquetToSparkSchemaConverter.<init>(boolean, boolean, boolean, boolean, boolean, boolean, boolean)'")


def test_a_delta_jar_built_for_another_spark_is_named_with_the_spark_and_the_jar_that_fits():
    line = table_jars.mismatch(DELTA_410_ON_SPARK_414, "delta", "4.1.4",
                               "/root/.ivy2.5.2/jars/io.delta_delta-spark_2.13-4.1.0.jar")
    assert line == (
        f"the Delta Lake jar io.delta_delta-spark_2.13-4.1.0.jar does not fit Spark 4.1.4 ({MISSING}): for Spark 4.1 "
        "use io.delta:delta-spark_4.1_2.13:4.4.0; the docs' Spark versions page lists which Delta Lake and Iceberg go "
        "with which Spark")


def test_the_format_is_the_one_whose_classes_fail_and_a_spark_without_its_jar_is_said_so():
    text = ("java.lang.NoClassDefFoundError: org/apache/spark/sql/connector/catalog/View\n"
            "\tat org.apache.iceberg.spark.SparkCatalog.loadView(SparkCatalog.java:612)\n")
    # a job writing Delta whose failure comes from Iceberg's classes: Iceberg is named
    line = table_jars.mismatch(text, "delta", "4.3.0", None)
    assert line == (
        "the Apache Iceberg jar does not fit Spark 4.3.0 (java.lang.NoClassDefFoundError: "
        "org/apache/spark/sql/connector/catalog/View): no Apache Iceberg release is built for Spark 4.3 yet (there "
        "are jars for Spark 4.0, 4.1); the docs' Spark versions page lists which Delta Lake and Iceberg go with which "
        "Spark")


def test_a_linkage_error_without_a_stack_trace_is_the_jobs_own_format_and_other_failures_are_left_alone():
    bare = "[STREAM_FAILED] Query terminated with exception: java.lang.AbstractMethodError: Receiver class x"
    assert table_jars.mismatch(bare, "iceberg", "4.1.4", None).startswith(
        "the Apache Iceberg jar does not fit Spark 4.1.4 (java.lang.AbstractMethodError: Receiver class x): for Spark "
        "4.1 use org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0;")
    assert table_jars.mismatch(bare, "parquet", "4.1.4", None) is None  # no table format's jar to blame
    other = "java.lang.OutOfMemoryError: Java heap space\n\tat org.apache.spark.sql.delta.Snapshot.load(S.scala:1)"
    assert table_jars.mismatch(other, "delta", "4.1.4", None) is None


def test_the_failure_text_holds_the_jvm_stack_trace_that_pyspark_keeps_aside():
    class Captured(Exception):  # pyspark's classic exceptions keep the JVM's trace here and print it only on request
        _stackTrace = "java.lang.NoSuchMethodError: 'void x()'\n\tat io.delta.tables.DeltaTable.forPath(x:1)"

    text = table_jars.failure_text(Captured("[STREAM_FAILED] Query terminated"))
    assert text.startswith("[STREAM_FAILED] Query terminated\n")
    assert table_jars.mismatch(text, "delta", "4.0.5", "/jars/delta-spark_2.13-4.0.0.jar") == (
        "the Delta Lake jar delta-spark_2.13-4.0.0.jar does not fit Spark 4.0.5 (java.lang.NoSuchMethodError: "
        "'void x()'): for Spark 4.0 use io.delta:delta-spark_4.0_2.13:4.4.0; the docs' Spark versions page lists "
        "which Delta Lake and Iceberg go with which Spark")
    assert table_jars.failure_text(ValueError("plain")) == "plain\n"
