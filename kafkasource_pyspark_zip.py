"""Spark's Python processes import pyspark from the installed package, bytecode included, not from pyspark.zip.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on the PYTHONPATH of every Python process it starts: its
workers, and the processes that plan a Python data source, among them the reader's driver side that every streaming
query starts afresh. Python keeps no compiled bytecode for what it imports from a zip, so each of those processes
compiles pyspark again before it does anything: a second or more per process on a 2-core machine, paid at every
query's start. Where pyspark was installed with pip, SPARK_HOME is that installed package: the zip lies inside it,
holds the same release, and the same modules are on sys.path after it, compiled. In that case only (without the
zip, `import pyspark` finds the very package the zip lies in), this takes the zip off sys.path. With a Spark
distribution's SPARK_HOME, or a zip of another pyspark, sys.path stays as Spark gave it.

kafkasource_pyspark_zip.pth, which the wheel installs beside this module, calls it as each Python starts, when
PYTHONPATH names a pyspark.zip (otherwise it imports nothing). KAFKASOURCE_KEEP_PYSPARK_ZIP=1 leaves sys.path
alone. It is a module of its own, outside the kafkasource package, because importing that package imports pyspark.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

KEEP_VARIABLE = "KAFKASOURCE_KEEP_PYSPARK_ZIP"


def installed_pyspark_zip(path: list[str]) -> str | None:
    """The pyspark.zip entry of `path` that lies inside the pyspark package `path` finds without it, else None."""
    for entry in path:
        if os.path.basename(entry) != "pyspark.zip":
            continue
        package = os.path.dirname(os.path.dirname(os.path.dirname(entry)))  # <pyspark>/python/lib/pyspark.zip
        spec = PathFinder.find_spec("pyspark", [other for other in path if other != entry])
        if spec is not None and spec.origin is not None and same_directory(os.path.dirname(spec.origin), package):
            return entry
    return None


def same_directory(one: str, other: str) -> bool:
    return os.path.realpath(one) == os.path.realpath(other)


def prefer_installed_pyspark() -> None:
    """Take the installed pyspark's own zip off sys.path, unless pyspark is imported already or the user said no."""
    if os.environ.get(KEEP_VARIABLE) == "1" or "pyspark" in sys.modules:
        return
    entry = installed_pyspark_zip(sys.path)
    if entry is not None:
        sys.path[:] = [other for other in sys.path if other != entry]
