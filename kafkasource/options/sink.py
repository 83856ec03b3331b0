"""The sink's options: one frozen view of what a write was given, every bad value refused before any data moves.

The names follow Spark's built-in Kafka sink (kafka.bootstrap.servers, topic, kafka.*); deliveryGuarantee and
transactionalIdPrefix are named after Flink's KafkaSink. The kafka.* settings go through the reader's own handling
(cluster/settings.py: refused Java-only settings, librdkafka's check of names and values, secrets masked), then
librdkafka checks them once more as a producer would take them, since some settings only conflict in a producer
(enable.idempotence with acks, a transactional.id without idempotence).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from kafkasource.cluster import settings as kafka_settings
from kafkasource.cluster.known_settings import PRODUCER_ONLY
from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import OptionError
from kafkasource.formats.encoding import Encoding
from kafkasource.options.formats import SINK_FORMAT_OPTIONS, parse_encoding
from kafkasource.options.names import check_names
from kafkasource.options.values import (
    PathChoice,
    check_topic_name,
    option_text,
    read_bootstrap_servers,
    read_choice,
    read_path_choice,
)
from kafkasource.runtime import native_extension
from kafkasource.runtime.secrets import masked

DeliveryGuarantee = Literal["at-least-once", "exactly-once", "none"]
SINK_OPTIONS = ("topic", "deliveryGuarantee", "transactionalIdPrefix", "markerTopic", "writePath", sign_in.OPTION)
# options Spark itself puts into a stream writer's map (the query's checkpointLocation and, where the query has one,
# its queryName): accepted, as format("kafka") accepts them; they mean nothing to the sink
SPARK_WRITE_OPTIONS = ("checkpointLocation", "queryName")
# kafka.* settings the sink sets itself or that only mean something to Spark's Java producer, with what to do
REFUSED_PRODUCER_SETTINGS = {
    "key.serializer": "keys are written as the bytes of the key column (a string as its UTF-8 bytes); serialize "
    "them in Spark (CAST, to_json, to_avro) into a string or binary key column",
    "value.serializer": "values are written as the bytes of the value column (a string as its UTF-8 bytes); "
    "serialize them in Spark (CAST, to_json, to_avro) into a string or binary value column",
    "transactional.id": "each Spark task's transactional.id is derived from the option transactionalIdPrefix (with "
    "deliveryGuarantee=exactly-once); set that instead",
}
# librdkafka's defaults where Spark's built-in sink (the Java producer) behaves otherwise: keyed records land in the
# partition the Java producer picks (murmur2 of the key), so both sinks place a key alike; at-least-once writes are
# idempotent, as the Java producer's are by default since Kafka 3.0 (its own retries neither duplicate nor reorder).
# Batching, compression and requests in flight stay librdkafka's: linger.ms 5 (Kafka's Java producer took the same
# default in Kafka 4.0), batch.num.messages 10,000 and batch.size 1,000,000, compression.type none (the Java
# producer's too), max.in.flight 5 with idempotence. A task's write with linger.ms 20 or 100, 100,000 records or
# 256 KB per batch, lz4 or zstd, or 1 or 2 requests in flight was not faster in a way that held across 100 B and
# 1 KB values and both guarantees, and compression costs the producer CPU to save bytes only on values that
# compress (bench/PRODUCER.md has the figures). Users choose otherwise with kafka.*.
PRODUCER_DEFAULTS: dict[str, object] = {"partitioner": "murmur2_random"}
AT_LEAST_ONCE_DEFAULTS: dict[str, object] = {"enable.idempotence": True}
# A transactional producer's batch marker (send_offsets_to_transaction) goes to the marker group's coordinator, which
# librdkafka caches. When that broker shuts down cleanly it leaves the cluster's metadata, and librdkafka (2.10 and
# later, including the 2.12.1 and 2.16.0 both write paths bundle) ends the broker's thread but keeps it cached as the
# coordinator: the marker then waits for some other broker connection of the producer to go up or down before it
# looks the coordinator up again, and with nothing else to send none does, so the call never returns (librdkafka
# issues 5511 and 5456, both open). Closing idle connections is such a change: with 5 s (librdkafka shortens it by
# up to 2 s of jitter) a marker sent while its coordinator was gone returned after 4 s instead of hanging for good,
# on a 3-node cluster and both write paths. The cost: a stream whose batches come more than 5 s apart reconnects to
# its brokers at each batch.
EXACTLY_ONCE_DEFAULTS: dict[str, object] = {"connections.max.idle.ms": 5000}
GUARANTEE_DEFAULTS = {"at-least-once": AT_LEAST_ONCE_DEFAULTS, "exactly-once": EXACTLY_ONCE_DEFAULTS}
# librdkafka's defaults: message.timeout.ms (alias delivery.timeout.ms) and transaction.timeout.ms; a transactional
# producer without message.timeout.ms takes transaction.timeout.ms for it
DEFAULT_DELIVERY_TIMEOUT_MS = 300_000
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class SinkOptions:
    """A write's options, small and picklable: Spark ships them to every task."""

    bootstrap_servers: str
    topic: str | None  # the topic option: when set, every record goes there whatever a topic column says
    guarantee: DeliveryGuarantee
    transactional_id_prefix: str | None  # exactly-once only
    marker_topic: str | None  # exactly-once: partition 0 of it holds each task's batch marker
    # librdkafka settings (prefix stripped), secrets included: never print this field
    kafka_config: dict[str, str] = field(repr=False)
    # writePath: native hands Arrow batches to the compiled extension's producer, python makes a confluent-kafka
    # produce() call per record, auto is native where the extension is built
    write_path: PathChoice = "auto"
    token_provider: sign_in.TokenProvider | None = None  # oauthProvider: what signs the producers in
    # valueFormat/keyFormat other than binary: the writer schemas and registry settings (None: both binary, or the
    # options parsed without the DataFrame's schema)
    encoding: Encoding | None = field(default=None, repr=False)

    def native(self) -> bool:
        """Whether the tasks write with the native producer: writePath=native (refused on the driver where the
        extension does not load), or auto where it loads."""
        return native_extension.runs_native(self.write_path, "writePath", "writing")

    def producer_config(self, **overrides: object) -> dict[str, object]:
        """librdkafka configuration of the sink's producers: its defaults, the user's kafka.*, then `overrides`."""
        defaults = {**PRODUCER_DEFAULTS, **GUARANTEE_DEFAULTS.get(self.guarantee, {})}
        return {
            **defaults,
            **self.kafka_config,
            "bootstrap.servers": self.bootstrap_servers,
            **sign_in.callback_setting(self.token_provider),
            **overrides,
        }

    def client_config(self, **overrides: object) -> dict[str, object]:
        """The user's kafka.* settings for a client that is not a producer (the marker's consumer), plus
        `overrides`: producer-only settings left out, which librdkafka would log a warning about."""
        shared = {k: v for k, v in self.kafka_config.items() if k not in PRODUCER_ONLY}
        signed = sign_in.callback_setting(self.token_provider)
        return {**shared, "bootstrap.servers": self.bootstrap_servers, **signed, **overrides}

    def delivery_timeout_ms(self) -> int:
        """How long librdkafka tries to deliver a record before it reports the record failed."""
        for name in ("delivery.timeout.ms", "message.timeout.ms"):
            if name in self.kafka_config:
                return int(self.kafka_config[name])
        if self.guarantee == "exactly-once":
            return self.transaction_timeout_ms()
        return DEFAULT_DELIVERY_TIMEOUT_MS

    def transaction_timeout_ms(self) -> int:
        return int(self.kafka_config.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))


