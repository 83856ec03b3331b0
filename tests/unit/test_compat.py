"""What tells the installed pyspark apart, on every pyspark the package supports (4.0 to 4.3): the stream reader's
check for admission control of Python stream readers agrees with the version (kafkasource/runtime/spark_api.py).
scripts/compat.py runs it again on the newest 4.0 and 4.1, with tests/integration/test_compat.py."""

from __future__ import annotations

import pyspark

from kafkasource.runtime.pyspark_check import version_tuple
from kafkasource.runtime.spark_api import ADMISSION_CONTROL


def test_the_installed_pyspark_is_told_apart_by_what_it_offers():
    # admission control for Python stream readers came with 4.2: the reader's feature check agrees with the version
    assert ADMISSION_CONTROL == (version_tuple(pyspark.__version__) >= (4, 2))
