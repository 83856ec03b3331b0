#!/usr/bin/env bash
# The README's first command: the main job end to end on a fresh machine. Installs the package,
# fetches the Kafka broker jars (Maven Central, cached in .cache/), then runs scripts/quickstart.py:
# a local broker, sample orders, `spark-submit jobs/ingest.py` twice, what it wrote and what the group committed.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[spark]"
python3 -m dev.broker fetch > /dev/null
exec python3 -m scripts.quickstart "$@"
