"""Tests of the package's logic that start nothing: no broker, no JVM, no Spark session. The inner loop:
`python3 -m pytest tests/unit` runs in seconds."""
