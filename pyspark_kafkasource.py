"""Spark registers format("kafkasource") from this module by itself: a top-level pyspark_* module
exposing DefaultSource, which its data source scan finds on the workers' sys.path."""

from kafkasource.source import KafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
