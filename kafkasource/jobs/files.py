"""Where the jobs read their own files from: a local path, a file shipped with `spark-submit --files`, or any
file system Spark's Hadoop layer reads (`file:`, `hdfs:`, `s3a:`, `abfss:`, `gs:` ...).

In cluster deploy mode the driver runs on some node of the cluster: the path given on the command line is
not on that node's disk unless it was shipped there (`--files`, which Spark's YARN and Kubernetes managers
put in the driver's working directory and every manager makes reachable through SparkFiles) or lives on a
shared file system. A plain path that exists locally is read at once, before Spark starts, so a bad
configuration still stops the job before any session; anything else is read through the Spark session.
"""

from __future__ import annotations

import os
import re

# a URI scheme (hdfs:, s3a:, file: ...), but not a Windows drive letter
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def has_scheme(location: str) -> bool:
    return bool(_SCHEME.match(location))


def local_file(location: str) -> str | None:
    """The location as a local file path when it is one that exists here, else None."""
    if location.startswith("file:"):
        path = re.sub(r"^file:(//[^/]*)?", "", location)
        return path if os.path.isfile(path) else None
    return location if not has_scheme(location) and os.path.isfile(location) else None


def read_bytes(spark, location: str) -> bytes:
    """The whole file at `location`, read by the driver: a local file, a file shipped with --files (by its
    name), or through Spark's Hadoop file systems. FileNotFoundError names the location when none has it."""
    path = local_file(location)
    if path is not None:
        with open(path, "rb") as f:
            return f.read()
    if not has_scheme(location):
        shipped = _shipped(spark, location)
        if shipped is not None:
            with open(shipped, "rb") as f:
                return f.read()
    if _is_connect(spark):
        return _read_over_connect(spark, location)
    return _read_through_hadoop(spark, location)


def exists(spark, location: str) -> bool:
    """Whether a file or directory exists at `location`, resolved as Spark resolves a checkpoint or sink
    path (a path without a scheme lands on the cluster's default file system)."""
    if _is_connect(spark):
        try:  # the server resolves the path; a missing one fails the listing
            spark.read.format("binaryFile").load(location).limit(1).collect()
            return True
        except Exception as exc:
            if "PATH_NOT_FOUND" in str(exc):
                return False
            raise
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    return bool(path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path))


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _shipped(spark, name: str) -> str | None:
    """A file shipped with --files (or spark.files), by its bare name: where SparkFiles put it on the driver."""
    if _is_connect(spark) or os.sep in name.rstrip(os.sep):
        return None
    from pyspark import SparkFiles

    try:
        path = SparkFiles.get(name)
    except Exception:  # no SparkContext in this process
        return None
    return path if os.path.isfile(path) else None


def _read_through_hadoop(spark, location: str) -> bytes:
    context = spark.sparkContext
    jvm = context._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    try:
        stream = path.getFileSystem(context._jsc.hadoopConfiguration()).open(path)
    except Exception as exc:
        if "FileNotFoundException" in str(exc):
            raise FileNotFoundError(location) from None
        raise OSError(f"cannot open {location}: {_first_line(exc)}") from None
    try:
        return bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def _read_over_connect(spark, location: str) -> bytes:
    try:
        rows = spark.read.text(location, wholetext=True).collect()
    except Exception as exc:
        if "PATH_NOT_FOUND" in str(exc):
            raise FileNotFoundError(location) from None
        raise OSError(f"cannot read {location}: {_first_line(exc)}") from None
    return "".join(row[0] for row in rows).encode("utf-8")


def _first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
