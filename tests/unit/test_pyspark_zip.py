"""kafkasource_pyspark_zip: Spark's Python processes import the installed pyspark, compiled, rather than compile
its pyspark.zip again, and only where the zip is that installed package's own. Pure path logic on folders of our
own, then the installed .pth in a real Python started as Spark starts its workers (no Spark: a second's start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark

from kafkasource_pyspark_zip import installed_pyspark_zip

INSTALLED_PYSPARK = Path(pyspark.__file__).resolve().parent


def pyspark_package(root: Path, with_zip: bool = True) -> Path:
    """A folder holding a pyspark package as pip lays it out, its zip inside; returns the zip's path."""
    (root / "pyspark" / "python" / "lib").mkdir(parents=True)
    (root / "pyspark" / "__init__.py").write_text("")
    zip_path = root / "pyspark" / "python" / "lib" / "pyspark.zip"
    if with_zip:
        zip_path.write_bytes(b"")
    return zip_path


def test_the_zip_inside_the_pyspark_that_the_path_finds_without_it_is_the_one_taken_off(tmp_path):
    site = tmp_path / "site-packages"
    zip_path = pyspark_package(site)
    py4j = str(tmp_path / "py4j-0.10.9.9-src.zip")

    assert installed_pyspark_zip([str(zip_path), py4j, str(tmp_path / "elsewhere"), str(site)]) == str(zip_path)


def test_a_spark_distributions_zip_stays_when_no_installed_pyspark_is_on_the_path(tmp_path):
    spark_home = tmp_path / "spark"
    (spark_home / "python" / "lib").mkdir(parents=True)
    zip_path = spark_home / "python" / "lib" / "pyspark.zip"
    zip_path.write_bytes(b"")

    assert installed_pyspark_zip([str(zip_path), str(tmp_path / "site-packages")]) is None


def test_the_zip_of_one_pyspark_stays_when_the_path_would_find_another(tmp_path):
    ours = pyspark_package(tmp_path / "ours")
    pyspark_package(tmp_path / "first", with_zip=False)
    # without the zip, `import pyspark` would find first/pyspark, not the package the zip belongs to
    path = [str(ours), str(tmp_path / "first"), str(tmp_path / "ours")]

    assert installed_pyspark_zip(path) is None
    assert installed_pyspark_zip([str(ours), str(tmp_path / "ours"), str(tmp_path / "first")]) == str(ours)


def where_a_spark_worker_imports_pyspark_from(**env: str) -> str:
    """`pyspark.__file__` in a Python started with the PYTHONPATH Spark gives its workers for this pyspark."""
    lib = INSTALLED_PYSPARK / "python" / "lib"
    py4j, = lib.glob("py4j-*-src.zip")
    spark_path = os.pathsep.join([str(lib / "pyspark.zip"), str(py4j)])
    environment = {**{k: v for k, v in os.environ.items() if k != "KAFKASOURCE_KEEP_PYSPARK_ZIP"},
                   "PYTHONPATH": spark_path, **env}
    return subprocess.run([sys.executable, "-c", "import pyspark; print(pyspark.__file__)"], env=environment,
                          capture_output=True, text=True, check=True, cwd="/").stdout.strip()


def test_a_python_started_with_sparks_path_imports_the_installed_pyspark_unless_told_to_keep_the_zip():
    # the installed .pth (scripts/test.sh puts it beside the editable install; the wheel carries it) acts ...
    assert where_a_spark_worker_imports_pyspark_from() == str(INSTALLED_PYSPARK / "__init__.py")
    # ... and without it the same Python imports from the zip Spark names first: the search above can see a zip
    assert where_a_spark_worker_imports_pyspark_from(KAFKASOURCE_KEEP_PYSPARK_ZIP="1") == str(
        INSTALLED_PYSPARK / "python" / "lib" / "pyspark.zip" / "pyspark" / "__init__.py")
