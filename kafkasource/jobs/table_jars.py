"""Which Delta Lake and Apache Iceberg jars go with which Spark, and the one line the ingest job gives when a table
format's jar does not fit the Spark it runs on.

Each format builds its Spark jar against one Spark minor release and calls Spark's internal classes, which change
even between patch releases: Delta 4.1.0, built against Spark 4.1.0, calls a constructor of Spark's Parquet schema
converter that Spark 4.1.4 no longer has. Nothing fails when the job starts. The first call to the missing method
does, and for Delta that is the first reload of the table after its log's first checkpoint (Delta writes one every
10 commits by default), so a stream runs for a while and then stops. The JVM reports it as a linkage error
(NoSuchMethodError, NoClassDefFoundError, ...) deep in Spark's text; the job's one line names the jar, the Spark
and the jar that fits instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath


@dataclass(frozen=True)
class TableFormat:
    title: str
    jars: dict[str, str]  # Spark minor release -> the newest jar built for it (group:artifact:version)
    probe_class: str  # a class of the format's Spark jar, to find which jar the driver loaded
    packages: tuple[str, ...]  # the format's own packages, as they appear in a JVM stack trace


# The newest release of each format published for each Spark minor, each checked against the newest pyspark patch
# release of its minor. Delta 4.4.0 is built per Spark minor (artifact delta-spark_<minor>_2.13) for 4.0 to 4.2;
# Iceberg's runtime for 4.0 stopped at 1.11.0, and none exists yet for 4.2 or 4.3 (its 4.1 runtime fails on 4.2).
DELTA = TableFormat(
    "Delta Lake",
    {
        "4.0": "io.delta:delta-spark_4.0_2.13:4.4.0",
        "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
        "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
    },
    "io.delta.sql.DeltaSparkSessionExtension",
    ("org.apache.spark.sql.delta.", "io.delta."),
)
ICEBERG = TableFormat(
    "Apache Iceberg",
    {
        "4.0": "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.11.0",
        "4.1": "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0",
    },
    "org.apache.iceberg.spark.SparkCatalog",
    ("org.apache.iceberg.",),
)
FORMATS = {"delta": DELTA, "iceberg": ICEBERG}

# a jar built against another Spark than the one running: a method, field or class it was compiled against is gone
# or changed shape. The first such line of the JVM's text, up to its end.
_LINKAGE_ERROR = re.compile(
    r"java\.lang\.(?:NoSuchMethodError|NoSuchFieldError|NoClassDefFoundError|AbstractMethodError"
    r"|IncompatibleClassChangeError)[^\n]*"
)


def spark_minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def supported(fmt: str, spark_version: str) -> bool:
    return spark_minor(spark_version) in FORMATS[fmt].jars


def advice(fmt: str, spark_version: str) -> str:
    """Which jar of the format to use on this Spark, or that none exists yet."""
    table_format, minor = FORMATS[fmt], spark_minor(spark_version)
    jar = table_format.jars.get(minor)
    if jar is not None:
        return f"for Spark {minor} use {jar}"
    built_for = ", ".join(table_format.jars)
    return f"no {table_format.title} release is built for Spark {minor} yet (there are jars for Spark {built_for})"


def mismatch(failure_text: str, fmt: str, spark_version: str, loaded_jar: str | None) -> str | None:
    """The one line for a failure of a job writing `fmt` whose text (message and JVM stack trace) holds a linkage
    error from a table format's classes; None for any other failure. The format is the one whose classes the stack
    trace names, else the job's own when the trace is not in the text."""
    found = _LINKAGE_ERROR.search(failure_text)
    if found is None:
        return None
    named = [name for name, f in FORMATS.items() if any(package in failure_text for package in f.packages)]
    if named:
        fmt = fmt if fmt in named else named[0]
    elif fmt not in FORMATS:
        return None
    jar = f"jar {PurePosixPath(loaded_jar).name}" if loaded_jar else "jar"
    return (
        f"the {FORMATS[fmt].title} {jar} does not fit Spark {spark_version} ({found.group(0).strip()}): "
        f"{advice(fmt, spark_version)}; the docs' Spark versions page lists which Delta Lake and Iceberg go with "
        "which Spark"
    )


def failure_text(exc: BaseException) -> str:
    """An exception's message with the JVM's stack trace, where pyspark kept it: a classic session's exceptions
    keep the trace in `_stackTrace` and print it only when spark.sql.pyspark.jvmStacktrace.enabled is set."""
    return f"{exc}\n{getattr(exc, '_stackTrace', '') or ''}"


def loaded_jar(spark, fmt: str) -> str | None:
    """Where the driver loaded the format's Spark jar from; None on Spark Connect (no JVM here) or when the format's
    classes are not on the class path."""
    try:
        cls = spark._jvm.org.apache.spark.util.Utils.classForName(FORMATS[fmt].probe_class, False, False)
        return str(cls.getProtectionDomain().getCodeSource().getLocation().getPath())
    except Exception:  # Connect sessions have no _jvm; a missing class is a Py4J error
        return None
