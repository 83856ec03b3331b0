#!/usr/bin/env bash
# Read benchmark: kafkasource vs Spark's built-in format("kafka") vs a bare consumer, on a local broker.
# Installs the package with its bench extra (matplotlib for the chart), resolves the built-in connector's
# jars with Maven into .cache/, then runs bench/run.py (arguments pass through; see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[spark,bench]"
python3 -m dev.broker fetch > /dev/null
exec python3 -m bench.run "$@"
