"""kafkasource runs inside whatever Spark the user has: a pip-installed pyspark, or a Spark distribution's
own python/ directory (spark-submit and managed runtimes put it on sys.path). The wheel therefore does not
require pyspark (pip would install a second one next to the runtime's); this module checks, before anything
imports pyspark, that one is importable and new enough, and says what to do when it is not."""

from __future__ import annotations

import re
import sys

# Python stream readers get admission control (latestOffset(start, limit)) from Spark 4.2 on
MINIMUM = (4, 2)
INSTALL_HINT = (
    "Install one with `pip install 'kafkasource[spark]'` (or `pip install 'pyspark>=4.2'`), "
    "or run under a Spark 4.2 or newer: spark-submit and the pyspark shell put its python/ on sys.path."
)


def require_pyspark() -> None:
    try:
        import pyspark
    except ImportError as error:
        raise ImportError(
            f"kafkasource needs PySpark 4.2 or newer, and this Python ({sys.executable}) "
            f"cannot import pyspark ({error}). {INSTALL_HINT}"
        ) from None
    found = getattr(pyspark, "__version__", "")
    if version_tuple(found) < MINIMUM:
        raise ImportError(
            f"kafkasource needs PySpark 4.2 or newer, but this Python imports pyspark "
            f"{found or '(no version)'} from {pyspark.__file__}. {INSTALL_HINT}"
        )


def version_tuple(version: str) -> tuple[int, int]:
    """(major, minor) of "4.3.0", "4.2.0.dev1" or "4.2.0-SNAPSHOT"; (0, 0) when the text is not a version."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)
