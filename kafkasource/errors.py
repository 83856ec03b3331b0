"""One exception family; every message says what to change."""


class KafkaSourceError(Exception):
    """Base class of every error kafkasource raises on purpose."""


class OptionError(KafkaSourceError, ValueError):
    """A source option is missing, malformed or not supported."""


class BrokerUnavailableError(KafkaSourceError):
    """The brokers in kafka.bootstrap.servers did not answer in time."""


class NoCommittedOffsetError(KafkaSourceError):
    """startingOffsets=committed, kafka.auto.offset.reset=none, and some partitions have no committed offset."""


class DataLossError(KafkaSourceError):
    """Records the query should read are gone (retention, deleted records, a vanished topic or partition)."""


class CommitError(KafkaSourceError):
    """The consumer group's offsets could not be committed."""


class DecodeError(KafkaSourceError):
    """A key or value in a schema registry's wire format could not be decoded (onDecodeError=fail)."""


class AccessError(KafkaSourceError):
    """The brokers refused this client: authentication failed, the TLS handshake failed, or an ACL denies it."""


class SignInError(AccessError):
    """The token provider oauthProvider names could not make a token: no credentials, a refused role, an
    unreachable endpoint, or an answer that is no token."""


class ColumnError(KafkaSourceError, ValueError):
    """The DataFrame's columns cannot be written to Kafka: a missing value or topic, a column of the wrong type,
    or a row whose topic, partition or header cannot be."""


class EncodeError(KafkaSourceError):
    """A row's key or value does not fit its writer schema (valueFormat/keyFormat on the sink, no deadLetterTopic)."""


class DeliveryError(KafkaSourceError):
    """Records could not be written to Kafka; the Spark task (and so the batch or job) fails with this message."""

    code: int | None = None  # librdkafka's error code, where one Kafka error caused it


class ContinuousTriggerError(KafkaSourceError):
    """The sink was started with Trigger.Continuous, under which it is never handed a row."""


class ExactlyOnceError(DeliveryError):
    """An exactly-once sink found that writing (or skipping) this task could lose or duplicate records: the
    checkpoint is behind what the sink already wrote, a replayed batch holds other records than the ones written,
    or another live sink writes under the same transactionalIdPrefix. Nothing of the task was committed."""


class TableFormatJarError(KafkaSourceError):
    """The ingest job's Delta Lake or Iceberg jar was built for another Spark than the one it runs on: the message
    names the jar, the Spark and the jar that fits."""
