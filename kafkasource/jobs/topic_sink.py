"""The route job's [sink]: a Kafka topic written by kafkasource's sink, its options built and checked before Spark
starts.

The producer talks to the cluster of [kafka] with its settings (the consumer's own left out, as librdkafka would
warn about each), and [sink.kafka] adds or overrides producer settings such as transaction.timeout.ms. The route
job writes exactly once by default: it exists to move records from topic to topic, and a transactional write of
a batch costs little more than an idempotent one. Its transactional.id prefix defaults to the job's name, which
each job has to itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkasource.errors import OptionError
from kafkasource.jobs.tables import ConfigError, Section
from kafkasource.options.sink import parse_sink_options
from kafkasource.writing.dead_letters import producer_options

# each [sink] key as the sink's option it becomes
SINK_OPTION_NAMES = {
    "topic": "topic",
    "delivery_guarantee": "deliveryGuarantee",
    "transactional_id_prefix": "transactionalIdPrefix",
    "marker_topic": "markerTopic",
    "value_format": "valueFormat",  # json: a struct value written as JSON by the sink's native encoder
}


def topic_sink_options(sink: Section, source_options: Mapping[str, str], job_name: str) -> dict[str, str]:
    """kafkasource sink options for the route job's [sink] (secrets included: never print)."""
    sink.text("topic", required=True)
    given = {option: sink.text(key, default="") for key, option in SINK_OPTION_NAMES.items() if key in sink.data}
    guarantee = given.setdefault("deliveryGuarantee", "exactly-once")
    if guarantee == "exactly-once":
        given.setdefault("transactionalIdPrefix", job_name)
    overrides = Section(sink.path, "sink.kafka", sink.data.get("kafka", {}), None).options()
    options = {
        **producer_options(source_options),
        **{f"kafka.{name}": value for name, value in overrides.items()},
        **given,
    }
    try:
        parse_sink_options(options, streaming=True)
    except OptionError as exc:
        keys = ", ".join(f"{key} for {option}" for key, option in SINK_OPTION_NAMES.items())
        raise ConfigError(
            f"{sink.path}: [sink]: {exc} (the sink's options come from [sink]: {keys}; its kafka.* settings "
            "from [kafka] and [sink.kafka])"
        ) from None
    return options
