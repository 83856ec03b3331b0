"""Spark registers format("kafkasource") from this module by itself: a top-level pyspark_* module
exposing DefaultSource (DESIGN.md fact 6)."""

from kafkasource.source import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
