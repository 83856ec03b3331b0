#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs the package with its test extras,
# fetches the Kafka broker jars and builds the schema registry (both from Maven Central, cached in
# .cache/), builds Prometheus for the scrape test (go install, once: the binary is kept in .cache/, Go's
# caches where Go keeps them), then runs pytest. The tests start their own Kafka broker and registry on
# 127.0.0.1; nothing needs to run beforehand. Where cargo is on PATH, pip builds the native extension; with CI=true
# (or KAFKASOURCE_REQUIRE_NATIVE=1) pytest refuses to start without it rather than leave the native read tests out
# (tests/native_coverage.py).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[test]"
python3 -m dev.broker fetch > /dev/null
python3 -m dev.prometheus build > /dev/null
python3 -m dev.registry build > /dev/null
exec python3 -m pytest "$@"
