"""Build what users ship to a cluster, into dist/:

    python3 -m scripts.package

- kafkasource-<version>-<tags>.whl: `pip install` it on every node (it pulls confluent-kafka and
  pyarrow), or into a virtualenv packed for `spark.archives`. Built where cargo is on PATH, it holds the
  native read path, so it is tagged for this platform (cp311-abi3, linux_x86_64: scripts/wheels.py builds
  the wheels for other machines);
  without cargo (or with KAFKASOURCE_NATIVE=0) it is pure Python (py3-none-any);
- kafkasource-<version>.zip: for `spark-submit --py-files`, when the nodes already have
  confluent-kafka and pyarrow; the jobs call kafkasource.register(spark), since Spark's scan for
  data sources does not look inside zips. Python cannot load compiled extensions from a zip, so this
  way reads with the pure-Python path.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIST = REPO / "dist"


def version() -> str:
    out = subprocess.run([sys.executable, "setup.py", "--version"], cwd=REPO, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


def build_zip(target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((REPO / "kafkasource").rglob("*.py")) + [REPO / "pyspark_kafkasource.py"]:
            archive.write(path, path.relative_to(REPO))
    return target


def main() -> int:
    DIST.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(DIST), "."],
                   cwd=REPO, check=True)
    wheel = max(DIST.glob(f"kafkasource-{version()}-*.whl"), key=lambda path: path.stat().st_mtime)
    archive = build_zip(DIST / f"kafkasource-{version()}.zip")
    print(f"{wheel.relative_to(REPO)}  (pip install on every node, or in a packed virtualenv for spark.archives)")
    print(f"{archive.relative_to(REPO)}  (spark-submit --py-files; nodes need confluent-kafka and pyarrow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
