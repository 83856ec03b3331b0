#!/usr/bin/env bash
# The README's first command: the main job end to end on a fresh machine. Installs the package,
# fetches the Kafka broker jars (Maven Central, cached in .cache/), then runs scripts/demo.py:
# a local broker, sample data, a kafkasource query that drains it, what it read and what the group committed.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e .
python3 -m dev.broker fetch > /dev/null
exec python3 -m scripts.demo "$@"
