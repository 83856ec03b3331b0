import os
import re
import shutil

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

PYSPARK_ZIP_PTH = "kafkasource_pyspark_zip.pth"


class BuildWithPysparkZipHook(build_py):
    """Puts kafkasource_pyspark_zip.pth at the wheel's root, so that it lands in site-packages, where Python runs it
    as it starts (kafkasource_pyspark_zip.py says why). An editable install cannot carry it: scripts/test.sh and
    scripts/quickstart.sh put it beside theirs."""

    def run(self) -> None:
        super().run()
        self.copy_file(PYSPARK_ZIP_PTH, os.path.join(self.build_lib, PYSPARK_ZIP_PTH))

    def get_outputs(self, include_bytecode: bool = True) -> list:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PYSPARK_ZIP_PTH)]


def version() -> str:
    """The one place the version is written: kafkasource/_version.py (read as text: importing the package here
    would need its dependencies installed)."""
    text = open(os.path.join("kafkasource", "_version.py"), encoding="utf-8").read()
    return re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE).group(1)


def native_extensions() -> list:
    """The native read path (native/, Rust): built when cargo is on PATH, else the package stays pure Python.
    KAFKASOURCE_NATIVE=0 skips it. A failed build is not fatal (optional): the pure-Python path reads then.
    KAFKASOURCE_NATIVE=portable is the build for wheels (scripts/wheels.py): OpenSSL and zlib linked in
    statically (the cargo feature `portable`), and a failed build fails the wheel."""
    mode = os.environ.get("KAFKASOURCE_NATIVE", "1")
    if mode == "0" or shutil.which("cargo") is None:
        return []
    try:
        from setuptools_rust import Binding, RustExtension
    except ImportError:  # `python3 setup.py --version` outside pip's build environment (pyproject.toml has it)
        return []

    portable = mode == "portable"
    return [RustExtension("kafkasource._native", path="native/Cargo.toml", binding=Binding.PyO3,
                          py_limited_api=True, optional=not portable, debug=False,
                          features=["portable"] if portable else [])]


REGISTRY = "confluent-kafka[schemaregistry,avro,json,protobuf]>=2.6"
# the docs site (mkdocs.yml, docs/) and its API page from the docstrings; scripts/test.sh builds it with --strict
DOCS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.29"]
LINT = ["ruff>=0.6", "mypy>=1.10"]  # scripts/test.sh: ruff's lint and format checks and mypy, on kafkasource/
# oauthProvider's token providers (kafkasource/cluster/sign_in/): AWS's MSK IAM signer, Entra ID, Google's ADC
CLOUDS = {"aws": ["aws-msk-iam-sasl-signer-python>=1.0.1"], "azure": ["azure-identity>=1.15"],
          "gcp": ["google-auth[requests]>=2.20"]}
METRICS = "prometheus-client>=0.20"  # start_http_server returns its server (to stop it) from 0.20 on

setup(
    name="kafkasource",
    version=version(),
    description=("A PySpark Structured Streaming source for Apache Kafka that reads from and commits to your "
                 "consumer group"),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    # the wheels carry these in their .dist-info: ours, and those of what the native extension links in
    license_files=["LICENSE", "NOTICE", "licenses/*", "licenses/*/*", "licenses/*/*/*"],
    python_requires=">=3.11",
    packages=find_packages(include=["kafkasource", "kafkasource.*"]),
    # An explicit root makes `pip install -e .` put this folder on sys.path (a .pth line) instead of an
    # import hook: Spark finds format("kafkasource") by listing the pyspark_* modules on the Python
    # workers' sys.path, and that listing cannot see modules served by an import hook.
    package_dir={"": "."},
    # a top-level pyspark_* module exposing DefaultSource: Spark registers format("kafkasource") by itself
    py_modules=["pyspark_kafkasource", "kafkasource_pyspark_zip"],
    cmdclass={"build_py": BuildWithPysparkZipHook},
    rust_extensions=native_extensions(),
    # py.typed: the package's type hints are checked (mypy, scripts/test.sh) and offered to users' checkers;
    # _native.pyi: the compiled extension's signatures, which the extension itself cannot tell a checker
    package_data={"kafkasource": ["py.typed", "_native.pyi"]},
    zip_safe=False,
    # the extension uses Python's stable ABI from 3.11 on (pyo3's abi3-py311): one wheel for 3.11 and later
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
    # for runtimes that start a wheel's function rather than a script (Databricks Python wheel tasks,
    # Airflow, cron); under spark-submit the scripts in jobs/ are the entry points
    entry_points={"console_scripts": [
        "kafkasource-ingest=kafkasource.jobs.ingest:main",
        "kafkasource-replay=kafkasource.jobs.replay:main",
        "kafkasource-lag=kafkasource.jobs.lag:main",
        "kafkasource-route=kafkasource.jobs.route:main",
    ]},
    # No pyspark here: pip would install one next to a Spark runtime's own (SPARK_HOME/python, managed
    # platforms). The package checks at import that one is there (kafkasource/runtime/pyspark_check.py);
    # `pip install "kafkasource[spark]"` brings one where there is none.
    install_requires=[
        "pyarrow>=15",
        "confluent-kafka>=2.6",
        # the digest of what an exactly-once task wrote (kafkasource/writing/digest.py): XXH3, 128 bits
        "xxhash>=3.0",
    ],
    extras_require={
        # Spark 4.0 brought the Python Data Source API; what 4.2 added is used where present (docs/support.md)
        "spark": ["pyspark>=4.0"],
        # valueFormat/keyFormat avro, protobuf or json-schema: confluent-kafka's schema-registry client and decoders
        "registry": [REGISTRY],
        # kafkasource.metrics.serve: the Prometheus exposition (text, OpenMetrics, HTTP, textfile) by prometheus_client
        "metrics": [METRICS],
        **CLOUDS,
        "docs": DOCS,
        # the tests' pyspark, with the Connect client packages that serve the Connect tests only; pex packs the
        # environment the standalone-cluster test ships to executors (dev/packed_env.py); pytest-rerunfailures
        # runs again a test that Spark's Python worker start failed (pytest.ini says why); pytest-xdist runs the
        # suite in two processes (scripts/test.sh says why); the docs' strict build;
        # pyspark's pipelines extra: spark-pipelines for the example Declarative Pipeline's test
        "test": ["pytest>=8", "pytest-rerunfailures>=14", "pytest-xdist>=3", "hypothesis>=6", "pandas>=2,<3",
                 "pyspark[connect,pipelines]>=4.0", REGISTRY, METRICS, *(r for cloud in CLOUDS.values() for r in cloud),
                 "pex>=2.105", *DOCS, *LINT],
        "bench": ["matplotlib>=3"],  # the benchmark's chart
    },
)
