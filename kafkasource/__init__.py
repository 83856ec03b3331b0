"""kafkasource: a PySpark Structured Streaming source for Apache Kafka that honours your consumer group."""

from kafkasource._version import __version__
from kafkasource.pyspark_check import require_pyspark

require_pyspark()  # before any module below imports pyspark: a clear message when there is none, or an old one

from kafkasource.errors import (AccessError, BrokerUnavailableError, CommitError, DataLossError, KafkaSourceError,
                                NoCommittedOffsetError, OptionError)
from kafkasource.source import KafkaDataSource

__all__ = ["__version__", "KafkaDataSource", "register", "KafkaSourceError", "OptionError", "BrokerUnavailableError",
           "NoCommittedOffsetError", "DataLossError", "CommitError", "AccessError"]


def register(spark, environment: dict[str, str] | None = None) -> None:
    """Register format("kafkasource") on this session explicitly (it also registers itself on install).

    On classic Spark this also tells the source's readers the application's id and name (for the metadata of
    their commits) and any `environment` given, through the session's Python environment, which Spark hands to
    the process that runs a registered source's reader. Queries started after the call see it."""
    from kafkasource.committer import committer_environment

    try:
        context = spark.sparkContext  # a Spark Connect session has none: the server registers with its own
    except Exception:
        context = None
    if context is not None:
        context.environment.update(committer_environment(context.applicationId, context.appName))
        context.environment.update(environment or {})
    spark.dataSource.register(KafkaDataSource)
