"""spark-submit entry point of the replay job: see kafkasource/jobs/replay.py, and conf/replay.example.toml."""

import sys

from kafkasource.jobs.replay import main

sys.exit(main())
