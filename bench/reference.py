"""Spark's built-in Kafka connector, resolved by Maven from bench/pom.xml into the git-ignored cache, and
Spark's own Avro functions (spark-avro) for the Avro benchmark."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from dev import maven

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "bench" / "pom.xml"
JARS_DIR = ROOT / ".cache" / "reference-jars"
AVRO_JARS_DIR = ROOT / ".cache" / "avro-bench-jars"
# the Kafka connector's version (bench/pom.xml): Maven Central has no Spark 4.3 artifacts; Avro itself
# (org.apache.avro) is already among pyspark's jars, so spark-avro alone is enough
SPARK_AVRO = "org.apache.spark:spark-avro_2.13:4.2.0"


def reference_jars() -> list[Path]:
    """The connector's jars (fetched once): spark-sql-kafka-0-10, its token provider, kafka-clients, commons-pool2."""
    marker = JARS_DIR / ".complete"
    if not marker.exists():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("`mvn` is not on PATH: Apache Maven resolves Spark's Kafka connector for the benchmark")
        JARS_DIR.mkdir(parents=True, exist_ok=True)
        result = subprocess.run([mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                                 f"-DoutputDirectory={JARS_DIR}", "-DexcludeTransitive=true"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError("Maven could not fetch Spark's Kafka connector:\n"
                               + (result.stdout + result.stderr)[-3000:])
        marker.touch()
    return sorted(JARS_DIR.glob("*.jar"))


def spark_avro_jar() -> Path:
    """spark-avro (from_avro, to_avro) of the same Spark version as the Kafka connector, fetched once."""
    (jar,) = maven.fetch([SPARK_AVRO], AVRO_JARS_DIR, "spark-avro for the Avro benchmark")
    return jar
