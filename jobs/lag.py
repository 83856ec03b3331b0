"""spark-submit entry point of the lag job: see kafkasource/jobs/lag.py, and conf/lag.example.toml."""

import sys

from kafkasource.jobs.lag import main

sys.exit(main())
