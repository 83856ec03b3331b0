#!/usr/bin/env bash
# The README's first command: the main job end to end on a fresh machine. Installs the package,
# fetches the Kafka broker jars (Maven Central, cached in .cache/), then runs scripts/quickstart.py:
# a local broker, sample orders, `spark-submit jobs/ingest.py` twice, what it wrote and what the group committed.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[spark]"
# the .pth a wheel installs, which an editable install cannot carry (scripts/test.sh says why it is copied)
cp kafkasource_pyspark_zip.pth "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
python3 -m dev.broker fetch > /dev/null
exec python3 -m scripts.quickstart "$@"
