"""spark-submit entry point of the route job: see kafkasource/jobs/route.py, and conf/route.example.toml."""

import sys

from kafkasource.jobs.route import main

sys.exit(main())