def parse_sink_options(raw_options: Mapping[str, str], streaming: bool, schema=None) -> SinkOptions:
    """Validate a write's option map; raise OptionError naming the first bad option and what to change.

    With the DataFrame's `schema` (a pyspark StructType; a writer has it) the registry formats' options are read too:
    each formatted column's writer schema is fetched or registered, and the column checked against it (ColumnError).
    Without it (a job checking its options before Spark starts) they are left for the writer.
    """
    options = {str(k).lower(): v for k, v in raw_options.items()}
    _check_names(options)
    bootstrap = read_bootstrap_servers(options)
    topic = option_text(options, "topic")
    if topic is not None:
        check_topic_name("topic", topic)
    guarantee = read_choice(options, "deliveryGuarantee", get_args(DeliveryGuarantee), "at-least-once")
    prefix = _transactional_id_prefix(options, guarantee)
    write_path = read_path_choice(options, "writePath")
    marker_topic = _marker_topic(options, guarantee, topic)
    for name in options:
        setting = name[len("kafka.") :]
        if name.startswith("kafka.") and setting in REFUSED_PRODUCER_SETTINGS:
            raise OptionError(
                f"option kafka.{setting} is not supported by the sink: {REFUSED_PRODUCER_SETTINGS[setting]}"
            )
    parsed = SinkOptions(
        bootstrap_servers=bootstrap,
        topic=topic,
        guarantee=guarantee,
        transactional_id_prefix=prefix,
        marker_topic=marker_topic,
        kafka_config=kafka_settings.kafka_config(options),
        write_path=write_path,
        token_provider=sign_in.read_token_provider(options, bootstrap),
    )
    _check_producer_accepts(parsed)
    if schema is None:
        return parsed
    # last: the only check that asks a server (the registry, for the writer schemas)
    return replace(parsed, encoding=parse_encoding(options, schema, topic))


