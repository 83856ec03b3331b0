"""What a failed write tells: one message per kind of Kafka error, naming the topic, the partition and what to
change, with no secret in it (librdkafka's own reason is masked with the sink's settings).

librdkafka reports an error in one of three places: produce() refuses a record at once (a record larger than
message.max.bytes), a delivery report says a record failed (the broker refused it, or it was not delivered within
the delivery timeout), or a transactional call fails (fenced by a newer producer, a commit that could not
complete). Each becomes a DeliveryError here.
"""

from __future__ import annotations

from confluent_kafka import KafkaError

from kafkasource.errors import DeliveryError
from kafkasource.options.sink import SinkOptions
from kafkasource.runtime.secrets import masked
from kafkasource.writing.replicas import Shortfall

TOO_LARGE = {KafkaError.MSG_SIZE_TOO_LARGE}
UNKNOWN_TOPIC = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC}
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
TIMED_OUT = {KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT}
# a coordinator that did not answer, or no longer coordinates: a new client looks it up again
COORDINATOR_UNANSWERED = TIMED_OUT | {
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError._TRANSPORT,
}
TOO_FEW_REPLICAS = {KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
# failures whose cause may be too few in-sync replicas: the caller asks the cluster (writing/replicas.py) and hands
# delivery_error what it found
ASK_REPLICAS = TIMED_OUT | TOO_FEW_REPLICAS


def where(topic: str | None, partition: int | None) -> str:
    """'topic orders partition 2', or 'topic orders' while the partitioner has not chosen a partition yet."""
    if topic is None:
        return "the sink's topics"
    return f"topic {topic}" + (f" partition {partition}" if partition is not None and partition >= 0 else "")


def delivery_error(
    error: KafkaError,
    options: SinkOptions,
    topic: str | None,
    partition: int | None,
    size: int | None = None,
    failed: int = 1,
    transactional_id: str | None = None,
    record: int | None = None,
    short: Shortfall | None = None,
) -> DeliveryError:
    """The one message for `error`, met writing to `topic` (and `partition`, when known); `record`, the failed
    record's row in the task (from 0), where the producer tells it (the native one does); `short`, the partition's
    shortfall of in-sync replicas, where the caller found one (which then is the cause, whatever the code)."""
    if short is not None or error.code() in TOO_FEW_REPLICAS:
        config = options.producer_config()
        more = f" ({failed:,} records failed)" if failed > 1 else ""
        found = _too_few_replicas(short, error.code(), options, topic, partition, masked(error.str(), config), more)
    else:
        found = _delivery_error(error, options, topic, partition, size, failed, transactional_id)
    if record is not None:
        found = DeliveryError(
            f"{found} (the record{' that failed first' if failed > 1 else ''}: record {record:,} of the task)"
        )
    found.code = error.code()
    return found


def transaction_timed_out(
    failure: Exception, options: SinkOptions, transactional_id: str, open_seconds: float
) -> DeliveryError | None:
    """The failure a transaction met after it was open longer than transaction.timeout.ms, when it reads as a fence:
    the broker aborted the transaction and bumped the producer's epoch, which the producer's next request takes for
    a newer producer. None for any other failure."""
    limit_ms = options.transaction_timeout_ms()
    code = getattr(failure, "code", None)
    if code not in FENCED or open_seconds * 1000 < limit_ms:
        return None
    timed_out = DeliveryError(
        f"the transaction of {transactional_id} writing to {where(options.topic, None)} was open "
        f"{open_seconds:,.1f} s, longer than kafka.transaction.timeout.ms ({limit_ms:,} ms), and the broker aborted it "
        "(the producer then reads its requests' refusal as being fenced). Nothing of this attempt was committed, and "
        "a retry takes as long. Raise kafka.transaction.timeout.ms above the time a task takes to write (brokers cap "
        "it at their transaction.max.timeout.ms, 15 minutes by default), or give each task fewer records "
        "(maxOffsetsPerTrigger, more partitions)"
    )
    timed_out.code = code
    return timed_out


def _delivery_error(
    error: KafkaError,
    options: SinkOptions,
    topic: str | None,
    partition: int | None,
    size: int | None,
    failed: int,
    transactional_id: str | None,
) -> DeliveryError:
    config = options.producer_config()
    reason = masked(error.str(), config)
    code = error.code()
    place = where(topic, partition)
    servers = options.bootstrap_servers
    more = f" ({failed:,} records failed)" if failed > 1 else ""
    user = options.kafka_config.get("sasl.username")
    as_user = f" as user {user}" if user else ""
    if code in TOO_LARGE:
        limit = options.kafka_config.get("message.max.bytes", "1000000")
        return DeliveryError(
            f"a record{f' of {size:,} bytes' if size is not None else ''} for {place} is too large: {reason}{more}. "
            f"The producer takes records up to kafka.message.max.bytes ({limit} bytes now) and the brokers up to the "
            f"topic's max.message.bytes: raise both (kafka.message.max.bytes for the sink; max.message.bytes with "
            f"kafka-configs on the topic), or write smaller records"
        )
    if code == KafkaError._UNKNOWN_PARTITION:
        return DeliveryError(
            f"{place} does not exist: {reason}{more}. Write a partition number the topic has in the partition "
            f"column, or null to let the partitioner choose"
        )
    if code in UNKNOWN_TOPIC:
        return DeliveryError(
            f"{where(topic, None)} does not exist on the brokers at {servers}: {reason}{more}. Create it first "
            f"(kafka-topics --create), or write to an existing topic (the topic option, or the topic column)"
        )
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return DeliveryError(
            f"the brokers at {servers} refused to let this client{as_user} write to {place} "
            f"(TOPIC_AUTHORIZATION_FAILED){more}. Grant the principal WRITE (and DESCRIBE) on topic {topic}, or use "
            f"credentials (kafka.sasl.username) that have them"
        )
    if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return DeliveryError(
            f"the brokers at {servers} refused this client{as_user} the transactional id {transactional_id} "
            f"(TRANSACTIONAL_ID_AUTHORIZATION_FAILED) while writing to {place}. Grant the principal WRITE and DESCRIBE "
            f"on transactional ids with the prefix {options.transactional_id_prefix} (a PREFIXED ACL)"
        )
    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return DeliveryError(
            f"the brokers at {servers} refused this client{as_user} the group of its batch marker "
            f"(GROUP_AUTHORIZATION_FAILED) while writing to {place}. Grant the principal READ and DESCRIBE on groups "
            f"with the prefix {options.transactional_id_prefix} (a PREFIXED ACL)"
        )
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
        return DeliveryError(
            f"the brokers at {servers} refused this client{as_user} an idempotent producer "
            f"(CLUSTER_AUTHORIZATION_FAILED) while writing to {place}: {reason}. Brokers since Kafka 3.0 allow one to "
            f"a principal that may WRITE to some topic: grant it WRITE (and DESCRIBE) on topic {topic}, or "
            f"IDEMPOTENT_WRITE on the cluster; under deliveryGuarantee at-least-once, "
            f"kafka.enable.idempotence=false also does without"
        )
    if code in FENCED:
        return DeliveryError(
            # the producer is fenced, not a partition: named by topic alone, whichever call met it
            f"the transactional producer {transactional_id} writing to {where(topic, None)} was fenced by a newer "
            f"producer with "
            f"the same transactional.id: {reason}. Either Spark started a newer attempt of this task (a retry or a "
            f"speculative copy), which carries on, or another sink uses transactionalIdPrefix "
            f"{options.transactional_id_prefix}. Nothing of this attempt was committed. If no other attempt runs, "
            f"give every query and job its own transactionalIdPrefix"
        )
    if code in TIMED_OUT and options.guarantee == "exactly-once":
        # a transactional producer's delivery timeout may not exceed its transaction timeout (librdkafka refuses
        # the producer otherwise): the transaction timeout is the one to raise
        return DeliveryError(
            f"records for {place} were not delivered within kafka.delivery.timeout.ms "
            f"({options.delivery_timeout_ms():,} ms): {reason}{more}. Check that the brokers at {servers} are up and "
            f"reachable from the executors, or raise kafka.transaction.timeout.ms "
            f"({options.transaction_timeout_ms():,} ms now) to wait longer: under deliveryGuarantee=exactly-once "
            "the delivery timeout is the transaction timeout unless set lower"
        )
    if code in TIMED_OUT:
        return DeliveryError(
            f"records for {place} were not delivered within kafka.delivery.timeout.ms "
            f"({options.delivery_timeout_ms():,} ms): {reason}{more}. Check that the brokers at {servers} are up and "
            f"reachable from the executors, or raise kafka.delivery.timeout.ms to wait longer"
        )
    return DeliveryError(
        f"Kafka refused records for {place} ({error.name()}): {reason}{more}. The brokers are {servers}"
    )


def _nodes(ids: tuple[int, ...]) -> str:
    if not ids:
        return "no node"
    names = [str(i) for i in ids]
    return f"node {names[0]}" if len(names) == 1 else f"nodes {', '.join(names[:-1])} and {names[-1]}"


def _too_few_replicas(
    short: Shortfall | None,
    code: int,
    options: SinkOptions,
    topic: str | None,
    partition: int | None,
    reason: str,
    more: str,
) -> DeliveryError:
    """Records refused for too few in-sync replicas: which partition, which replicas are in sync, what the topic's
    min.insync.replicas asks, and which brokers to bring back."""
    place = where(topic, short.partition if short is not None else partition)
    waited = (
        ""
        if code in TOO_FEW_REPLICAS
        else (f" until kafka.delivery.timeout.ms ({options.delivery_timeout_ms():,} ms) passed")
    )
    if short is None:
        state = f"fewer in-sync replicas than topic {topic}'s min.insync.replicas asks for"
        back = "Start the brokers that hold its other replicas"
    else:
        state = (
            f"{len(short.in_sync)} in-sync replica{'' if len(short.in_sync) == 1 else 's'} "
            f"({_nodes(short.in_sync)}) of {len(short.replicas)}, and topic {topic}'s min.insync.replicas asks for "
            f"{short.required}"
        )
        back = f"Start the brokers of {_nodes(short.missing)} (or wait until they caught up)"
    return DeliveryError(
        f"the brokers at {options.bootstrap_servers} refused records for {place} with NOT_ENOUGH_REPLICAS{waited}: "
        f"the partition has {state}, which every write with acks=all needs ({reason}){more}. {back}, then write "
        "again: a streaming query resumes from its checkpoint. Lowering min.insync.replicas or acks instead would "
        "write records that the loss of one more broker can take"
    )
