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
