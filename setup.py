import os
import shutil

from setuptools import find_packages, setup


def native_extensions() -> list:
    """The native read path (native/, Rust): built when cargo is on PATH, else the package stays pure Python.
    KAFKASOURCE_NATIVE=0 skips it. A failed build is not fatal (optional): the pure-Python path reads then."""
    if os.environ.get("KAFKASOURCE_NATIVE", "1") == "0" or shutil.which("cargo") is None:
        return []
    try:
        from setuptools_rust import Binding, RustExtension
    except ImportError:  # `python3 setup.py --version` outside pip's build environment (pyproject.toml has it)
        return []

    return [RustExtension("kafkasource._native", path="native/Cargo.toml", binding=Binding.PyO3,
                          py_limited_api=True, optional=True, debug=False)]


setup(
    name="kafkasource",
    version="0.1.0",
    description="A PySpark Structured Streaming source for Apache Kafka that reads from and commits to your consumer group",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_packages(include=["kafkasource", "kafkasource.*"]),
    # An explicit root makes `pip install -e .` put this folder on sys.path (a .pth line) instead of an
    # import hook: Spark finds format("kafkasource") by listing the pyspark_* modules on the Python
    # workers' sys.path, and that listing cannot see modules served by an import hook.
    package_dir={"": "."},
    # a top-level pyspark_* module exposing DefaultSource: Spark registers format("kafkasource") by itself
    py_modules=["pyspark_kafkasource"],
    rust_extensions=native_extensions(),
    zip_safe=False,
    # for runtimes that start a wheel's function rather than a script (Databricks Python wheel tasks,
    # Airflow, cron); under spark-submit the scripts in jobs/ are the entry points
    entry_points={"console_scripts": [
        "kafkasource-ingest=kafkasource.jobs.ingest:main",
        "kafkasource-replay=kafkasource.jobs.replay:main",
        "kafkasource-lag=kafkasource.jobs.lag:main",
    ]},
    install_requires=[
        "pyspark>=4.2",
        "pyarrow>=15",
        "confluent-kafka>=2.6",
    ],
    extras_require={
        # pyspark's Connect client packages serve the Connect tests only; the source never needs them
        # pex packs the environment the standalone-cluster test ships to executors (dev/packed_env.py)
        "test": ["pytest>=8", "hypothesis>=6", "pandas>=2,<3", "pyspark[connect]>=4.2", "pex>=2.105"],
        "bench": ["matplotlib>=3"],  # the benchmark's chart
    },
)
