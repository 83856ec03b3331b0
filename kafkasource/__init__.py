"""kafkasource: a PySpark Structured Streaming source for Apache Kafka that honours your consumer group."""

from kafkasource.errors import (AccessError, BrokerUnavailableError, CommitError, DataLossError, KafkaSourceError,
                                NoCommittedOffsetError, OptionError)
from kafkasource.source import KafkaDataSource

__all__ = ["KafkaDataSource", "register", "KafkaSourceError", "OptionError", "BrokerUnavailableError",
           "NoCommittedOffsetError", "DataLossError", "CommitError", "AccessError"]


def register(spark) -> None:
    """Register format("kafkasource") on this session explicitly (it also registers itself on install)."""
    spark.dataSource.register(KafkaDataSource)
