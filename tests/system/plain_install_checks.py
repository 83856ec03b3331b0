"""What the plain-install run (scripts/plain_install.py) stands on: the kafkasource that Spark's driver and its
Python workers import is the installed wheel, native extension included, and neither numpy nor pandas is there to
hide an import that the package does not declare. Only that run collects this file (it names it): in the main
suite's environment pandas is installed and the package is this checkout."""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def what_this_python_imports(_rows=None) -> list[tuple[str, str | None]]:
    """Where kafkasource, its native extension and pyspark come from, with the PYTHONPATH Spark gave, and whether
    numpy, pandas and pyarrow can be found."""
    import pyspark

    import kafkasource
    from kafkasource import _native

    found = [("kafkasource", kafkasource.__file__), ("native", _native.__file__), ("pyspark", pyspark.__file__),
             ("PYTHONPATH", os.environ.get("PYTHONPATH", ""))]
    return found + [(name, getattr(importlib.util.find_spec(name), "origin", None))
                    for name in ("numpy", "pandas", "pyarrow")]


def test_spark_and_its_python_workers_import_the_installed_wheel_and_pyspark_without_numpy_or_pandas(spark):
    site_packages = Path(sysconfig.get_paths()["purelib"])
    driver = dict(what_this_python_imports())
    worker = dict(spark.sparkContext.parallelize([0], 1).mapPartitions(what_this_python_imports).collect())

    for seen in (driver, worker):
        assert Path(seen["kafkasource"]).is_relative_to(site_packages), seen
        assert Path(seen["native"]).is_relative_to(site_packages / "kafkasource"), seen
        assert not Path(seen["kafkasource"]).resolve().is_relative_to(REPO / "kafkasource"), seen
        # the search finds what is there (pyarrow), so its None for numpy and pandas means they are absent
        assert Path(seen["pyarrow"]).is_relative_to(site_packages), seen
        assert (seen["numpy"], seen["pandas"]) == (None, None), seen
    # the wheel's kafkasource_pyspark_zip.pth: the worker imports the installed pyspark, not the zip Spark names first
    assert str(site_packages / "pyspark" / "python" / "lib" / "pyspark.zip") in worker["PYTHONPATH"], worker
    assert worker["pyspark"] == str(site_packages / "pyspark" / "__init__.py"), worker
