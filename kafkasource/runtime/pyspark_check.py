"""kafkasource runs inside whatever Spark the user has: a pip-installed pyspark, or a Spark distribution's
own python/ directory (spark-submit and managed runtimes put it on sys.path). The wheel therefore does not
require pyspark (pip would install a second one next to the runtime's); this module checks, before anything
imports pyspark, that one is importable and new enough, and says what to do when it is not.

The floor is Spark 4.0, which brought the Python Data Source API the source and the sink are written against:
on Spark 3.5 (Glue 5, Synapse, Cloudera) no Python data source can run, and Spark itself would only answer
format("kafkasource") with a ClassNotFoundException from the JVM. What 4.2 added (admission control for stream
readers) is used where present and made up for where not (kafkasource/runtime/spark_api.py)."""

from __future__ import annotations

import re
import sys

MINIMUM = (4, 0)
INSTALL_HINT = (
    "Install one with `pip install 'kafkasource[spark]'` (or `pip install 'pyspark>=4.0'`), "
    "or run under a Spark 4.0 or newer: spark-submit and the pyspark shell put its python/ on sys.path."
)
WHY = 'Spark\'s Python Data Source API, which format("kafkasource") runs on, came with Spark 4.0'


def require_pyspark() -> None:
    try:
        import pyspark
    except ImportError as error:
        raise ImportError(
            f"kafkasource needs PySpark 4.0 or newer, and this Python ({sys.executable}) "
            f"cannot import pyspark ({error}). {INSTALL_HINT}"
        ) from None
    found = getattr(pyspark, "__version__", "")
    if version_tuple(found) < MINIMUM:
        raise ImportError(
            f"kafkasource needs PySpark 4.0 or newer ({WHY}; no Python data source can run on an older one), "
            f"but this Python imports pyspark {found or '(no version)'} from {pyspark.__file__}. {INSTALL_HINT}"
        )


def version_tuple(version: str) -> tuple[int, int]:
    """(major, minor) of "4.3.0", "4.2.0.dev1" or "4.2.0-SNAPSHOT"; (0, 0) when the text is not a version."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)
