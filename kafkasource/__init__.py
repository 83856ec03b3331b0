"""kafkasource: a PySpark Structured Streaming source for Apache Kafka that honours your consumer group."""

from kafkasource._version import __version__
from kafkasource.runtime.pyspark_check import require_pyspark

require_pyspark()  # before any module below imports pyspark: a clear message when there is none, or an old one

from kafkasource.errors import (
    AccessError,
    BrokerUnavailableError,
    ColumnError,
    CommitError,
    ContinuousTriggerError,
    DataLossError,
    DecodeError,
    DeliveryError,
    EncodeError,
    ExactlyOnceError,
    KafkaSourceError,
    NoCommittedOffsetError,
    OptionError,
    SignInError,
    TableFormatJarError,
)
from kafkasource.registration import register
from kafkasource.runtime import logs
from kafkasource.source import KafkaDataSource

logs.configure_from_environment()  # in the processes Spark starts: see logs.py

__all__ = [
    "__version__",
    "KafkaDataSource",
    "register",
    "KafkaSourceError",
    "OptionError",
    "BrokerUnavailableError",
    "NoCommittedOffsetError",
    "DataLossError",
    "CommitError",
    "AccessError",
    "SignInError",
    "DecodeError",
    "ColumnError",
    "EncodeError",
    "DeliveryError",
    "ExactlyOnceError",
    "ContinuousTriggerError",
    "TableFormatJarError",
]
