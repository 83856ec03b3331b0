"""Whether a partition refused records for too few in-sync replicas: the cluster asked, once a write timed out.

A leader refuses an acks=all write with NOT_ENOUGH_REPLICAS while the partition has fewer in-sync replicas than
the topic's min.insync.replicas (brokers down, or too far behind). librdkafka takes that for a passing state and
retries until the delivery timeout, and its delivery report then says only "Local: Message timed out": the
reason is gone. So a task whose records timed out (or met NOT_ENOUGH_REPLICAS itself, without retries) asks the
cluster, once, for the partition's in-sync replicas and the topic's min.insync.replicas (deliveries.Deliveries.error);
writing/failures.py words what it finds. The question is bounded, and no answer leaves the message as it was.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.options.sink import SinkOptions

log = logging.getLogger(__name__)

ASK_TIMEOUT_S = 5  # on top of the delivery timeout already waited
MIN_IN_SYNC = "min.insync.replicas"


@dataclass(frozen=True)
class Shortfall:
    """A partition with fewer in-sync replicas than its topic's min.insync.replicas asks."""

    partition: int
    in_sync: tuple[int, ...]  # node ids
    replicas: tuple[int, ...]
    required: int  # the topic's min.insync.replicas

    @property
    def missing(self) -> tuple[int, ...]:
        """The replicas out of sync: the nodes to bring back."""
        return tuple(node for node in self.replicas if node not in self.in_sync)


def waits_for_all(options: SinkOptions) -> bool:
    """Whether the sink's producers write with acks=all (librdkafka's default), the writes min.insync.replicas
    governs."""
    config = options.producer_config()
    acks = str(config.get("acks", config.get("request.required.acks", "all")))
    return acks in ("all", "-1")


def shortfall(options: SinkOptions, topic: str, partition: int | None) -> Shortfall | None:
    """The partition's (or, unknown, the topic's first) shortfall of in-sync replicas, or None: none, acks below
    all, or no answer within ASK_TIMEOUT_S."""
    if not waits_for_all(options):
        return None
    config: dict[str, Any] = options.client_config(log_level=0)  # a broker down is why it asks: no log of that
    try:
        admin = AdminClient(sign_in.ready(config))
        found = admin.list_topics(topic, timeout=ASK_TIMEOUT_S).topics.get(topic)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        described = admin.describe_configs([resource], request_timeout=ASK_TIMEOUT_S)[resource].result(ASK_TIMEOUT_S)
        required = int(described[MIN_IN_SYNC].value)
    except Exception as exc:  # the message keeps librdkafka's own reason then
        log.debug("could not ask the in-sync replicas of topic %s: %s", topic, exc)
        return None
    if found is None or found.error is not None:
        return None
    chosen = [partition] if partition is not None and partition >= 0 else sorted(found.partitions)
    for number in chosen:
        metadata = found.partitions.get(number)
        if metadata is not None and len(metadata.isrs) < required:
            return Shortfall(number, tuple(sorted(metadata.isrs)), tuple(sorted(metadata.replicas)), required)
    return None
