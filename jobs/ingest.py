"""spark-submit entry point of the ingest job: see kafkasource/jobs/ingest.py, and conf/ingest.example.toml."""

import sys

from kafkasource.jobs.ingest import main

sys.exit(main())