def _check_names(options: Mapping[str, str]) -> None:
    """Refuse option names the sink does not know, suggesting the closest: a typo never falls back to a default."""
    listing = (
        f"its options are {', '.join(SINK_OPTIONS)}, kafka.<setting> for librdkafka's producer and "
        "oauthProvider.<argument> for the token provider"
    )
    spark_added = {name.lower() for name in SPARK_WRITE_OPTIONS}
    check_names(
        options, SINK_OPTIONS + SINK_FORMAT_OPTIONS, listing, accepted=spark_added, whose=" for the kafkasource sink"
    )


def _transactional_id_prefix(options: Mapping[str, str], guarantee: DeliveryGuarantee) -> str | None:
    prefix = option_text(options, "transactionalIdPrefix")
    if guarantee == "exactly-once" and prefix is None:
        raise OptionError(
            "deliveryGuarantee=exactly-once needs the option transactionalIdPrefix: each Spark task "
            "writes in a Kafka transaction whose transactional.id is derived from it (the prefix, a dash "
            "and the task's partition number), so a retried task fences its older attempt; give every "
            "sink its own prefix, since two sinks sharing one would fence each other"
        )
    if guarantee != "exactly-once" and prefix is not None:
        raise OptionError(
            f"option transactionalIdPrefix only applies to deliveryGuarantee=exactly-once, but "
            f"deliveryGuarantee is {guarantee}; set deliveryGuarantee=exactly-once or remove the prefix"
        )
    if prefix is not None and "\x00" in prefix:
        raise OptionError("option transactionalIdPrefix holds a NUL character (\\x00); remove it")
    return prefix


def _marker_topic(options: Mapping[str, str], guarantee: DeliveryGuarantee, topic: str | None) -> str | None:
    """Where exactly-once writes keep their batch markers: partition 0 of markerTopic, else of topic."""
    given = option_text(options, "markerTopic")
    if given is not None and guarantee != "exactly-once":
        raise OptionError(
            f"option markerTopic only applies to deliveryGuarantee=exactly-once, but "
            f"deliveryGuarantee is {guarantee}; remove it"
        )
    if given is not None:
        check_topic_name("markerTopic", given)
        return given
    if guarantee == "exactly-once" and topic is None:
        raise OptionError(
            "deliveryGuarantee=exactly-once needs a topic for its batch markers (committed offsets of the sink's "
            "groups, no records): set the topic option, or markerTopic to an existing topic when a topic column "
            "chooses where records go"
        )
    return topic if guarantee == "exactly-once" else None


def _check_producer_accepts(options: SinkOptions) -> None:
    """librdkafka's producer checks the settings together: a conflict only a producer has becomes an error that
    names the sink's options, with secret values masked."""
    from confluent_kafka import KafkaException, Producer

    overrides: dict[str, object] = {"log_level": 0}
    if options.guarantee == "exactly-once":
        overrides["transactional.id"] = f"{options.transactional_id_prefix}-0"
    # without the token provider: a producer that never connects needs no token
    config = {k: v for k, v in options.producer_config(**overrides).items() if k != "oauth_cb"}
    try:
        # never produces, and a transactional producer talks to no broker before init_transactions()
        Producer(config).close()
    except (KafkaException, ValueError, TypeError) as exc:
        message = str(exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else exc)
        raise OptionError(
            f"librdkafka refused the sink's producer settings (deliveryGuarantee={options.guarantee}): "
            f"{kafka_settings.one_line(masked(message, config))}. Change the kafka.* option it names"
        ) from None
