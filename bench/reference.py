"""Spark's built-in Kafka connector, resolved by Maven from bench/pom.xml into the git-ignored cache."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "bench" / "pom.xml"
JARS_DIR = ROOT / ".cache" / "reference-jars"


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
            raise RuntimeError("Maven could not fetch Spark's Kafka connector:\n" + (result.stdout + result.stderr)[-3000:])
        marker.touch()
    return sorted(JARS_DIR.glob("*.jar"))
