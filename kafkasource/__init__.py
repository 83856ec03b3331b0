"""kafkasource: a PySpark Structured Streaming source for Apache Kafka that honours your consumer group."""

from kafkasource._version import __version__
from kafkasource.pyspark_check import require_pyspark

require_pyspark()  # before any module below imports pyspark: a clear message when there is none, or an old one

from kafkasource.errors import (AccessError, BrokerUnavailableError, CommitError, DataLossError, KafkaSourceError,
                                NoCommittedOffsetError, OptionError)
from kafkasource.source import KafkaDataSource

__all__ = ["__version__", "KafkaDataSource", "register", "KafkaSourceError", "OptionError", "BrokerUnavailableError",
           "NoCommittedOffsetError", "DataLossError", "CommitError", "AccessError"]


def register(spark) -> None:
    """Register format("kafkasource") on this session explicitly (it also registers itself on install)."""
    spark.dataSource.register(KafkaDataSource)
