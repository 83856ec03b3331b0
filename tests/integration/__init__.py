"""Tests against the session's real parts: one local Kafka broker, one schema registry and one local Spark session
(tests/conftest.py starts each once, for the first test that needs it)."""
