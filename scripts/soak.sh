#!/usr/bin/env bash
# The soak test, outside CI (30 minutes by default; --minutes N): the ingest job under spark-submit, SIGKILLed
# and restarted from its checkpoint and through broker restarts at random moments while records keep arriving;
# with --cluster, on a 3-node cluster with an exactly-once route job beside it, random nodes killed or stopped;
# then exactly once in the sink, commits never ahead of it, and the job's Python memory. Installs the package,
# fetches the Kafka broker jars (Maven Central, cached in .cache/), then runs bench/soak.py (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -c constraints.txt -e ".[spark]"
python3 -m dev.broker fetch > /dev/null
exec python3 -m bench.soak "$@"
